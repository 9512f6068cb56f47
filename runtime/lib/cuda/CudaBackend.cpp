//===- CudaBackend.cpp - zb runtime: the CUDA backend ---------------------===//
//
// One device per rank (the local rank among the ranks of its node, modulo
// the visible devices), and on it the compute stream: every kernel MLIR's
// host code launches (its mgpuStreamCreate returns this stream), every
// cuBLAS GEMM, every optimizer kernel, and the events that order the
// transports' messages. A peer on this rank's device (ranks share a GPU
// when there are fewer GPUs than ranks) exchanges messages through MPI and
// pinned host staging (HostStagedTransport.h: NCCL refuses two ranks of a
// communicator on one device), a peer on another device through NCCL;
// ZBRT_SAME_DEVICE_TRANSPORT=nccl puts the former on NCCL too (which a real
// NCCL and the stand-in refuse: a check of the stand-in). Without NCCL, or
// to a peer without a channel, messages go through MPI on the host after a
// synchronisation (memory is managed). With D pipelines, the gradients are
// summed across the data-parallel group by NCCL on a stream of its own
// (NcclAllReduce.h), or, where members of the group share a device, over
// MPI on the host by the runner.
//
//===----------------------------------------------------------------------===//

#include "CudaBackend.h"

#include "HostStagedTransport.h"
#include "NcclTransport.h"

#include "../Internal.h"
#include "../cpu/HostMessages.h"
#include "../cpu/HostOptimizer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <mpi.h>

using namespace zbrt;
using namespace zbrt::cuda;
using detail::fatalf;

namespace {

/// ZBRT_SAME_DEVICE_TRANSPORT: whether peers on this rank's device go
/// through NCCL ("nccl") or the host-staged transport ("host-staged", the
/// default).
bool sameDeviceOverNccl() {
  const char *v = std::getenv("ZBRT_SAME_DEVICE_TRANSPORT");
  if (!v || !*v || std::strcmp(v, "host-staged") == 0)
    return false;
  if (std::strcmp(v, "nccl") != 0)
    fatalf("ZBRT_SAME_DEVICE_TRANSPORT='%s': expected host-staged or nccl", v);
  return true;
}

/// Every world rank's node (the world rank of its node's first rank) and
/// device, two ints per rank, gathered over MPI (collective; empty on one
/// rank).
std::vector<int> placements(int device) {
  const int rank = detail::rank(), size = detail::worldSize();
  if (size < 2)
    return {};
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                      &node);
  int leader = rank;
  MPI_Bcast(&leader, 1, MPI_INT, 0, node);
  MPI_Comm_free(&node);
  int mine[2] = {leader, device};
  std::vector<int> all(2 * (size_t)size);
  MPI_Allgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, MPI_COMM_WORLD);
  return all;
}

/// The world ranks of this rank's pipeline on this rank's node and device
/// (the peers it may exchange messages with), from placements().
std::vector<int32_t> sameDevicePeers(const std::vector<int> &all) {
  std::vector<int32_t> peers;
  if (all.empty())
    return peers;
  const int rank = detail::rank(), base = detail::pipelineBase();
  for (int r = base; r < base + detail::pipelineSize(); ++r)
    if (r != rank && all[2 * r] == all[2 * rank] &&
        all[2 * r + 1] == all[2 * rank + 1])
      peers.push_back(r);
  return peers;
}

} // namespace

CudaBackend::CudaBackend(int32_t flags) {
  char why[256];
  int32_t devices = 0;
  if (probe(why, sizeof why, &devices) != 0)
    fatalf("the CUDA backend cannot start: %s", why);
  device.flags = flags;
  int localRank = detail::localRank();
  setDevice(localRank % devices);
  const Driver &d = driver();
  device.stats.device = d.device;
  device.stats.localRank = localRank;
  check(d.cuStreamCreate(&device.compute, kStreamNonBlocking),
        "cuStreamCreate");
  blas.start(device.compute, flags);
  startTransports();
  graph.start(
      device.compute, graphsOffReason(),
      [this](const KernelLaunch &k) { launchNow(k); },
      [this](const GemmCall &g) { gemmNow(g); });
  trace.start([this](const KernelLaunch &k) {
    if (!graph.takeKernel(k))
      launchNow(k);
  });
  std::snprintf(device.stats.graphs, sizeof device.stats.graphs, "%s",
                graph.state().c_str());
}

