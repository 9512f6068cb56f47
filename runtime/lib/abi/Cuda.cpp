//===- Cuda.cpp - zb runtime: the ABI of the CUDA backend -----------------===//

#include "zbrt/zbrt.h"

#include "BackendSelection.h"
#include "../cuda/Driver.h"
#include "Memory.h"

using namespace zbrt;

extern "C" int32_t zbrt_cuda_available(char *msg, int64_t cap) {
  int32_t devices = 0;
  return cuda::probe(msg, cap, &devices);
}

extern "C" void zbrt_cuda_start(int32_t flags) {
  startCudaBackend(flags);
  detail::useCudaMemory(); // the driver is loaded: no second probe
}

extern "C" void zbrt_cuda_synchronize(void) {
  backend().hostAccess("the optimizer");
}

extern "C" int32_t zbrt_cuda_started(void) { return cudaBackendStarted(); }

extern "C" void zbrt_cuda_stats(ZbrtCudaStats *out) {
  if (out)
    cudaBackendStats(*out);
}
