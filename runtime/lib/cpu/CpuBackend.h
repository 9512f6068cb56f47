//===- CpuBackend.h - zb runtime: the CPU backend ---------------*- C++ -*-===//
//
// Not installed. The backend of zb-run --backend cpu (and of every entry
// point before zbrt_cuda_start): MPI messages from host memory
// (HostMessages.h), GEMMs through OpenBLAS (one thread per rank), the
// optimizer as host loops (HostOptimizer.h); host times in the trace.
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_CPU_CPUBACKEND_H
#define ZBRT_LIB_CPU_CPUBACKEND_H

#include "../Backend.h"

namespace zbrt {
namespace cpu {

/// The CPU backend (one per process).
Backend &cpuBackend();
/// One BLAS thread per rank: the ranks already share the cores.
void configureBlasThreads();

} // namespace cpu
} // namespace zbrt

#endif // ZBRT_LIB_CPU_CPUBACKEND_H