std::string CudaBackend::graphsOffReason() const {
  if (device.flags & ZBRT_CUDA_NO_GRAPHS)
    return "--cuda-graphs off";
  if (device.hostKernels())
    return "the kernels run on the host (a cuda-emu plan)";
  if (!(device.flags & ZBRT_CUDA_HOST_CODE_LAUNCHES_ONLY))
    return "the host code may read device memory during a step (plan.json "
           "host_reads_device_memory)";
  return "";
}

void CudaBackend::launchNow(const KernelLaunch &k) {
  check(driver().cuLaunchKernel(k.function, k.grid[0], k.grid[1], k.grid[2],
                                k.block[0], k.block[1], k.block[2],
                                k.sharedBytes, device.compute, k.params,
                                nullptr),
        "cuLaunchKernel");
}

void CudaBackend::launchKernel(void *function, const unsigned grid[3],
                               const unsigned block[3], unsigned sharedBytes,
                               void **params) {
  KernelLaunch k{function,
                 {grid[0], grid[1], grid[2]},
                 {block[0], block[1], block[2]},
                 sharedBytes,
                 params};
  if (!graph.takeKernel(k))
    launchNow(k);
}

void CudaBackend::gemmNow(const GemmCall &g) {
  if (g.bf16) {
    const GemmBf16 b = g.gemm.as<uint16_t>();
    if (g.batched)
      blas.gemmBf16StridedBatched(b, g.strideA, g.strideB, g.strideC, g.batch);
    else
      blas.gemmBf16(b);
    return;
  }
  if (g.batched)
    blas.sgemmStridedBatched(g.gemm, g.strideA, g.strideB, g.strideC,
                             g.batch);
  else
    blas.sgemm(g.gemm);
}

void CudaBackend::startTransports() {
  // Collective: every rank asks for the same transports in the same order.
  bool overNccl = sameDeviceOverNccl();
  const std::vector<int> placement = placements(device.stats.device);
  std::vector<int32_t> staged = sameDevicePeers(placement);
  if (overNccl)
    staged.clear();
  std::string ncclWhy;
  if (std::unique_ptr<Transport> nccl =
          createNcclTransport(device, staged, ncclWhy))
    transports.push_back(std::move(nccl));
  else if ((int)staged.size() + 1 < detail::pipelineSize())
    std::fprintf(stderr,
                 "zb-run: rank %d: no NCCL (%s): messages to other devices "
                 "go through MPI on the host\n",
                 detail::rank(), ncclWhy.c_str());
  if (std::unique_ptr<Transport> hostStaged =
          createHostStagedTransport(device, staged))
    transports.push_back(std::move(hostStaged));
  // D pipelines: the data-parallel group's communicator (collective).
  allReduce = GroupAllReduce::create(device, placement, overNccl);
}

bool CudaBackend::idle(bool computeOnly) {
  CUresult r = driver().cuStreamQuery(device.compute);
  if (r == kNotReady)
    return false;
  check(r, "cuStreamQuery");
  if (computeOnly)
    return true;
  for (auto &t : transports)
    if (!t->idle())
      return false;
  return !allReduce || allReduce->idle();
}

