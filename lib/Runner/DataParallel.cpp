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
  // On a GPU the gradient is written by a kernel that may still run: the
  // all-reduces start at the step's end, after a synchronisation.
  hooked = !zbrt_cuda_started();
  if (hooked)
    zbrt_set_gradient_hook(&GradientAllReduce::hook, this);
}

GradientAllReduce::~GradientAllReduce() {
  if (hooked)
    zbrt_set_gradient_hook(nullptr, nullptr);
  for (auto &[param, f] : inFlight)
    if (!f.requests.empty())
      MPI_Waitall((int)f.requests.size(), f.requests.data(),
                  MPI_STATUSES_IGNORE);
}

void GradientAllReduce::hook(void *self, int32_t gradArg) {
  auto *me = static_cast<GradientAllReduce *>(self);
  if (!me->armed)
    return;
  if (gradArg >= (int32_t)me->gradParams.size())
    zbrt_fatal(llvm::formatv("zbrt_gradient_ready: gradient argument {0}, "
                             "but plan.json gives rank {1} {2} (the rank "
                             "program and plan.json do not belong together)",
                             gradArg, me->rp.rank, me->gradParams.size())
                   .str()
                   .c_str());
  const int64_t param = me->gradParams[gradArg];
  if (me->inFlight.count(param))
    return; // announced twice: the first all-reduce stands
  me->poll();
  me->start(param);
  ++me->early;
}

void GradientAllReduce::arm() { armed = enabled; }

void GradientAllReduce::start(int64_t param) {
  Buffer &g = rp.grads.at(param);
  InFlight &f = inFlight[param];
  f.beginUs = zbrt::traceNowUs();
  for (int64_t at = 0; at < g.size(); at += kChunk) {
    f.requests.emplace_back();
    MPI_Iallreduce(MPI_IN_PLACE, g.data() + at,
                   (int)std::min(kChunk, g.size() - at), MPI_FLOAT, MPI_SUM,
                   comm, &f.requests.back());
  }
}

void GradientAllReduce::poll() {
  for (auto &[param, f] : inFlight) {
    if (f.done)
      continue;
    int flag = 0;
    MPI_Testall((int)f.requests.size(), f.requests.data(), &flag,
                MPI_STATUSES_IGNORE);
    if (!flag)
      continue;
    f.done = true;
    f.requests.clear();
    zbrt::traceRecord(zbrt::TraceEvent{
        zbrt::EventKind::AllReduce, rp.rank, -1, -1, -1, (int32_t)param,
        rp.grads.at(param).size() * (int64_t)sizeof(float), f.beginUs,
        zbrt::traceNowUs()});
  }
}

void GradientAllReduce::discard() {
  for (auto &[param, f] : inFlight)
    if (!f.requests.empty())
      watched::waitAll(f.requests, "the data-parallel all-reduce of a step "
                                   "that runs again");
  inFlight.clear();
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
  // of its own, after the kernels that wrote the gradient; the CPU backend
  // takes none). Each is a trace event from its issue until
  // zbrt_allreduce_finish returned: the host's part, not the device's.
  std::vector<std::pair<int64_t, double>> onDevice; // parameter, issued
  for (auto &[param, g] : rp.grads)
    if (!inFlight.count(param)) {
      const double issued = zbrt::traceNowUs();
      if (zbrt_allreduce_start(g.data(), g.size())) {
        onDevice.emplace_back(param, issued);
        ++late;
      }
    }
  if (inFlight.size() + onDevice.size() < rp.grads.size()) {
    // The others over MPI on the host: the step's gradients are written (on
    // a GPU: by kernels into managed memory) before MPI reads them.
    zbrt_cuda_synchronize();
    for (auto &[param, g] : rp.grads)
      if (!inFlight.count(param) &&
          !llvm::is_contained(llvm::make_first_range(onDevice), param)) {
        start(param);
        ++late;
      }
  }
  if (!onDevice.empty()) {
    // The optimizer, next on the device, sees the sums.
    zbrt_allreduce_finish(what.c_str());
    const double end = zbrt::traceNowUs();
    for (auto &[param, issued] : onDevice)
      zbrt::traceRecord(zbrt::TraceEvent{
          zbrt::EventKind::AllReduce, rp.rank, -1, -1, -1, (int32_t)param,
          rp.grads.at(param).size() * (int64_t)sizeof(float), issued, end});
  }
  // Each end stamped when seen complete.
  for (auto &[param, f] : inFlight) {
    if (f.done)
      continue;
    watched::waitAll(f.requests, what.c_str());
    poll();
  }
  inFlight.clear();
}
