//===- DeviceTrace.h - zb runtime: the trace's device timeline --*- C++ -*-===//
//
// Not installed. Under the CUDA backend the trace's action times are the
// GPU's, not the host's enqueueing (so pass times, the realized bubble and
// --profile measure the device): an event on the compute stream at the
// step's origin and where each action begins and ends, turned into
// microseconds since the origin after the step's synchronisation.
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_CUDA_DEVICETRACE_H
#define ZBRT_LIB_CUDA_DEVICETRACE_H

#include "Driver.h"

#include "../Backend.h"

#include <vector>

namespace zbrt {
namespace cuda {

class DeviceTrace {
public:
  /// Records the step's origin on `stream`.
  void beginStep(Handle stream);
  /// Records where action `index` begins (end = false) or ends.
  void mark(size_t index, bool end, Handle stream);
  /// After the host waited for `stream`: the times of the actions whose
  /// begin and end were both marked.
  std::vector<DeviceTime> resolve();

private:
  struct Mark {
    size_t index;
    bool end;
    Handle event;
  };
  Handle timingEvent();
  Handle origin = nullptr;
  std::vector<Mark> marks;
  std::vector<Handle> freeEvents;
};

} // namespace cuda
} // namespace zbrt

#endif // ZBRT_LIB_CUDA_DEVICETRACE_H