void CudaBackend::synchronize(const char *what, bool computeOnly) {
  graph.boundary();
  ++device.stats.hostSynchronizations;
  const double timeout = detail::commTimeoutSeconds();
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    for (auto &t : transports)
      t->pollErrors();
    if (allReduce)
      allReduce->pollErrors();
    if (idle(computeOnly))
      break;
    double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (timeout > 0 && waited > timeout) {
      std::string pending;
      for (auto &t : transports)
        if (pending.empty())
          pending = t->pendingReceive();
      if (pending.empty() && allReduce)
        pending = allReduce->pending();
      std::string message = std::string(what) + ": " +
                            (pending.empty() ? "the GPU's work" : pending);
      for (auto &t : transports)
        t->abort();
      if (allReduce)
        allReduce->abort();
      fatalf("waited %.0f s for %s: the peer is stopped, dead or deadlocked "
             "(zb-run --comm-timeout %g)",
             waited, message.c_str(), timeout);
    }
    std::this_thread::sleep_for(
        std::chrono::microseconds(waited < 1e-3 ? 1 : 50));
  }
  // Receives the compute stream waited for have arrived.
  for (auto &t : transports)
    t->receivesArrived();
}

MessageWork CudaBackend::send(const void *buf, int64_t bytes, int32_t peer,
                              int32_t tag) {
  graph.boundary();
  for (auto &t : transports)
    if (t->send(buf, bytes, peer, tag))
      return MessageWork{};
  // No device channel: the host copies the (managed) buffer.
  synchronize("a send over MPI", /*computeOnly=*/true);
  return cpu::hostMessages().send(buf, bytes, peer, tag);
}

MessageWork CudaBackend::recv(void *buf, int64_t bytes, int32_t peer,
                              int32_t tag) {
  graph.boundary();
  for (auto &t : transports)
    if (t->recv(buf, bytes, peer, tag)) {
      // Kernels emulated on the host (a cuda-emu plan) read it next.
      if (device.hostKernels())
        synchronize("a receive", /*computeOnly=*/true);
      return MessageWork{};
    }
  // No device channel: earlier kernels may still read the buffer.
  synchronize("a receive over MPI", /*computeOnly=*/true);
  return cpu::hostMessages().recv(buf, bytes, peer, tag);
}

void CudaBackend::setChannelOrder(int32_t from, int32_t to,
                                  const std::vector<ChannelMessage> &order) {
  for (auto &t : transports)
    t->setChannelOrder(from, to, order);
}

void CudaBackend::waitRequest(void *mpiRequest, const char *what) {
  graph.boundary();
  // A peer may need our messages before it completes this request.
  for (auto &t : transports)
    t->postSends();
  cpu::hostMessages().wait(mpiRequest, what);
}

void CudaBackend::gemm(const GemmCall &g) {
  ++device.stats.gemms;
  if (!graph.takeGemm(g))
    gemmNow(g);
  // Kernels emulated on the host (a cuda-emu plan) read C on the host next.
  if (device.hostKernels())
    synchronize("a GEMM", /*computeOnly=*/true);
}

void CudaBackend::sgemm(const Gemm &g) {
  // cuBLAS on the compute stream (K == 0 scales C by beta there too).
  GemmCall c;
  c.gemm = g;
  c.gemm.lda = std::max<int64_t>(g.lda, 1);
  c.gemm.ldb = std::max<int64_t>(g.ldb, 1);
  gemm(c);
}

bool CudaBackend::sgemmStridedBatched(const Gemm &g, int64_t strideA,
                                      int64_t strideB, int64_t strideC,
                                      int64_t batch) {
  gemm(GemmCall{g, true, strideA, strideB, strideC, batch});
  return true;
}

void CudaBackend::gemmBf16(const GemmBf16 &g) {
  // As sgemm, with cublasGemmEx.
  GemmCall c;
  c.gemm = g.as<float>();
  c.gemm.lda = std::max<int64_t>(g.lda, 1);
  c.gemm.ldb = std::max<int64_t>(g.ldb, 1);
  c.bf16 = true;
  gemm(c);
}

