//===- Replay.cpp - zb-run: measured pass times, replay, prediction -------===//

#include "zb/Runner/Replay.h"

#include "zb/Schedule/IO.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

using namespace llvm;
using namespace zb::runner;
using namespace zb::formats;

namespace {

constexpr double kNoRecv = 1e300;

/// The duration (ms) of a closed F/B/W event (kind 0..2) of a stage below
/// `numStages`; std::nullopt for any other event.
std::optional<double> passMs(const zbrt::TraceEvent &e, int32_t numStages) {
  if ((int)e.kind > 2 || e.endUs < 0 || e.stage < 0 || e.stage >= numStages)
    return std::nullopt;
  return (e.endUs - e.beginUs) / 1000.0;
}

/// The time (ms) a closed receive spent before its message was there (the
/// whole receive when the backend does not say); std::nullopt for any other
/// event.
std::optional<double> recvWaitMs(const zbrt::TraceEvent &e) {
  if (e.kind != zbrt::EventKind::Recv || e.endUs < 0)
    return std::nullopt;
  double until = e.workFromUs >= 0 ? std::min(e.workFromUs, e.endUs) : e.endUs;
  return std::max(0.0, until - e.beginUs) / 1000.0;
}

} // namespace

std::vector<PassCost>
zb::runner::passCosts(const std::vector<zbrt::TraceEvent> &events, int32_t rank,
                    int32_t numStages) {
  std::vector<const zbrt::TraceEvent *> mine;
  for (const zbrt::TraceEvent &e : events)
    if (e.rank == rank && e.endUs >= 0)
      mine.push_back(&e);
  llvm::stable_sort(mine,
                    [](const zbrt::TraceEvent *a, const zbrt::TraceEvent *b) {
                      return a->beginUs < b->beginUs;
                    });
  std::vector<PassCost> out;
  double received = 0;     // receive work since the previous pass
  double lastEnd = -1e300; // end of the previous pass
  bool afterPass = false;  // out.back() is the previous pass
  for (const zbrt::TraceEvent *e : mine) {
    if ((int)e->kind <= 2) {
      afterPass = false;
      if (std::optional<double> ms = passMs(*e, numStages)) {
        out.push_back({e, *ms + received});
        afterPass = true;
      }
      received = 0;
      lastEnd = e->endUs;
      continue;
    }
    if (e->workFromUs < 0 || e->beginUs < lastEnd)
      continue; // not the rank's own work, or inside a pass (counted there)
    double work = std::max(0.0, e->endUs - e->workFromUs) / 1000.0;
    if (e->kind == zbrt::EventKind::Send && afterPass)
      out.back().ms += work;
    else
      received += work;
  }
  return out;
}

StageProfile::StageProfile(int32_t numStages)
    : sumMs(3 * numStages, 0.0), sumSqMs(3 * numStages, 0.0),
      count(3 * numStages, 0.0), rank(numStages, -1.0),
      minRecvMs(numStages, kNoRecv) {}

void StageProfile::add(const std::vector<zbrt::TraceEvent> &events,
                       int32_t myRank) {
  double minRecv = kNoRecv;
  for (const zbrt::TraceEvent &e : events)
    if (e.rank == myRank)
      if (std::optional<double> wait = recvWaitMs(e))
        minRecv = std::min(minRecv, *wait);
  for (const PassCost &p : passCosts(events, myRank, numStages())) {
    const zbrt::TraceEvent &e = *p.pass;
    size_t i = 3 * e.stage + (int)e.kind;
    sumMs[i] += p.ms;
    sumSqMs[i] += p.ms * p.ms;
    count[i] += 1;
    rank[e.stage] = myRank;
    minRecvMs[e.stage] = std::min(minRecvMs[e.stage], minRecv);
  }
}

double StageProfile::meanMs(int32_t stage, int k) const {
  double n = count[3 * stage + k];
  return n > 0 ? sumMs[3 * stage + k] / n : 0.0;
}

double StageProfile::cv(int32_t stage, int k) const {
  double mean = meanMs(stage, k), n = count[3 * stage + k];
  if (n <= 0 || mean <= 0)
    return 0.0;
  double var = std::max(0.0, sumSqMs[3 * stage + k] / n - mean * mean);
  return std::sqrt(var) / mean;
}

double StageProfile::commMs(int32_t stage) const {
  return minRecvMs[stage] < kNoRecv ? minRecvMs[stage] : 0.0;
}

