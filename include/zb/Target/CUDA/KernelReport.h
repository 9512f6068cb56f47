//===- KernelReport.h - the kernels of a CUDA rank program ------*- C++ -*-===//
//
// zb-compile --gpu-report: every kernel launch and runtime GEMM of a rank
// program of --target cuda (as gpu-kernel-outlining leaves it, before NVVM)
// with its launch size, bytes moved, floating-point operations and roofline
// time on a named GPU, attributed to the stage function (F, B or W pass of a
// stage) that launches it.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_TARGET_CUDA_KERNELREPORT_H
#define ZB_TARGET_CUDA_KERNELREPORT_H

#include "zb/Formats/GpuPeaks.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

#include <array>
#include <map>
#include <string>
#include <vector>

namespace zb {

/// The GPU of the roofline (time = max(bytes / bandwidth, flops / peak)):
/// its peak rates (zb/Formats/GpuPeaks.h, the cost model's too) and how the
/// compiled program uses it.
struct GpuSpec {
  GpuPeaks peaks = kH100Sxm;
  /// GEMMs run on TF32 tensor cores (zb-compile --allow-tf32).
  bool tf32Gemms = false;
  /// Seconds added to every kernel launch and GEMM call (zb-compile
  /// --gpu-launch-us): the host's cost of issuing it through the driver
  /// (cuLaunchKernel, cublasSgemm: a few microseconds) plus the device's gap
  /// between dependent kernels. A pass of many small kernels is bound by it,
  /// not by the roofline. Modelled as serial (issue, then run); a GPU's
  /// measured times (zb-run --profile) replace the whole estimate.
  double launchSeconds = 3e-6;
};

/// One kernel launch (or runtime GEMM) of a rank program.
struct GpuKernelLaunch {
  std::string function; ///< the enclosing function (e.g. stage0_forward)
  int64_t stage = -1;   ///< its zb.stage; -1 for the step function itself
  char pass = '-';      ///< 'F', 'B', 'W' (zb.kind), '-' for the step
  std::string kernel;   ///< kernel symbol, or "sgemm" for a runtime GEMM
  /// "elementwise" (a fused loop nest), "block-reduction" (a row per
  /// block, gpu.all_reduce: zb-gpu-map-reductions), "column-reduction"
  /// (columns x threads over the rows, a tree in workgroup memory),
  /// "serial-reduction" (a loop per thread), "gemm".
  std::string kind;
  int64_t grid[3] = {0, 0, 0};  ///< 0: not a constant
  int64_t block[3] = {0, 0, 0};
  double bytesRead = 0;    ///< bytes of the buffers the kernel loads from
  double bytesWritten = 0; ///< bytes of the buffers it stores to
  double flops = 0;        ///< float arithmetic and math operations
  int64_t launches = 1;    ///< static trip count of enclosing host loops
  /// Calls of the enclosing function per training step (microbatches the
  /// rank runs that pass for); 1 in the step function itself.
  int64_t callsPerStep = 1;
  /// A GEMM on bfloat16 operands (--precision bf16: zbrt_gemm_bf16_memref,
  /// cuBLAS on the BF16 tensor cores).
  bool bf16 = false;
  /// Roofline time of one launch in seconds: bf16 GEMMs at the BF16
  /// tensor-core peak, other GEMMs at the fp32 peak (TF32 with `tf32`),
  /// kernels at the fp32 peak.
  double rooflineSeconds(const GpuSpec &gpu, bool tf32 = false) const;
  /// Predicted time of one launch in seconds: the roofline plus the
  /// launch overhead (GpuSpec::launchSeconds).
  double seconds(const GpuSpec &gpu) const {
    return rooflineSeconds(gpu) + gpu.launchSeconds;
  }
};

/// Every gpu.launch_func and zbrt_sgemm_memref call of `module` (after
/// gpu-kernel-outlining), in program order per function. Bytes are whole
/// buffers as passed to the kernel (a loaded buffer counts as read, a
/// stored one as written, both when both); FLOPs count every float arith
/// and math operation once per execution, with scf.for trip counts from
/// constant bounds (a loop starting at the thread id counts upper bound /
/// step) times the launch's threads; a GEMM is 2 M N K FLOPs and reads A and
/// B and writes C. Functions count when a step function (zb.rank) calls
/// them (callsPerStep: its calls), or, with `everyStageFunction` (a module
/// of stage functions before zb-lower-pipeline, for zb-compile
/// --gpu-costs), every function with a zb.stage, once.
std::vector<GpuKernelLaunch>
collectGpuKernelLaunches(mlir::ModuleOp module,
                         bool everyStageFunction = false);

/// The report as JSON: {"gpu": {..., "launch_seconds"}, "ranks": [{"rank":
/// r, "kernels": [...], "passes": [{"stage", "pass", "kernels", "gemms",
/// "bytes", "flops", "roofline_ms", "time_ms"}], "step": {...}}]}, per pass
/// the sum over its launches (one microbatch), per step the step function's
/// calls of every stage function counted; "time_ms" = "roofline_ms" + one
/// launch overhead per kernel and GEMM.
llvm::json::Value
gpuReportJSON(const std::vector<std::vector<GpuKernelLaunch>> &ranks,
              const GpuSpec &gpu);

/// Per stage, the predicted seconds of one microbatch's F, B and W passes
/// (roofline plus launch overheads: the report's "passes" "time_ms"), for
/// the scheduler.
std::map<int64_t, std::array<double, 3>>
gpuStagePassSeconds(const std::vector<std::vector<GpuKernelLaunch>> &ranks,
                    const GpuSpec &gpu);

/// The report as a table: one line per kernel (time = roofline + launch
/// overhead), then per rank the F/B/W sums per stage (ms per microbatch)
/// and the step's totals.
std::string
gpuReportText(const std::vector<std::vector<GpuKernelLaunch>> &ranks,
              const GpuSpec &gpu);

} // namespace zb

#endif // ZB_TARGET_CUDA_KERNELREPORT_H
