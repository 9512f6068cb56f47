//===- DeviceTrace.h - zb runtime: the trace's device timeline --*- C++ -*-===//
//
// Not installed. Under the CUDA backend the trace's action times are the
// GPU's, not the host's enqueueing (so pass times, the realized bubble and
// --profile measure the device): a timestamp kernel on the compute stream
// (TraceKernels.cu: the GPU's global nanosecond timer into a slot of a
// managed buffer) at the step's origin and where each action begins and
// ends, turned into microseconds since the origin after the step's
// synchronisation. Kernels, not timing events, so that a step replayed as
// a CUDA graph (StepGraph.h) records its times without a driver call per
// mark.
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_CUDA_DEVICETRACE_H
#define ZBRT_LIB_CUDA_DEVICETRACE_H

#include "Driver.h"
#include "StepGraph.h"

#include "../Backend.h"

#include <cstdint>
#include <vector>

namespace zbrt {
namespace cuda {

class DeviceTrace {
public:
  /// Loads the timestamp kernel; `launch` issues its launches (through the
  /// step graph).
  void start(StepGraph::LaunchFn launch);
  /// The step's origin.
  void beginStep();
  /// Where action `index` begins (end = false) or ends. A step with more
  /// marks than the buffer holds gets the rest at the next step (the buffer
  /// grows between steps, never inside one: a graph holds its address).
  void mark(size_t index, bool end);
  /// After the host waited for the compute stream: the times of the
  /// actions whose begin and end were both marked.
  std::vector<DeviceTime> resolve();

private:
  struct Mark {
    size_t index;
    bool end;
  };
  void stamp(int slot);

  StepGraph::LaunchFn launch;
  Handle kernel = nullptr;
  unsigned long long *slots = nullptr; ///< managed: [0] origin, then marks
  size_t capacity = 0;
  bool begun = false, overflow = false;
  std::vector<Mark> marks;
};

} // namespace cuda
} // namespace zbrt

#endif // ZBRT_LIB_CUDA_DEVICETRACE_H