bool CudaBackend::gemmBf16StridedBatched(const GemmBf16 &g, int64_t strideA,
                                         int64_t strideB, int64_t strideC,
                                         int64_t batch) {
  gemm(GemmCall{g.as<float>(), true, strideA, strideB, strideC, batch,
                /*bf16=*/true});
  return true;
}

void CudaBackend::sgd(float *param, const float *grad, int64_t n, float scale,
                      bool rollback) {
  if (!deviceOptimizer())
    return cpu::sgd(param, grad, n, scale, rollback);
  graph.boundary(); // its scalars change every step
  optimizer.sgd(device.compute, param, grad, n, scale, rollback);
}

void CudaBackend::adamw(float *param, const float *grad, float *m, float *v,
                        int64_t n, const math::AdamWScalars &scalars,
                        bool rollback) {
  if (!deviceOptimizer())
    return cpu::adamw(param, grad, m, v, n, scalars, rollback);
  graph.boundary(); // its scalars change every step
  optimizer.adamw(device.compute, param, grad, m, v, n, scalars, rollback);
}

void CudaBackend::sgdMany(const ZbrtOptimizerTensor *tensors, int64_t count,
                          float scale, bool rollback) {
  if (!deviceOptimizer())
    return Backend::sgdMany(tensors, count, scale, rollback);
  graph.boundary(); // its scalars change every step
  optimizer.sgdMany(device.compute, tensors, count, scale, rollback);
}

void CudaBackend::adamwMany(const ZbrtOptimizerTensor *tensors, int64_t count,
                            const math::AdamWScalars &scalars, bool rollback) {
  if (!deviceOptimizer())
    return Backend::adamwMany(tensors, count, scalars, rollback);
  graph.boundary(); // its scalars change every step
  optimizer.adamwMany(device.compute, tensors, count, scalars, rollback);
}

double CudaBackend::sumSquares(const float *x, int64_t n, int32_t *nonFinite) {
  if (!deviceOptimizer())
    return cpu::sumSquares(x, n, nonFinite);
  graph.boundary();
  unsigned blocks = optimizer.launchSumSquares(device.compute, x, n);
  synchronize("a gradient norm", /*computeOnly=*/true);
  return optimizer.readSumSquares(blocks, nonFinite);
}

void CudaBackend::sumSquaresMany(const float *const *xs, const int64_t *ns,
                                 int64_t count, double *sums,
                                 int32_t *nonFinite) {
  if (!deviceOptimizer())
    return cpu::sumSquaresMany(xs, ns, count, sums, nonFinite);
  graph.boundary();
  // Every kernel first, then one wait for all the results.
  optimizer.launchSumSquaresMany(device.compute, xs, ns, count);
  synchronize("the gradient norms", /*computeOnly=*/true);
  optimizer.readSumSquaresMany(sums, nonFinite);
}

bool CudaBackend::startGradientAllReduce(float *buf, int64_t n) {
  if (!allReduce || !allReduce->usable())
    return false;
  // Called inside the step (zb-run's zbrt_gradients_ready hook, right after
  // the bucket's last W) or after zbrt_step_end (a no-op there). Inside, the
  // captured segment so far ends here and is launched, and a replay
  // launches its segment here: the all-reduce is enqueued eagerly behind
  // it, never captured (the host code announces the bucket every step, so
  // a replayed step enqueues it afresh; a captured NCCL call would need
  // NCCL >= 2.9 and the stream wait of a capturing stream).
  graph.boundary();
  allReduce->start(buf, n);
  return true;
}

void CudaBackend::finishGradientAllReduces(const char *what) {
  if (!allReduce || !allReduce->finish())
    return;
  // Kernels emulated on the host (a cuda-emu plan) and the host's optimizer
  // loops read the sums next.
  if (device.hostKernels())
    synchronize(what, /*computeOnly=*/true);
}

void CudaBackend::traceBeginStep() {
  graph.beginStep();
  // The origin's mark is the step graph's first launch.
  trace.beginStep();
}

void CudaBackend::traceMark(size_t index, bool end) { trace.mark(index, end); }

