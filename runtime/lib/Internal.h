//===- Internal.h - zb runtime: shared internal helpers ---------*- C++ -*-===//
//
// Not installed; used by the runtime's own sources only.
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_INTERNAL_H
#define ZBRT_LIB_INTERNAL_H

#include <cstdint>

namespace zbrt {
namespace detail {

/// printf-style zbrt_fatal: prints "zb-run: rank R: <message>" and aborts
/// the job (MPI_Abort when MPI is up, exit(1) otherwise).
[[noreturn]] void fatalf(const char *format, ...)
    __attribute__((format(printf, 1, 2)));

/// zbrt_use_cuda_memory without probing the driver again (the CUDA backend
/// has loaded it).
void useCudaMemory();
/// Describes a message tag built by zbrt_tag(): "tag 5 (gradient from
/// stage 2, microbatch 0)".
void describeTag(int32_t tag, char *out, unsigned long cap);
/// The communication watchdog's limit in seconds (0: wait forever).
double commTimeoutSeconds();
/// Replaces the host times of trace event `index` of the current step by
/// device times (microseconds since the step's origin; CUDA backend).
void traceSetDeviceTimes(unsigned long index, double beginUs, double endUs);
/// Names the innermost scheduled action in progress on this rank ("F of
/// stage 2, microbatch 3") or "outside a pass", for error messages.
void currentAction(char *out, unsigned long cap);

} // namespace detail
} // namespace zbrt

#endif // ZBRT_LIB_INTERNAL_H
