//===- FakeNcclTest.cpp - the stand-in's ncclAllReduce --------------------===//
//
// The stand-in's ncclAllReduce (FakeNccl.cpp) must fail where NCCL on a GPU
// would fault or refuse, as its ncclSend does: a buffer that is not a live
// device allocation of the right size (counted as a bad pointer), another
// type or reduction than the float32 sum the runtime asks for. And it must
// order with its stream as a receive does: the result is stale (NaN) until
// the stream is waited for. One process, no MPI job: a one-rank
// communicator, whose sum is its own contribution.
//
//===----------------------------------------------------------------------===//

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cmath>
#include <vector>

namespace {

struct UniqueId {
  char internal[128];
};

template <typename F> F symbol(void *library, const char *name) {
  void *f = dlsym(library, name);
  EXPECT_NE(f, nullptr) << name;
  return reinterpret_cast<F>(f);
}

TEST(FakeNccl, AllReduceChecksPointersAndOrdersWithItsStream) {
  void *lib = dlopen(ZB_FAKE_CUDA_LIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto getUniqueId = symbol<int (*)(UniqueId *)>(lib, "ncclGetUniqueId");
  auto commInitRank =
      symbol<int (*)(void **, int, UniqueId, int)>(lib, "ncclCommInitRank");
  auto allReduce =
      symbol<int (*)(const void *, void *, size_t, int, int, void *, void *)>(
          lib, "ncclAllReduce");
  auto commDestroy = symbol<int (*)(void *)>(lib, "ncclCommDestroy");
  auto memAllocManaged =
      symbol<int (*)(unsigned long long *, size_t, unsigned)>(
          lib, "cuMemAllocManaged");
  auto memFree = symbol<int (*)(unsigned long long)>(lib, "cuMemFree_v2");
  auto streamCreate = symbol<int (*)(void **, unsigned)>(lib, "cuStreamCreate");
  auto streamSynchronize = symbol<int (*)(void *)>(lib, "cuStreamSynchronize");
  auto streamDestroy = symbol<int (*)(void *)>(lib, "cuStreamDestroy_v2");
  auto badPointers = symbol<long (*)()>(lib, "zb_fake_cuda_bad_pointers");
  if (::testing::Test::HasFailure())
    return;
  constexpr int kFloat32 = 7, kInt8 = 0, kSum = 0, kProd = 1;

  UniqueId id{};
  ASSERT_EQ(getUniqueId(&id), 0);
  void *comm = nullptr;
  ASSERT_EQ(commInitRank(&comm, 1, id, 0), 0);
  void *stream = nullptr;
  ASSERT_EQ(streamCreate(&stream, 1), 0);
  unsigned long long device = 0;
  ASSERT_EQ(memAllocManaged(&device, 8 * sizeof(float), 1), 0);
  // Managed memory: the host may write it (no kernel runs).
  auto *grad = reinterpret_cast<float *>(device);
  for (int i = 0; i < 8; ++i)
    grad[i] = (float)i + 0.5f;

  // In place, on device memory: stale until its stream is waited for.
  EXPECT_EQ(allReduce(grad, grad, 8, kFloat32, kSum, comm, stream), 0);
  EXPECT_TRUE(std::isnan(grad[0]));
  EXPECT_TRUE(std::isnan(grad[7]));
  ASSERT_EQ(streamSynchronize(stream), 0);
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(grad[i], (float)i + 0.5f) << i;

  // A host buffer, as the stand-in's ncclSend refuses one (a GPU faults).
  const long before = badPointers();
  std::vector<float> host(8, 1.0f);
  EXPECT_EQ(
      allReduce(host.data(), host.data(), 8, kFloat32, kSum, comm, stream),
      4); // ncclInvalidArgument
  EXPECT_EQ(badPointers(), before + 1);
  EXPECT_EQ(allReduce(grad, host.data(), 8, kFloat32, kSum, comm, stream), 4);
  EXPECT_EQ(badPointers(), before + 2);
  // More floats than the allocation holds.
  EXPECT_EQ(allReduce(grad, grad, 9, kFloat32, kSum, comm, stream), 4);
  EXPECT_EQ(badPointers(), before + 3);
  // Only the float32 sum, on a stream and a communicator.
  EXPECT_EQ(allReduce(grad, grad, 8, kInt8, kSum, comm, stream), 4);
  EXPECT_EQ(allReduce(grad, grad, 8, kFloat32, kProd, comm, stream), 4);
  EXPECT_EQ(allReduce(grad, grad, 8, kFloat32, kSum, nullptr, stream), 4);
  EXPECT_EQ(allReduce(grad, grad, 8, kFloat32, kSum, comm, nullptr), 4);
  for (int i = 0; i < 8; ++i) // the refused calls wrote nothing
    EXPECT_EQ(grad[i], (float)i + 0.5f) << i;

  EXPECT_EQ(commDestroy(comm), 0);
  EXPECT_EQ(streamDestroy(stream), 0);
  EXPECT_EQ(memFree(device), 0);
  dlclose(lib);
}

} // namespace
