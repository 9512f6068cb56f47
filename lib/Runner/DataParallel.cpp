//===- DataParallel.cpp - zb-run: gradients across pipelines --------------===//
//
// See zb/Runner/DataParallel.h.
//
//===----------------------------------------------------------------------===//

#include "zb/Runner/DataParallel.h"
#include "zb/Runner/Layout.h"
#include "zb/Runner/Watched.h"

#include "zbrt/Trace.h"
#include "zbrt/zbrt.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

using namespace zb::runner;

namespace {
/// MPI counts are int: at most 2^30 floats per call.
constexpr int64_t kChunk = int64_t(1) << 30;
} // namespace

GradientAllReduce::GradientAllReduce(RankProgram &rp) : rp(rp) {
  const Layout &l = layout();
  enabled = l.dataParallel > 1;
  if (!enabled)
    return;
  comm = l.groupComm;
  for (const formats::ArgInfo &a : rp.plan->ranks[rp.rank].args)
    if (a.kind == formats::ArgKind::Grad)
      gradParams.push_back(a.index);
  // On a GPU the hook hands the bucket to the backend (NCCL, ordered after
  // the compute stream's kernels by an event); where it refuses, the bucket
  // waits for the step's end.
  onCuda = zbrt_cuda_started();
  zbrt_set_gradient_hook(&GradientAllReduce::hook, this);
}

GradientAllReduce::~GradientAllReduce() {
  if (enabled)
    zbrt_set_gradient_hook(nullptr, nullptr);
  for (Bucket &b : inFlight)
    if (!b.requests.empty())
      MPI_Waitall((int)b.requests.size(), b.requests.data(),
                  MPI_STATUSES_IGNORE);
}

void GradientAllReduce::hook(void *self, int32_t firstGradArg,
                             int32_t count) {
  auto *me = static_cast<GradientAllReduce *>(self);
  if (!me->armed)
    return;
  const int64_t last = (int64_t)firstGradArg + count - 1;
  if (last >= (int64_t)me->gradParams.size())
    zbrt_fatal(llvm::formatv("zbrt_gradients_ready: gradient arguments {0} "
                             ".. {1}, but plan.json gives rank {2} {3} (the "
                             "rank program and plan.json do not belong "
                             "together)",
                             firstGradArg, last, me->rp.rank,
                             me->gradParams.size())
                   .str()
                   .c_str());
  const int64_t first = me->gradParams[firstGradArg];
  const int64_t lastParam = me->gradParams[last];
  for (int64_t k = firstGradArg; k <= last; ++k)
    if (me->started.count(me->gradParams[k]))
      return; // announced twice: the first all-reduce stands
  Bucket b = me->bucket(first, lastParam);
  if (me->onCuda) {
    // On the compute stream's timeline: the backend records an event there
    // (after the W kernels that wrote the bucket) and enqueues the NCCL
    // all-reduce behind it on its own stream; the host does not wait. A
    // backend without NCCL for the group refuses (every call of the run
    // alike): the bucket then goes over MPI at the step's end, after one
    // synchronisation.
    if (me->deviceRefused)
      return;
    b.beginUs = zbrt::traceNowUs();
    if (!zbrt_allreduce_start(b.data, b.n)) {
      me->deviceRefused = true;
      return;
    }
    me->markStarted(b);
    me->onDevice.push_back(std::move(b));
    return;
  }
  me->poll();
  me->start(std::move(b));
}

void GradientAllReduce::arm() { armed = enabled; }

GradientAllReduce::Bucket GradientAllReduce::bucket(int64_t firstParam,
                                                    int64_t lastParam) const {
  const Buffer &first = rp.grads.at(firstParam), &last = rp.grads.at(lastParam);
  Bucket b;
  b.firstParam = firstParam;
  b.lastParam = lastParam;
  b.data = first.data();
  b.n = (last.data() + last.size()) - first.data();
  return b;
}

