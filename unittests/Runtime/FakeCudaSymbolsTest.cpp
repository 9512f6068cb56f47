//===- FakeCudaSymbolsTest.cpp - the stand-in exports every entry point ---===//
//
// libzb_fake_cuda.so (FakeCuda.cpp) must export every entry point that
// libzbrt resolves from the CUDA driver, cuBLAS and NCCL, the optional ones
// too (CUDA graphs, cuBLAS's workspace and status strings), so that tests
// without a GPU run the same paths as a GPU. The names come from the lists
// libzbrt loads them with (ZBRT_CUDA_DRIVER_FUNCTIONS and
// ZBRT_CUDA_DRIVER_OPTIONAL_FUNCTIONS in Driver.h, ZBRT_CUBLAS_FUNCTIONS in
// Blas.h, ZBRT_NCCL_FUNCTIONS in NcclTransport.h): an entry point added
// there without a stand-in fails here, by name.
//
//===----------------------------------------------------------------------===//

#include "../../runtime/lib/cuda/Blas.h"
#include "../../runtime/lib/cuda/Driver.h"
#include "../../runtime/lib/cuda/NcclTransport.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <string>
#include <vector>

namespace {

std::vector<std::string> missingFromStandIn(std::vector<const char *> names) {
  void *library = dlopen(ZB_FAKE_CUDA_LIB, RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(library, nullptr) << dlerror();
  std::vector<std::string> missing;
  if (!library)
    return missing;
  for (const char *name : names)
    if (!dlsym(library, name))
      missing.push_back(name);
  dlclose(library);
  return missing;
}

#define ZB_SYMBOL_NAME(field, symbol, ...) symbol,

TEST(FakeCudaSymbols, DriverEntryPoints) {
  std::vector<const char *> names = {ZBRT_CUDA_DRIVER_FUNCTIONS(
      ZB_SYMBOL_NAME) ZBRT_CUDA_DRIVER_OPTIONAL_FUNCTIONS(ZB_SYMBOL_NAME)};
  EXPECT_GT(names.size(), 30u);
  EXPECT_EQ(missingFromStandIn(names), std::vector<std::string>());
}

TEST(FakeCudaSymbols, CublasEntryPoints) {
  std::vector<const char *> names = {ZBRT_CUBLAS_FUNCTIONS(ZB_SYMBOL_NAME)};
  EXPECT_EQ(names.size(), 10u);
  EXPECT_EQ(missingFromStandIn(names), std::vector<std::string>());
}

TEST(FakeCudaSymbols, NcclEntryPoints) {
  std::vector<const char *> names = {ZBRT_NCCL_FUNCTIONS(ZB_SYMBOL_NAME)};
  EXPECT_EQ(names.size(), 9u);
  EXPECT_EQ(missingFromStandIn(names), std::vector<std::string>());
}

#undef ZB_SYMBOL_NAME

} // namespace
