//===- EmulatedKernelTest.cpp - cuda-emu kernel arguments, checked --------===//
//
// A --target cuda-emu plan calls zbrt_cuda_emulated_kernel_argument before
// each emulated kernel launch for every memref argument (zb-gpu-emulate).
// Under the CUDA backend on the stand-in, an argument outside the stand-in's
// allocations ends the job naming the kernel and the argument, as a GPU's
// kernel could not read it (compute-sanitizer would report it); the
// runtime's own buffers (managed memory) pass.
//
//===----------------------------------------------------------------------===//

#include "zbrt/zbrt.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" void zbrt_cuda_emulated_kernel_argument(const char *kernel,
                                                   int64_t argument,
                                                   const void *pointer);

namespace {

void startBackendOnStandIn() {
  if (zbrt_cuda_started())
    return;
  for (const char *var : {"ZBRT_CUDA_DRIVER", "ZBRT_CUBLAS", "ZBRT_NCCL"})
    setenv(var, ZB_FAKE_CUDA_LIB, 1);
  zbrt_cuda_start(ZBRT_CUDA_DETERMINISTIC);
}

TEST(EmulatedKernelDeathTest, HostArgumentEndsTheJobNamingKernelAndArgument) {
  startBackendOnStandIn();
  float *buffer = static_cast<float *>(zbrt_host_buffer_alloc(1024));
  // The runtime's buffers, anywhere inside: fine.
  zbrt_cuda_emulated_kernel_argument("stage0_forward_kernel", 0, buffer);
  zbrt_cuda_emulated_kernel_argument("stage0_forward_kernel", 1, buffer + 255);
  // A host array (a rank program's global or stack): the job ends.
  static float hostTable[16];
  char expected[256];
  std::snprintf(expected, sizeof expected,
                "stand-in: kernel stage0_forward_kernel argument #2 \\(%p\\) "
                "is not device memory.*CUDA error in an emulated kernel "
                "launch \\(outside a pass\\): CUDA_ERROR_ILLEGAL_ADDRESS",
                static_cast<void *>(hostTable));
  EXPECT_EXIT(zbrt_cuda_emulated_kernel_argument("stage0_forward_kernel", 2,
                                                 hostTable),
              testing::ExitedWithCode(1), expected);
  zbrt_host_buffer_free(buffer);
}

} // namespace