std::vector<GradientAllReduce::Bucket> GradientAllReduce::rest() const {
  std::vector<Bucket> buckets;
  int64_t runFirst = -1, runLast = -1;
  for (auto &[param, g] : rp.grads) {
    if (started.count(param)) {
      if (runFirst >= 0)
        buckets.push_back(bucket(runFirst, runLast));
      runFirst = -1;
      continue;
    }
    if (runFirst < 0)
      runFirst = param;
    runLast = param;
  }
  if (runFirst >= 0)
    buckets.push_back(bucket(runFirst, runLast));
  return buckets;
}

void GradientAllReduce::markStarted(const Bucket &b) {
  for (auto it = rp.grads.find(b.firstParam);
       it != rp.grads.end() && it->first <= b.lastParam; ++it)
    started.insert(it->first);
}

void GradientAllReduce::start(Bucket b) {
  markStarted(b);
  b.beginUs = zbrt::traceNowUs();
  for (int64_t at = 0; at < b.n; at += kChunk) {
    b.requests.emplace_back();
    MPI_Iallreduce(MPI_IN_PLACE, b.data + at, (int)std::min(kChunk, b.n - at),
                   MPI_FLOAT, MPI_SUM, comm, &b.requests.back());
  }
  inFlight.push_back(std::move(b));
}

void GradientAllReduce::record(const Bucket &b, double endUs) {
  zbrt::traceRecord(zbrt::TraceEvent{
      zbrt::EventKind::AllReduce, rp.rank, -1, -1, (int32_t)b.lastParam,
      (int32_t)b.firstParam, b.n * (int64_t)sizeof(float), b.beginUs, endUs});
}

void GradientAllReduce::poll() {
  for (Bucket &b : inFlight) {
    if (b.done)
      continue;
    int flag = 0;
    MPI_Testall((int)b.requests.size(), b.requests.data(), &flag,
                MPI_STATUSES_IGNORE);
    if (!flag)
      continue;
    b.done = true;
    b.requests.clear();
    record(b, zbrt::traceNowUs());
  }
}

void GradientAllReduce::discard() {
  // The step's end waited for the device's all-reduces; the compute stream
  // is ordered after them too before the passes rewrite their buffers.
  if (!onDevice.empty())
    zbrt_allreduce_finish("the data-parallel all-reduce of a step that runs "
                          "again");
  onDevice.clear();
  for (Bucket &b : inFlight)
    if (!b.requests.empty())
      watched::waitAll(b.requests, "the data-parallel all-reduce of a step "
                                   "that runs again");
  inFlight.clear();
  started.clear();
}

void GradientAllReduce::finish(int64_t step) {
  armed = false;
  if (!enabled)
    return;
  const std::string what =
      llvm::formatv("the gradients of step {0} across the {1} pipelines "
                    "(all-reduce)",
                    step + 1, layout().dataParallel)
          .str();
  // The backend's own all-reduce first (the CUDA backend: NCCL on a stream
  // of its own, after the kernels that wrote the gradients; the CPU backend
  // takes none), behind those the hook started during the step. Each is a
  // trace event from its issue (the announcement, or here) until
  // zbrt_allreduce_finish returned: the host's part, not the device's.
  std::vector<Bucket> onHost;
  for (Bucket &b : rest()) {
    b.beginUs = zbrt::traceNowUs();
    if (!deviceRefused && zbrt_allreduce_start(b.data, b.n)) {
      onDevice.push_back(std::move(b));
      continue;
    }
    deviceRefused = true;
    onHost.push_back(std::move(b));
  }
  if (!onHost.empty()) {
    // The others over MPI on the host: the step's gradients are written (on
    // a GPU: by kernels into managed memory) before MPI reads them.
    zbrt_cuda_synchronize();
    for (Bucket &b : onHost)
      start(std::move(b));
  }
  if (!onDevice.empty()) {
    // The optimizer, next on the device, sees the sums.
    zbrt_allreduce_finish(what.c_str());
    const double end = zbrt::traceNowUs();
    for (const Bucket &b : onDevice)
      record(b, end);
    onDevice.clear();
  }
  // Each end stamped when seen complete.
  for (Bucket &b : inFlight) {
    if (b.done)
      continue;
    watched::waitAll(b.requests, what.c_str());
    poll();
  }
  inFlight.clear();
  started.clear();
}