Profile StageProfile::toProfile(StringRef planPath, int64_t steps) const {
  Profile p;
  p.plan = planPath.str();
  p.steps = steps;
  for (int32_t s = 0; s < numStages(); ++s) {
    ProfiledStage st;
    st.stage = s;
    st.rank = (int64_t)rank[s];
    st.tF = meanMs(s, 0);
    st.tB = meanMs(s, 1);
    st.tW = meanMs(s, 2);
    st.tComm = commMs(s);
    st.cvF = cv(s, 0);
    st.cvB = cv(s, 1);
    st.cvW = cv(s, 2);
    st.countF = (int64_t)count[3 * s];
    st.countB = (int64_t)count[3 * s + 1];
    st.countW = (int64_t)count[3 * s + 2];
    p.stages.push_back(st);
  }
  return p;
}

std::optional<PlannedSchedule> zb::runner::readPlannedSchedule(const Plan &plan) {
  SmallString<256> path(plan.dir);
  sys::path::append(path, "schedule.json");
  auto buffer = MemoryBuffer::getFile(path);
  if (!buffer)
    return std::nullopt;
  auto note = [&](const Twine &msg) {
    errs() << "zb-run: note: " << path << ": " << msg
           << " (no simulation of the measured run)\n";
    return std::nullopt;
  };
  PlannedSchedule ps;
  if (Error e =
          zb::sched::readJSON((*buffer)->getBuffer(), ps.problem, ps.schedule))
    return note(toString(std::move(e)));
  if ((int64_t)ps.schedule.stageToRank.size() != plan.numStages ||
      (int64_t)ps.schedule.perRank.size() != plan.numRanks)
    return note("does not match plan.json's stages and ranks");
  return ps;
}

std::vector<double>
zb::runner::replayStep(const PlannedSchedule &ps,
                     const std::vector<zbrt::TraceEvent> &events) {
  int numStages = (int)ps.schedule.stageToRank.size();
  int m = ps.problem.numMicrobatches;
  auto slot = [&](int kind, int stage, int microbatch) {
    return ((size_t)kind * numStages + stage) * m + microbatch;
  };
  std::vector<double> dur(3 * (size_t)numStages * m, -1.0);
  for (int32_t r = 0; r < (int32_t)ps.schedule.perRank.size(); ++r)
    for (const PassCost &p : passCosts(events, r, numStages))
      if (p.pass->microbatch >= 0 && p.pass->microbatch < m)
        dur[slot((int)p.pass->kind, p.pass->stage, p.pass->microbatch)] = p.ms;
  if (llvm::is_contained(dur, -1.0))
    return {};
  zb::sched::Problem problem = ps.problem;
  problem.costComm.assign(numStages, 0.0);
  zb::sched::SimOptions options;
  options.duration = [&](const zb::sched::Action &a) {
    return dur[slot((int)a.kind, a.stage, a.microbatch)];
  };
  zb::sched::SimResult sim = zb::sched::simulate(problem, ps.schedule, options);
  return sim.complete ? sim.rankBubbleRate : std::vector<double>{};
}

std::optional<MeasuredPrediction>
zb::runner::predictAtMeasuredCosts(const Plan &plan, const PlannedSchedule &ps,
                                 const StageProfile &profile) {
  auto note = [&](const Twine &msg) {
    errs() << "zb-run: note: " << msg
           << " (no prediction at the measured costs)\n";
    return std::nullopt;
  };
  zb::sched::Problem problem = ps.problem;
  problem.costF.assign(plan.numStages, 0.0);
  problem.costB = problem.costW = problem.costComm = problem.costF;
  problem.cvF = problem.cvB = problem.cvW = problem.costF;
  for (int32_t st = 0; st < plan.numStages; ++st) {
    if (profile.count[3 * st] == 0)
      return note(formatv("stage {0} ran no traced action", st).str());
    problem.costF[st] = profile.meanMs(st, 0);
    problem.costB[st] = profile.meanMs(st, 1);
    problem.costW[st] = profile.meanMs(st, 2);
    problem.costComm[st] = profile.commMs(st);
    problem.cvF[st] = profile.cv(st, 0);
    problem.cvB[st] = profile.cv(st, 1);
    problem.cvW[st] = profile.cv(st, 2);
  }
  MeasuredPrediction out;
  zb::sched::SimResult sim = zb::sched::simulate(problem, ps.schedule);
  if (!sim.complete)
    return note("the schedule cannot be simulated");
  out.rankBubbleRate = sim.rankBubbleRate;
  auto est = zb::sched::estimateJitter(problem, ps.schedule);
  if (!est)
    return note(toString(est.takeError()));
  out.jitterRankBubbleRate = est->rankBubbleRate;
  return out;
}
