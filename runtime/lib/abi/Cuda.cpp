//===- Cuda.cpp - zb runtime: the ABI of the CUDA backend -----------------===//

#include "zbrt/zbrt.h"

#include "../Internal.h"
#include "../cuda/Device.h"
#include "../cuda/Driver.h"
#include "BackendSelection.h"

#include <vector>

using namespace zbrt;

extern "C" int32_t zbrt_cuda_available(char *msg, int64_t cap) {
  int32_t devices = 0;
  return cuda::probe(msg, cap, &devices);
}

extern "C" void zbrt_cuda_start(int32_t flags) {
  startCudaBackend(flags);
  // The driver is loaded: no second probe. Device memory for the pool where
  // nothing on the host reads it: no kernel runs on the host (cuda-emu) and
  // the host code only launches.
  useCudaMemory(
      /*poolOnDevice=*/(flags & ZBRT_CUDA_HOST_CODE_LAUNCHES_ONLY) &&
      !(flags & ZBRT_CUDA_HOST_KERNELS));
}

extern "C" void zbrt_set_channel_order(int32_t from, int32_t to,
                                       const int64_t *messages, int64_t count) {
  std::vector<ChannelMessage> order;
  for (int64_t i = 0; i < count; ++i)
    order.push_back(
        {static_cast<int32_t>(messages[2 * i]), messages[2 * i + 1]});
  // Pipeline ranks (zbrt_set_pipeline) to the world's.
  backend().setChannelOrder(zbrt::detail::toWorldRank(from),
                            zbrt::detail::toWorldRank(to),
                            order);
}

extern "C" void zbrt_cuda_synchronize(void) {
  backend().hostAccess("the optimizer");
}

extern "C" int32_t zbrt_cuda_started(void) { return cudaBackendStarted(); }

extern "C" void zbrt_cuda_emulated_kernel_argument(const char *kernel,
                                                   int64_t argument,
                                                   const void *pointer) {
  backend().checkEmulatedKernelArgument(kernel, argument, pointer);
}

extern "C" int32_t zbrt_allreduce_start(float *buf, int64_t n) {
  if (n < 0 || (!buf && n > 0))
    detail::fatalf("zbrt_allreduce_start: %lld floats at %p", (long long)n,
                   static_cast<void *>(buf));
  return backend().startGradientAllReduce(buf, n) ? 1 : 0;
}

extern "C" void zbrt_allreduce_finish(const char *what) {
  backend().finishGradientAllReduces(
      what ? what : "the data-parallel gradient all-reduce");
}

extern "C" void zbrt_cuda_step_variant(uint64_t key) {
  backend().setStepVariant(key);
}

extern "C" void zbrt_cuda_stats(ZbrtCudaStats *out) {
  if (!out)
    return;
  cudaBackendStats(*out);
  cuda::addCallCounts(*out);
}