std::vector<DeviceTime> CudaBackend::stepEnd() {
  graph.endStep();
  device.stats.graphCaptures = graph.captures;
  device.stats.graphReplays = graph.replays;
  device.stats.graphDivergences = graph.divergences;
  std::snprintf(device.stats.graphs, sizeof device.stats.graphs, "%s",
                graph.state().c_str());
  synchronize("the end of the step", /*computeOnly=*/false);
  device.reapStaging();
  std::vector<DeviceTime> times = trace.resolve();
  for (auto &t : transports)
    t->stepEnd();
  cpu::hostMessages().completeSends();
  return times;
}

void CudaBackend::finalize() {
  synchronize("the end of the job", /*computeOnly=*/false);
  device.reapStaging();
  for (auto &t : transports)
    t->finalize();
  transports.clear();
  if (allReduce)
    allReduce->finalize();
  allReduce.reset();
  blas.finalize();
  cpu::hostMessages().finalize();
}

void CudaBackend::hostAccess(const char *what) {
  synchronize(what, /*computeOnly=*/true);
}

void CudaBackend::checkEmulatedKernelArgument(const char *kernel,
                                              int64_t argument,
                                              const void *pointer) {
  cuda::checkEmulatedKernelArgument(kernel, argument, pointer);
}

void CudaBackend::synchronizeComputeStream() {
  // Host code that only launches and calls the runtime has nothing to wait
  // for: the runtime's calls are ordered on the device.
  if (!(device.flags & ZBRT_CUDA_HOST_CODE_LAUNCHES_ONLY))
    synchronize("the compute stream", /*computeOnly=*/true);
}

void *CudaBackend::allocTemporary(size_t bytes, const char *what) {
  // Managed memory, which the host fills or reads after a wait.
  synchronize(what, /*computeOnly=*/true);
  uint64_t rounded = (std::max<uint64_t>(bytes, 1) + 63) / 64 * 64;
  CUdeviceptr p = 0;
  check(driver().cuMemAllocManaged(&p, rounded, kMemAttachGlobal),
        "cuMemAllocManaged", rounded);
  std::memset(reinterpret_cast<void *>(p), 0, rounded);
  return reinterpret_cast<void *>(p);
}

void CudaBackend::zeroBuffer(void *buf, size_t bytes) {
  if (bytes == 0)
    return;
  // On the compute stream: after the kernels that still read the buffer,
  // before the next ones; the host never touches it (a host write would
  // move a managed page to the host and the GPU would fault it back).
  graph.boundary();
  check(driver().cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(buf), 0, bytes,
                                 device.compute),
        "cuMemsetD8Async");
  if (device.flags & ZBRT_CUDA_HOST_KERNELS) // the next kernel runs here
    synchronize("zeroing a buffer", /*computeOnly=*/true);
}

void CudaBackend::upload(void *dst, const void *src, size_t bytes) {
  if (bytes == 0)
    return;
  // On the compute stream, after the kernels that still read `dst`; from
  // pageable memory the driver has taken `src` when the call returns.
  graph.boundary();
  check(driver().cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), src,
                                   bytes, device.compute),
        "cuMemcpyHtoDAsync");
  if (device.flags & ZBRT_CUDA_HOST_KERNELS) // the next kernel runs here
    synchronize("an upload to the device", /*computeOnly=*/true);
}

void CudaBackend::download(void *dst, const void *src, size_t bytes) {
  if (bytes == 0)
    return;
  synchronize("a download from the device", /*computeOnly=*/true);
  check(driver().cuMemcpyDtoH(dst, reinterpret_cast<CUdeviceptr>(src), bytes),
        "cuMemcpyDtoH");
}

void CudaBackend::freeTemporary(void *p, const char *what) {
  synchronize(what, /*computeOnly=*/true);
  check(driver().cuMemFree(reinterpret_cast<CUdeviceptr>(p)), "cuMemFree");
}
