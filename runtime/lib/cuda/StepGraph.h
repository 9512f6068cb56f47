//===- StepGraph.h - zb runtime: a step as CUDA graphs ----------*- C++ -*-===//
//
// Not installed. A schedule is static: every step a rank program launches
// the same kernels and GEMMs with the same arguments on its compute stream.
// So the CUDA backend records one step with stream capture and replays it
// with cuGraphLaunch (issue 30, "CUDA graphs"): the host code still runs and
// asks for every launch, but a replayed step costs one driver call per
// graph instead of one per kernel.
//
// Segments. Work the graph cannot hold splits the step into segments, one
// graph each: a message (its transport waits on the host or enqueues on
// other streams), a host wait, an allocation, the optimizer (its scalars
// change every step), and any driver call on the compute stream that is not
// a kernel launch or a GEMM. At such a boundary the segment so far is
// launched and the work then runs eagerly, in the same order on the stream
// as without graphs. Driver calls per replayed step then grow with the
// boundaries (messages), not with the kernels.
//
// The tape. While capturing, every launch and GEMM is also written down
// with its arguments (kernel parameter bytes through cuFuncGetParamInfo's
// layout; GEMM operands, sizes and scalars), and every boundary. While
// replaying, each launch or GEMM the host code asks for is compared with the
// tape instead of being issued. A difference (a buffer moved, a shape or a
// scalar changed, a boundary moved) is a divergence: the part of the segment
// that matched is issued eagerly from the tape, the rest of the step runs
// eagerly, and the next step is captured again. So a replay never runs
// anything but what the host code asked for; after three divergences the
// graphs stay off for the run (the launches change from step to step).
//
// Modes per step: the first step runs eagerly (it loads modules and sizes
// the memory pools), the second is captured (its graphs run at each
// boundary, so its results are those of the step), the others are replayed.
// Per variant: steps whose buffers differ by design (zb-run's two sets of
// gradient buffers under post-validation) are told apart by a key
// (zbrt_cuda_step_variant) and each has its own recording.
// Off with --cuda-graphs off (ZBRT_CUDA_NO_GRAPHS), with kernels emulated on
// the host (a cuda-emu plan), when MLIR's host code may read device memory
// (it needs the work done when it runs), or when the driver lacks
// cuFuncGetParamInfo or the graph API; the reason is in the report.
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_CUDA_STEPGRAPH_H
#define ZBRT_LIB_CUDA_STEPGRAPH_H

#include "Driver.h"

#include "../Backend.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace zbrt {
namespace cuda {

/// A kernel launch as the driver takes it (cuLaunchKernel's arguments;
/// params[i] points at parameter i's value).
struct KernelLaunch {
  Handle function;
  unsigned grid[3], block[3];
  unsigned sharedBytes;
  void **params;
};

/// A GEMM of the CUDA backend: one product, or `batch` products at constant
/// element strides (sgemmStridedBatched) when batched. With bf16 the
/// operands are bfloat16 (a GemmBf16: its pointers held, as addresses, in
/// gemm's a, b, c; Backend::gemmBf16).
struct GemmCall {
  Gemm gemm;
  bool batched = false;
  int64_t strideA = 0, strideB = 0, strideC = 0, batch = 1;
  bool bf16 = false;
};

class StepGraph {
public:
  /// How the graph issues work eagerly (a launch; a GEMM) when a replay
  /// diverges.
  using LaunchFn = std::function<void(const KernelLaunch &)>;
  using GemmFn = std::function<void(const GemmCall &)>;

  /// Graphs on `stream` with the given eager paths, or off with `whyOff`
  /// (non-empty) as the report's reason.
  void start(Handle stream, const std::string &whyOff, LaunchFn launch,
             GemmFn gemm);
  /// "on", or "off: <reason>" (zb-run's report).
  const std::string &state() const { return stateText; }

  /// The next step's variant: a step whose buffers differ from another's
  /// (zb-run alternates two gradient buffer sets under post-validation)
  /// gets a recording of its own, keyed by `key` (at most kMaxVariants).
  void setVariant(uint64_t key) { nextKey = key; }
  static constexpr size_t kMaxVariants = 4;
  /// A step begins (Backend::traceBeginStep) or ends (Backend::stepEnd,
  /// before the host waits for it).
  void beginStep();
  void endStep();

  /// Whether this launch (GEMM) is part of a replayed graph: the caller must
  /// not issue it. False while capturing (the caller issues it and the
  /// driver captures it) and in eager steps.
  bool takeKernel(const KernelLaunch &k);
  bool takeGemm(const GemmCall &g);
  /// Before work the graph cannot hold (see the file comment): the segment
  /// so far is launched.
  void boundary();

  /// Steps captured, steps replayed, divergences (zb-run's report).
  int64_t captures = 0, replays = 0, divergences = 0;

private:
  enum class Mode { Off, Eager, Capture, Replay };
  struct Entry {
    enum Kind : uint8_t { Kernel, Gemm, Boundary } kind;
    KernelLaunch launch{};              // Kernel (params unused)
    std::vector<unsigned char> bytes;   // Kernel: the parameter values
    GemmCall gemm;                      // Gemm
    bool final = false;                 // Boundary: the step's end
  };
  /// Offsets and sizes of `function`'s parameters (cuFuncGetParamInfo),
  /// queried once; false (graphs off) when the driver cannot tell.
  const std::vector<std::pair<size_t, size_t>> *layout(Handle function);
  /// Whether `k` is the launch `e` recorded (`params`: k's layout).
  bool matches(const Entry &e, const KernelLaunch &k,
               const std::vector<std::pair<size_t, size_t>> &params);
  void record(Entry e);
  /// Ends the current segment: while capturing, its graph is instantiated
  /// and launched; while replaying, the tape must have a boundary here.
  void segmentEnd(bool final);
  /// A replay differs from the tape at `cursor`: issue the segment's
  /// matched part, run the rest of the step eagerly, capture again.
  void diverge();
  void issue(const Entry &e);

  void turnOff(const std::string &why);

  /// The recording of one variant: its next step's mode, the tape, one
  /// instantiated graph per segment (null: an empty segment).
  struct Variant {
    Mode next = Mode::Eager;
    std::vector<Entry> tape;
    std::vector<Handle> segments;
  };

  /// Destroys `variant`'s graphs and tape (this step's when null).
  void dropGraphs(Variant *variant = nullptr);

  Handle stream = nullptr;
  Mode mode = Mode::Off;
  std::map<uint64_t, Variant> variants;
  uint64_t nextKey = 0;
  Variant *v = nullptr; ///< this step's
  bool capturing = false;
  std::string stateText = "off";
  LaunchFn launchNow;
  GemmFn gemmNow;
  std::unordered_map<Handle, std::vector<std::pair<size_t, size_t>>> layouts;
  size_t cursor = 0, segmentStart = 0, segment = 0;
};

} // namespace cuda
} // namespace zbrt

#endif // ZBRT_LIB_CUDA_STEPGRAPH_H
