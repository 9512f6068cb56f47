//===- FakeNcclTest.cpp - the stand-in's ncclAllReduce --------------------===//
//
// The stand-in's ncclAllReduce (FakeNccl.cpp) must fail where NCCL on a GPU
// would fault or refuse, as its ncclSend does: a buffer that is not a live
// device allocation of the right size (counted as a bad pointer), another
// type or reduction than the float32 sum the runtime asks for. And it must
// order with its stream as a receive does: the result is stale (NaN) until
// the stream is waited for. Its stream must be ordered after the last write
// of its input on another stream (an event between them), or a GPU could
// read the input before the kernels that write it: the stand-in then sums
// NaN. One process, no MPI job: a one-rank communicator, whose sum is its
// own contribution.
//
//===----------------------------------------------------------------------===//

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cmath>
#include <cstring>
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

TEST(FakeNccl, AllReduceNeedsAnEventAfterItsInputsWrites) {
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
  auto memsetAsync =
      symbol<int (*)(unsigned long long, unsigned char, size_t, void *)>(
          lib, "cuMemsetD8Async");
  auto streamCreate = symbol<int (*)(void **, unsigned)>(lib, "cuStreamCreate");
  auto streamSynchronize = symbol<int (*)(void *)>(lib, "cuStreamSynchronize");
  auto streamWaitEvent =
      symbol<int (*)(void *, void *, unsigned)>(lib, "cuStreamWaitEvent");
  auto streamDestroy = symbol<int (*)(void *)>(lib, "cuStreamDestroy_v2");
  auto eventCreate = symbol<int (*)(void **, unsigned)>(lib, "cuEventCreate");
  auto eventRecord = symbol<int (*)(void *, void *)>(lib, "cuEventRecord");
  auto eventDestroy = symbol<int (*)(void *)>(lib, "cuEventDestroy_v2");
  if (::testing::Test::HasFailure())
    return;
  constexpr int kFloat32 = 7, kSum = 0;

  UniqueId id{};
  ASSERT_EQ(getUniqueId(&id), 0);
  void *comm = nullptr;
  ASSERT_EQ(commInitRank(&comm, 1, id, 0), 0);
  void *compute = nullptr, *side = nullptr, *event = nullptr;
  ASSERT_EQ(streamCreate(&compute, 1), 0);
  ASSERT_EQ(streamCreate(&side, 1), 0);
  ASSERT_EQ(eventCreate(&event, 0), 0);
  unsigned long long device = 0;
  ASSERT_EQ(memAllocManaged(&device, 4 * sizeof(float), 1), 0);
  auto *grad = reinterpret_cast<float *>(device);
  float expected = 0;
  std::memset(&expected, 0x3F, sizeof expected);

  // Written on the compute stream, all-reduced on the side stream with no
  // event between them: a GPU may read the buffer before the write.
  ASSERT_EQ(memsetAsync(device, 0x3F, 4 * sizeof(float), compute), 0);
  EXPECT_EQ(allReduce(grad, grad, 4, kFloat32, kSum, comm, side), 0);
  ASSERT_EQ(streamSynchronize(side), 0);
  for (int i = 0; i < 4; ++i)
    EXPECT_TRUE(std::isnan(grad[i])) << i;

  // An event recorded after the write, waited for by the side stream: the
  // sum is the written value.
  ASSERT_EQ(memsetAsync(device, 0x3F, 4 * sizeof(float), compute), 0);
  ASSERT_EQ(eventRecord(event, compute), 0);
  ASSERT_EQ(streamWaitEvent(side, event, 0), 0);
  EXPECT_EQ(allReduce(grad, grad, 4, kFloat32, kSum, comm, side), 0);
  ASSERT_EQ(streamSynchronize(side), 0);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(grad[i], expected) << i;

  // A write after the event is not covered by it; a host synchronisation
  // of the writer orders what the host enqueues next.
  ASSERT_EQ(memsetAsync(device, 0x3F, 4 * sizeof(float), compute), 0);
  EXPECT_EQ(allReduce(grad, grad, 4, kFloat32, kSum, comm, side), 0);
  ASSERT_EQ(streamSynchronize(side), 0);
  EXPECT_TRUE(std::isnan(grad[0]));
  ASSERT_EQ(memsetAsync(device, 0x3F, 4 * sizeof(float), compute), 0);
  ASSERT_EQ(streamSynchronize(compute), 0);
  EXPECT_EQ(allReduce(grad, grad, 4, kFloat32, kSum, comm, side), 0);
  ASSERT_EQ(streamSynchronize(side), 0);
  EXPECT_EQ(grad[0], expected);

  EXPECT_EQ(commDestroy(comm), 0);
  EXPECT_EQ(eventDestroy(event), 0);
  EXPECT_EQ(streamDestroy(side), 0);
  EXPECT_EQ(streamDestroy(compute), 0);
  EXPECT_EQ(memFree(device), 0);
  dlclose(lib);
}

} // namespace
