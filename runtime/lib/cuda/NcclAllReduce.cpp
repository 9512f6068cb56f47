//===- NcclAllReduce.cpp - zb runtime: the group's NCCL all-reduce --------===//
//
// See NcclAllReduce.h.
//
//===----------------------------------------------------------------------===//

#include "NcclAllReduce.h"

#include "../Internal.h"

#include <algorithm>
#include <cstdio>

using namespace zbrt;
using namespace zbrt::cuda;
using detail::fatalf;

std::unique_ptr<GroupAllReduce>
GroupAllReduce::create(Device &device, const std::vector<int> &placement,
                       bool sameDeviceOverNccl) {
  const int rank = detail::rank(), size = detail::worldSize();
  const int P = detail::pipelineSize(), s = detail::pipelineRank();
  if (P >= size)
    return nullptr;
  std::unique_ptr<GroupAllReduce> g(new GroupAllReduce(device));
  // Group rank d = pipeline d (world rank d * P + s).
  MPI_Comm_split(MPI_COMM_WORLD, s, rank, &g->group);
  int groupRank = 0, groupSize = 1;
  MPI_Comm_rank(g->group, &groupRank);
  MPI_Comm_size(g->group, &groupSize);
  std::vector<int> members;
  for (int r = s; r < size; r += P)
    members.push_back(r);
  for (int r : members)
    g->members += (g->members.empty() ? "" : ", ") + std::to_string(r);

  // Why NCCL cannot serve the group ("" when it can).
  std::string why;
  for (size_t a = 0; a < members.size() && why.empty(); ++a)
    for (size_t b = a + 1; b < members.size() && why.empty(); ++b) {
      const int ra = members[a], rb = members[b];
      if ((size_t)2 * std::max(ra, rb) + 1 < placement.size() &&
          placement[2 * ra] == placement[2 * rb] &&
          placement[2 * ra + 1] == placement[2 * rb + 1] && !sameDeviceOverNccl)
        why = "ranks " + std::to_string(ra) + " and " + std::to_string(rb) +
              " of the group share device " +
              std::to_string(placement[2 * ra + 1]) + ", which NCCL refuses";
    }
  std::string ncclWhy;
  const Nccl *nccl = loadNccl(ncclWhy);
  if (why.empty() && !nccl)
    why = "no NCCL (" + ncclWhy + ")";
  // Every member decides alike (NCCL may be missing on one of them only).
  int ok = why.empty() ? 1 : 0, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, g->group);
  if (!all && why.empty())
    why = "another rank of the group has no NCCL";
  if (!why.empty()) {
    std::snprintf(device.stats.allReduce, sizeof device.stats.allReduce,
                  "mpi: %s", why.c_str());
    return g;
  }

  g->nccl = nccl;
  NcclUniqueId id{};
  if (groupRank == 0)
    g->check(nccl->getUniqueId(&id), "ncclGetUniqueId");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, g->group);
  NcclComm comm = nullptr;
  g->check(nccl->commInitRank(&comm, groupSize, id, groupRank),
           "ncclCommInitRank");
  g->comm = comm;
  cuda::check(driver().cuStreamCreate(&g->stream, kStreamNonBlocking),
              "cuStreamCreate");
  std::snprintf(device.stats.allReduce, sizeof device.stats.allReduce, "nccl");
  return g;
}

GroupAllReduce::~GroupAllReduce() = default;

void GroupAllReduce::check(int result, const char *call) {
  if (result == 0 || result == kNcclInProgress)
    return;
  char action[128];
  detail::currentAction(action, sizeof action);
  fatalf("NCCL error in %s of the data-parallel group (world ranks %s; %s): "
         "%s",
         call, members.c_str(), action,
         nccl && nccl->errorString ? nccl->errorString(result) : "unknown");
}

void GroupAllReduce::start(float *buf, int64_t n) {
  // After the kernels that wrote the gradient (the compute stream so far).
  device.streamWaits(stream, device.compute);
  check(nccl->allReduce(buf, buf, (size_t)n, kNcclFloat32, kNcclSum, comm,
                        stream),
        "ncclAllReduce");
  ++device.stats.ncclAllReduces;
  ++started;
}

bool GroupAllReduce::finish() {
  if (started == 0)
    return false;
  started = 0;
  // The optimizer's kernels, launched next, read the sums.
  device.streamWaits(device.compute, stream);
  return true;
}

void GroupAllReduce::pollErrors() {
  if (!comm)
    return;
  int state = 0;
  int r = nccl->commGetAsyncError(comm, &state);
  if (r == 0 && (state == 0 || state == kNcclInProgress))
    return;
  std::string text = nccl->errorString(r != 0 ? r : state);
  char action[128];
  detail::currentAction(action, sizeof action);
  abort();
  fatalf("NCCL error in the all-reduce of the data-parallel group (world "
         "ranks %s; noticed %s): %s",
         members.c_str(), action, text.c_str());
}

bool GroupAllReduce::idle() {
  if (!stream)
    return true;
  CUresult r = driver().cuStreamQuery(stream);
  if (r == kNotReady)
    return false;
  cuda::check(r, "cuStreamQuery");
  return true;
}

std::string GroupAllReduce::pending() {
  if (idle())
    return "";
  return "the NCCL all-reduce of the gradients across the data-parallel "
         "group (world ranks " +
         members + ")";
}

void GroupAllReduce::abort() {
  if (comm)
    nccl->commAbort(comm);
  comm = nullptr;
}

void GroupAllReduce::finalize() {
  if (comm)
    nccl->commDestroy(comm);
  comm = nullptr;
  if (stream)
    driver().cuStreamDestroy(stream);
  stream = nullptr;
  if (group != MPI_COMM_NULL)
    MPI_Comm_free(&group);
}
