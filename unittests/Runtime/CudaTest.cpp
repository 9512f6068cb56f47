//===- CudaTest.cpp - zbrt_cuda_available on a machine without a GPU ------===//

#include "zbrt/zbrt.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {

TEST(Cuda, UnavailableWithMessage) {
  // The development machines have no GPU (at most the toolkit's stub
  // driver): the probe must refuse cleanly, never crash.
  char msg[256] = {0};
  int32_t rc = zbrt_cuda_available(msg, sizeof(msg));
  if (rc == 0)
    GTEST_SKIP() << "a CUDA device is present: " << msg;
  std::string text = msg;
  EXPECT_TRUE(text.find("no CUDA driver") != std::string::npos ||
              text.find("no CUDA device") != std::string::npos ||
              text.find("no usable CUDA driver") != std::string::npos)
      << text;
}

TEST(Cuda, StubDriverIsRefused) {
  // The toolkit ships a stub libcuda.so whose cuInit fails: exercises the
  // dlsym + cuInit path.
  const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!std::ifstream(stub))
    GTEST_SKIP() << "no CUDA stub library at " << stub;
  setenv("ZBRT_CUDA_DRIVER", stub, 1);
  char msg[256] = {0};
  int32_t rc = zbrt_cuda_available(msg, sizeof(msg));
  unsetenv("ZBRT_CUDA_DRIVER");
  EXPECT_NE(rc, 0);
  EXPECT_NE(std::string(msg).find("CUDA"), std::string::npos) << msg;
}

TEST(Cuda, MessageIsTruncatedToCapacity) {
  setenv("ZBRT_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  char msg[16];
  std::fill(msg, msg + sizeof(msg), 'x');
  EXPECT_NE(zbrt_cuda_available(msg, 8), 0);
  unsetenv("ZBRT_CUDA_DRIVER");
  EXPECT_EQ(std::string(msg), "no CUDA");
  EXPECT_EQ(msg[8], 'x');
}

} // namespace
