//===- Schedule.cpp - Problem, simulator, verifier ------------------------===//
//
// The base layer: problem validation, stage costs, the simulator and the
// verifier that every schedule goes through. The name -> builder dispatch is
// in Registry.cpp.
//
//===----------------------------------------------------------------------===//

#include "zb/Schedule/Schedule.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

using namespace zb::sched;

llvm::StringRef zb::sched::kindName(ActionKind kind) {
  switch (kind) {
  case ActionKind::F:
    return "F";
  case ActionKind::B:
    return "B";
  case ActionKind::W:
    return "W";
  }
  return "?";
}

llvm::StringRef zb::sched::costConventionName(CostConvention convention) {
  switch (convention) {
  case CostConvention::Makespan:
    return "makespan";
  case CostConvention::StageSpan:
    return "stage_span";
  }
  return "?";
}

std::optional<CostConvention>
zb::sched::parseCostConvention(llvm::StringRef name) {
  for (CostConvention c : {CostConvention::Makespan, CostConvention::StageSpan})
    if (name == costConventionName(c))
      return c;
  return std::nullopt;
}

std::vector<int> zb::sched::interleavedStageToRank(int numRanks,
                                                   int numChunks) {
  std::vector<int> map(numRanks * numChunks);
  for (int s = 0, e = map.size(); s < e; ++s)
    map[s] = s % numRanks;
  return map;
}

std::vector<int> zb::sched::vShapeStageToRank(int numRanks) {
  std::vector<int> map(2 * numRanks);
  for (int s = 0; s < 2 * numRanks; ++s)
    map[s] = s < numRanks ? s : 2 * numRanks - 1 - s;
  return map;
}

//===----------------------------------------------------------------------===//
// Problem
//===----------------------------------------------------------------------===//

static llvm::Error checkVector(llvm::StringRef field,
                               const std::vector<double> &values,
                               const Problem &problem, bool required) {
  size_t p = problem.numRanks, s = problem.numStages();
  if (values.empty()) {
    if (required)
      return llvm::createStringError(
          llvm::formatv("{0} is required (one value, or p={1} values)", field,
                        p)
              .str());
    return llvm::Error::success();
  }
  if (values.size() != 1 && values.size() != p && values.size() != s)
    return llvm::createStringError(
        llvm::formatv("{0} has {1} values; expected 1, p={2}{3}", field,
                      values.size(), p,
                      s != p ? llvm::formatv(" or p*V={0}", s).str() : "")
            .str());
  // Times and memory are summed over up to 3 m p V passes: a bound keeps
  // every sum finite (1e300 would overflow to inf, then nan).
  const double kMaxValue = 1e15;
  for (double v : values)
    if (!(v >= 0) || !std::isfinite(v) || v > kMaxValue)
      return llvm::createStringError(
          llvm::formatv("{0} must be finite, >= 0 and at most 1e15, got {1}",
                        field, llvm::format("%g", v))
              .str());
  return llvm::Error::success();
}

llvm::Error zb::sched::validateProblem(const Problem &problem) {
  if (problem.numRanks > kMaxRanks || problem.numChunks > kMaxChunks ||
      problem.numMicrobatches > kMaxMicrobatches ||
      (problem.numRanks > 0 && problem.numChunks > 0 &&
       problem.numMicrobatches > 0 &&
       (int64_t)problem.numRanks * problem.numChunks *
               problem.numMicrobatches >
           kMaxStageMicrobatches))
    return llvm::createStringError(llvm::formatv(
        "the problem is too large: p = {0} ranks (at most {3}), V = {1} "
        "chunks per rank (at most {4}), m = {2} microbatches (at most {5}), "
        "and p * V * m at most {6}",
        problem.numRanks, problem.numChunks, problem.numMicrobatches,
        kMaxRanks, kMaxChunks, kMaxMicrobatches, kMaxStageMicrobatches)
                                       .str());
  if (problem.numRanks < 1)
    return llvm::createStringError(
        llvm::formatv(
            "the number of stages (ranks) must be at least 1, got {0}",
            problem.numRanks)
            .str());
  if (problem.numMicrobatches < 1)
    return llvm::createStringError(
        llvm::formatv("the number of microbatches must be at least 1, got {0}",
                      problem.numMicrobatches)
            .str());
  if (problem.numChunks < 1)
    return llvm::createStringError(
        llvm::formatv("the number of virtual stages (chunks) per rank must be "
                      "at least 1, got {0}",
                      problem.numChunks)
            .str());
  if (llvm::Error e = checkVector("cost-f", problem.costF, problem, true))
    return e;
  if (llvm::Error e = checkVector("cost-b", problem.costB, problem, true))
    return e;
  if (llvm::Error e = checkVector("cost-w", problem.costW, problem, false))
    return e;
  if (llvm::Error e =
          checkVector("cost-comm", problem.costComm, problem, false))
    return e;
  if (llvm::Error e = checkVector("mem-b", problem.memB, problem, false))
    return e;
  if (llvm::Error e = checkVector("mem-w", problem.memW, problem, false))
    return e;
  if (!(problem.memoryLimit >= 0) || !std::isfinite(problem.memoryLimit))
    return llvm::createStringError(
        llvm::formatv("memory-limit must be finite and >= 0 (0 = unlimited), "
                      "got {0}",
                      problem.memoryLimit)
            .str());
  if (!problem.memoryLimits.empty() &&
      static_cast<int>(problem.memoryLimits.size()) != problem.numRanks)
    return llvm::createStringError(
        llvm::formatv("memory-limit: {0} per-rank values for p={1} ranks",
                      problem.memoryLimits.size(), problem.numRanks)
            .str());
  if (!(problem.fbOverlap >= 0 && problem.fbOverlap <= 1))
    return llvm::createStringError(
        llvm::formatv("fb-overlap must be a finite number in [0, 1] (the "
                      "share of an overlapped F&B pair's shorter pass that "
                      "hides), got {0}",
                      llvm::format("%g", problem.fbOverlap))
            .str());
  for (auto [r, l] : llvm::enumerate(problem.memoryLimits))
    if (!(l >= 0) || !std::isfinite(l))
      return llvm::createStringError(
          llvm::formatv("memory-limit of rank {0} must be finite and >= 0 "
                        "(0 = unlimited), got {1}",
                        r, l)
              .str());
  return llvm::Error::success();
}

static std::vector<double> resolve(const std::vector<double> &values,
                                   const Problem &problem,
                                   llvm::ArrayRef<int> stageToRank,
                                   bool divideByChunks, int directions) {
  size_t s = stageToRank.size();
  std::vector<double> out(s, 0.0);
  if (values.empty())
    return out;
  for (size_t i = 0; i < s; ++i) {
    if (values.size() == s && (s != (size_t)problem.numRanks || s == 1)) {
      out[i] = values[i];
      continue;
    }
    double v = values.size() == 1 ? values[0] : values[stageToRank[i]];
    // A rank's value is its share of the model: V chunks, or V/D chunks
    // that are whole model stages for D directions.
    out[i] = divideByChunks
                 ? v * directions / problem.numChunks
                 : v;
  }
  return out;
}

StageCosts zb::sched::resolveStageCosts(const Problem &problem,
                                        llvm::ArrayRef<int> stageToRank,
                                        int directions) {
  StageCosts c;
  c.f = resolve(problem.costF, problem, stageToRank, true, directions);
  c.b = resolve(problem.costB, problem, stageToRank, true, directions);
  c.w = resolve(problem.costW, problem, stageToRank, true, directions);
  c.comm = resolve(problem.costComm, problem, stageToRank, false, directions);
  c.memB = resolve(problem.memB, problem, stageToRank, true, directions);
  c.memW = resolve(problem.memW, problem, stageToRank, true, directions);
  return c;
}

StageCosts zb::sched::resolveStageCosts(const Problem &problem,
                                        const Schedule &schedule) {
  return resolveStageCosts(problem, schedule.stageToRank,
                           schedule.directions);
}

//===----------------------------------------------------------------------===//
// Simulator
//===----------------------------------------------------------------------===//

namespace {
/// Dense index of (kind, stage, microbatch).
struct ActionIndex {
  int numStages, numMicrobatches;
  int operator()(ActionKind k, int s, int i) const {
    return (static_cast<int>(k) * numStages + s) * numMicrobatches + i;
  }
  int size() const { return 3 * numStages * numMicrobatches; }
};

struct Dep {
  ActionKind kind;
  int stage, microbatch;
  /// Latency added to the dependency's end time.
  double latency;
};
} // namespace

/// Dependencies of \p a. Returns the number written to \p deps (at most 2).
static int dependencies(const Action &a, const Schedule &schedule,
                        const StageCosts &costs, int numRanks,
                        const SimOptions &options, Dep deps[2]) {
  int n = 0;
  int rank = schedule.stageToRank[a.stage];
  switch (a.kind) {
  case ActionKind::F:
    if (!schedule.routeStart(a.stage)) {
      bool skip = options.paperInterleavedQuirk && a.stage % numRanks == 0 &&
                  a.microbatch % numRanks != 0;
      if (!skip) {
        int src = a.stage - 1;
        double lat = schedule.stageToRank[src] != rank ? costs.comm[src] : 0;
        deps[n++] = {ActionKind::F, src, a.microbatch, lat};
      }
    }
    break;
  case ActionKind::B:
    deps[n++] = {ActionKind::F, a.stage, a.microbatch, 0};
    if (!schedule.routeEnd(a.stage)) {
      int src = a.stage + 1;
      bool skip = options.paperInterleavedQuirk && src % numRanks == 0 &&
                  a.microbatch % numRanks != 0;
      if (!skip) {
        double lat = schedule.stageToRank[src] != rank ? costs.comm[src] : 0;
        deps[n++] = {schedule.fusedBackward ? ActionKind::W : ActionKind::B,
                     src, a.microbatch, lat};
      }
    }
    break;
  case ActionKind::W:
    deps[n++] = {ActionKind::B, a.stage, a.microbatch, 0};
    break;
  }
  return n;
}

static double actionCost(const StageCosts &c, const Action &a) {
  return c.cost(a.kind, a.stage);
}

static double memDelta(const StageCosts &c, const Action &a) {
  return c.memoryDelta(a.kind, a.stage);
}

/// True when perRank[r][i] and perRank[r][i + 1] form an overlapped F&B
/// pair simulate() can cost: i in range, an F then a B of a different
/// microbatch (verify() names a mark that is not).
static bool isValidFBPair(const std::vector<Action> &list, int i) {
  return i >= 0 && static_cast<size_t>(i) + 1 < list.size() &&
         list[i].kind == ActionKind::F && list[i + 1].kind == ActionKind::B &&
         list[i].microbatch != list[i + 1].microbatch;
}

namespace {
/// Shared core of simulate() and the verifier's deadlock check. Assumes the
/// schedule is structurally valid (ranks, stage ranges, no duplicates).
struct SimCore {
  std::vector<double> start, end;
  std::vector<char> done;
  std::vector<size_t> next; // per rank: index of the first unsimulated action
  std::vector<double> free, first;
  /// Per rank: the time (ms) its compute stream was busy (an overlapped
  /// pair counted once).
  std::vector<double> busy;
  bool complete = true;
};
} // namespace

static SimCore runSimulation(const Problem &problem, const Schedule &schedule,
                             const StageCosts &costs,
                             const SimOptions &options) {
  int p = schedule.perRank.size();
  ActionIndex idx{static_cast<int>(schedule.stageToRank.size()),
                  problem.numMicrobatches};
  SimCore core;
  core.start.assign(idx.size(), 0.0);
  core.end.assign(idx.size(), 0.0);
  core.done.assign(idx.size(), 0);
  core.next.assign(p, 0);
  core.free.assign(p, 0.0);
  core.busy.assign(p, 0.0);
  if (options.rankReady.size() == static_cast<size_t>(p))
    core.free = options.rankReady;
  core.first.assign(p, -1.0);
  size_t total = 0, finished = 0;
  for (const auto &list : schedule.perRank)
    total += list.size();
  // Overlapped F&B pairs are costed only with alpha > 0 (alpha = 0: the two
  // passes one after the other, as without the mark). nextPair[r]: the
  // first of rank r's marks not yet reached.
  const double alpha = problem.fbOverlap;
  const bool pairs = alpha > 0 && schedule.hasFBPairs();
  std::vector<size_t> nextPair(p, 0);
  // Whether every dependency of `a` is done; raises `start` to the time (ms)
  // its inputs are ready.
  auto inputsReady = [&](const Action &a, double &start) {
    Dep deps[2];
    int n = dependencies(a, schedule, costs, problem.numRanks, options, deps);
    for (int d = 0; d < n; ++d) {
      int j = idx(deps[d].kind, deps[d].stage, deps[d].microbatch);
      if (!core.done[j])
        return false;
      start = std::max(start, core.end[j] + deps[d].latency);
    }
    return true;
  };
  auto duration = [&](const Action &a) {
    return options.duration ? options.duration(a) : actionCost(costs, a);
  };
  while (finished < total) {
    bool progress = false;
    for (int r = 0; r < p; ++r) {
      const auto &list = schedule.perRank[r];
      while (core.next[r] < list.size()) {
        const size_t k = core.next[r];
        const Action &a = list[k];
        // The pair at k, if any (marks before k were passed or invalid).
        bool pair = false;
        if (pairs && static_cast<size_t>(r) < schedule.fbPairs.size()) {
          const std::vector<int> &marks = schedule.fbPairs[r];
          size_t &q = nextPair[r];
          while (q < marks.size() && (marks[q] < 0 || (size_t)marks[q] < k))
            ++q;
          pair = q < marks.size() && (size_t)marks[q] == k &&
                 isValidFBPair(list, marks[q]);
        }
        double start = core.free[r];
        if (!inputsReady(a, start) ||
            (pair && !inputsReady(list[k + 1], start)))
          break;
        int j = idx(a.kind, a.stage, a.microbatch);
        if (pair) {
          // Both passes occupy the rank from `start` to the pair's end.
          const Action &b = list[k + 1];
          int jb = idx(b.kind, b.stage, b.microbatch);
          double pairTime = fbPairTime(duration(a), duration(b), alpha);
          for (int x : {j, jb}) {
            core.start[x] = start;
            core.end[x] = start + pairTime;
            core.done[x] = 1;
          }
          core.busy[r] += pairTime;
        } else {
          double d = duration(a);
          core.end[j] = start + d;
          // As the timeline always gave it (end - duration; the same bits).
          core.start[j] = core.end[j] - d;
          core.done[j] = 1;
          core.busy[r] += d;
        }
        if (core.first[r] < 0)
          core.first[r] = start;
        core.free[r] = core.end[j];
        const int n = pair ? 2 : 1;
        core.next[r] += n;
        finished += n;
        progress = true;
      }
    }
    if (!progress) {
      core.complete = false;
      break;
    }
  }
  return core;
}

SimResult zb::sched::simulate(const Problem &problem, const Schedule &schedule,
                              const SimOptions &options) {
  SimResult result;
  int p = schedule.perRank.size();
  StageCosts costs = resolveStageCosts(problem, schedule);
  SimCore core = runSimulation(problem, schedule, costs, options);
  ActionIndex idx{static_cast<int>(schedule.stageToRank.size()),
                  problem.numMicrobatches};
  result.complete = core.complete;
  result.peakMemory.assign(p, 0.0);
  result.rankBubbleRate.assign(p, 0.0);
  result.timeline.resize(p);
  for (int r = 0; r < p; ++r) {
    double mem = 0, peak = 0, busy = core.busy[r];
    for (const Action &a : schedule.perRank[r]) {
      mem += memDelta(costs, a);
      peak = std::max(peak, mem);
      int j = idx(a.kind, a.stage, a.microbatch);
      if (!core.done[j])
        continue;
      result.timeline[r].push_back({a, r, core.start[j], core.end[j]});
    }
    result.peakMemory[r] = peak;
    result.idealTime = std::max(result.idealTime, busy);
    result.makespan = std::max(result.makespan, core.free[r]);
    if (core.first[r] >= 0) {
      double span = core.free[r] - core.first[r];
      result.stageSpan = std::max(result.stageSpan, span);
      if (span > 0)
        result.rankBubbleRate[r] = std::max(0.0, 1.0 - busy / span);
    }
  }
  // No span is shorter than the busiest rank's work: a negative rate is
  // rounding (summed pass times), reported as 0.
  auto rate = [&](double cost) {
    return cost > 0 ? std::max(0.0, (cost - result.idealTime) / cost) : 0.0;
  };
  result.makespanBubbleRate = rate(result.makespan);
  result.stageSpanBubbleRate = rate(result.stageSpan);
  result.cost = schedule.costConvention == CostConvention::Makespan
                    ? result.makespan
                    : result.stageSpan;
  result.bubbleRate = rate(result.cost);
  return result;
}

llvm::Expected<JitterEstimate>
zb::sched::estimateJitter(const Problem &problem, const Schedule &schedule,
                          int samples, uint64_t seed) {
  auto fail = [](const llvm::Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "estimateJitter: " + msg);
  };
  if (samples < 1)
    return fail(llvm::formatv("samples = {0}, need >= 1", samples));
  int numStages = static_cast<int>(schedule.stageToRank.size());
  const std::vector<double> *cvs[3] = {&problem.cvF, &problem.cvB,
                                       &problem.cvW};
  const char *names[3] = {"cvF", "cvB", "cvW"};
  for (int k = 0; k < 3; ++k) {
    if (!cvs[k]->empty() && static_cast<int>(cvs[k]->size()) != numStages)
      return fail(llvm::formatv("{0} has {1} values for {2} stages", names[k],
                                cvs[k]->size(), numStages));
    for (double v : *cvs[k])
      if (!(v >= 0) || !std::isfinite(v))
        return fail(llvm::formatv("{0} has the value {1}; a coefficient of "
                                  "variation must be >= 0",
                                  names[k], v));
  }
  StageCosts costs = resolveStageCosts(problem, schedule);
  // One log-normal per (kind, stage): mean 1, the stage's cv.
  std::vector<std::lognormal_distribution<double>> dist;
  for (int k = 0; k < 3; ++k)
    for (int s = 0; s < numStages; ++s) {
      double cv = cvs[k]->empty() ? 0.0 : (*cvs[k])[s];
      double sigma2 = std::log1p(cv * cv);
      dist.emplace_back(-sigma2 / 2, std::sqrt(sigma2));
    }
  std::mt19937_64 rng(seed);
  SimOptions options;
  options.duration = [&](const Action &a) {
    int k = static_cast<int>(a.kind);
    return actionCost(costs, a) * dist[k * numStages + a.stage](rng);
  };
  JitterEstimate est;
  est.samples = samples;
  est.rankBubbleRate.assign(schedule.perRank.size(), 0.0);
  for (int i = 0; i < samples; ++i) {
    SimResult sim = simulate(problem, schedule, options);
    if (!sim.complete)
      return fail("the schedule cannot be simulated (a dependency is never "
                  "satisfied)");
    for (size_t r = 0; r < sim.rankBubbleRate.size(); ++r)
      est.rankBubbleRate[r] += sim.rankBubbleRate[r] / samples;
    est.bubbleRate += sim.bubbleRate / samples;
    est.makespan += sim.makespan / samples;
  }
  return est;
}

//===----------------------------------------------------------------------===//
// Verifier
//===----------------------------------------------------------------------===//

static std::string describe(const Action &a) {
  return llvm::formatv("{0}(stage {1}, microbatch {2})", kindName(a.kind),
                       a.stage, a.microbatch)
      .str();
}

static bool exceeds(double value, double limit) {
  return !StageCosts::fits(value, limit);
}

namespace {
llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(message.str());
}

/// The schedule's shape: one action list per rank, every stage on a rank.
llvm::Error checkShape(const Problem &problem, const Schedule &schedule) {
  int p = problem.numRanks, numStages = problem.numStages();
  if (static_cast<int>(schedule.perRank.size()) != p)
    return error(
        llvm::formatv("schedule '{0}' has {1} ranks, the problem has p={2}",
                      schedule.name, schedule.perRank.size(), p));
  if (static_cast<int>(schedule.stageToRank.size()) != numStages)
    return error(
        llvm::formatv("schedule '{0}' maps {1} stages to ranks, the problem "
                      "has p*V={2} stages",
                      schedule.name, schedule.stageToRank.size(), numStages));
  if (schedule.directions != 1 &&
      (schedule.directions != 2 || numStages % 2 != 0 ||
       problem.numMicrobatches % 2 != 0))
    return error(llvm::formatv(
        "schedule '{0}' has {1} directions; a bidirectional pipeline has 2, "
        "an even number of stages (got {2}) and of microbatches (got {3})",
        schedule.name, schedule.directions, numStages,
        problem.numMicrobatches));
  for (int s = 0; s < numStages; ++s)
    if (schedule.stageToRank[s] < 0 || schedule.stageToRank[s] >= p)
      return error(
          llvm::formatv("stage {0} is mapped to rank {1}, outside 0..{2}", s,
                        schedule.stageToRank[s], p - 1));
  return llvm::Error::success();
}

/// Counts and placement: every F, B and W of every stage and microbatch
/// exactly once, on its stage's rank. Fills `position` (index in its rank's
/// list, by ActionIndex).
llvm::Error checkPlacement(const Problem &problem, const Schedule &schedule,
                           const ActionIndex &idx, std::vector<int> &position) {
  int p = problem.numRanks, m = problem.numMicrobatches;
  int numStages = problem.numStages();
  position.assign(idx.size(), -1);
  for (int r = 0; r < p; ++r) {
    const auto &list = schedule.perRank[r];
    for (int k = 0, e = list.size(); k < e; ++k) {
      const Action &a = list[k];
      if (a.stage < 0 || a.stage >= numStages || a.microbatch < 0 ||
          a.microbatch >= m ||
          (a.kind != ActionKind::F && a.kind != ActionKind::B &&
           a.kind != ActionKind::W))
        return error(llvm::formatv("rank {0} position {1}: {2} is out of range "
                                   "(stages 0..{3}, microbatches 0..{4})",
                                   r, k, describe(a), numStages - 1, m - 1));
      if (schedule.stageToRank[a.stage] != r)
        return error(llvm::formatv("rank {0} position {1}: {2} belongs to "
                                   "rank {3}",
                                   r, k, describe(a),
                                   schedule.stageToRank[a.stage]));
      int direction =
          directionOfMicrobatch(a.microbatch, m, schedule.directions);
      if (schedule.directionOfStage(a.stage) != direction)
        return error(llvm::formatv(
            "rank {0} position {1}: {2} is off its route (microbatch {3} "
            "takes direction {4}: stages {5}..{6})",
            r, k, describe(a), a.microbatch, direction,
            direction * schedule.routeLength(),
            (direction + 1) * schedule.routeLength() - 1));
      int j = idx(a.kind, a.stage, a.microbatch);
      if (position[j] >= 0)
        return error(llvm::formatv("rank {0}: {1} appears more than once", r,
                                   describe(a)));
      position[j] = k;
    }
  }
  const int perStage = m / schedule.directions;
  for (int s = 0; s < numStages; ++s)
    for (ActionKind k : {ActionKind::F, ActionKind::B, ActionKind::W})
      for (int i = 0; i < m; ++i)
        if (directionOfMicrobatch(i, m, schedule.directions) ==
                schedule.directionOfStage(s) &&
            position[idx(k, s, i)] < 0)
          return error(llvm::formatv(
              "count: {0} is missing (rank {1} must run {2} actions)",
              describe({k, s, i}), schedule.stageToRank[s],
              3 * perStage *
                  llvm::count(schedule.stageToRank, schedule.stageToRank[s])));
  return llvm::Error::success();
}

/// Same-rank order: B after its F, W after its B (right after it under a
/// fused backward).
llvm::Error checkRankOrder(const Schedule &schedule, const ActionIndex &idx,
                           const std::vector<int> &position) {
  for (int r = 0, p = schedule.perRank.size(); r < p; ++r) {
    for (const Action &a : schedule.perRank[r]) {
      int here = position[idx(a.kind, a.stage, a.microbatch)];
      Action f{ActionKind::F, a.stage, a.microbatch};
      Action b{ActionKind::B, a.stage, a.microbatch};
      if (a.kind == ActionKind::B &&
          position[idx(f.kind, f.stage, f.microbatch)] > here)
        return error(llvm::formatv("dependency: rank {0} runs {1} before {2}",
                                   r, describe(a), describe(f)));
      if (a.kind != ActionKind::W)
        continue;
      int bAt = position[idx(b.kind, b.stage, b.microbatch)];
      if (bAt > here)
        return error(llvm::formatv("dependency: rank {0} runs {1} before {2}",
                                   r, describe(a), describe(b)));
      if (schedule.fusedBackward && bAt + 1 != here)
        return error(llvm::formatv("fused backward: rank {0} must run {1} "
                                   "right after {2}",
                                   r, describe(a), describe(b)));
    }
  }
  return llvm::Error::success();
}

/// Overlapped F&B pairs: none, or one list per rank of increasing indices i
/// with perRank[r][i] an F and perRank[r][i + 1] a B of a different
/// microbatch, no action in two pairs.
llvm::Error checkFBPairs(const Schedule &schedule) {
  if (schedule.fbPairs.empty())
    return llvm::Error::success();
  const size_t p = schedule.perRank.size();
  if (schedule.fbPairs.size() != p)
    return error(llvm::formatv("fb pairs: {0} lists of pairs for {1} ranks "
                               "(one per rank, or none)",
                               schedule.fbPairs.size(), p));
  for (size_t r = 0; r < p; ++r) {
    const std::vector<Action> &list = schedule.perRank[r];
    const std::vector<int> &marks = schedule.fbPairs[r];
    for (size_t q = 0; q < marks.size(); ++q) {
      const int i = marks[q];
      if (i < 0 || static_cast<size_t>(i) + 1 >= list.size())
        return error(llvm::formatv(
            "fb pair: rank {0} index {1}: out of range (a pair is actions i "
            "and i+1 of the rank's {2} actions)",
            r, i, list.size()));
      if (q > 0 && i <= marks[q - 1])
        return error(llvm::formatv("fb pair: rank {0} index {1}: the indices "
                                   "must increase (after {2})",
                                   r, i, marks[q - 1]));
      if (q > 0 && i == marks[q - 1] + 1)
        return error(llvm::formatv(
            "fb pair: rank {0} index {1}: {2} is already in the pair at index "
            "{3}",
            r, i, describe(list[i]), marks[q - 1]));
      const Action &f = list[i], &b = list[i + 1];
      if (f.kind != ActionKind::F || b.kind != ActionKind::B)
        return error(llvm::formatv(
            "fb pair: rank {0} index {1}: {2} then {3}; a pair is an F "
            "followed by a B",
            r, i, describe(f), describe(b)));
      if (f.microbatch == b.microbatch)
        return error(llvm::formatv(
            "fb pair: rank {0} index {1}: {2} and {3} are of the same "
            "microbatch; a pair overlaps two microbatches",
            r, i, describe(f), describe(b)));
    }
  }
  return llvm::Error::success();
}

/// Cross-stage dependencies and deadlock freedom: the simulation completes;
/// otherwise names the first blocked action and what it waits for.
llvm::Error checkDeadlock(const Problem &problem, const Schedule &schedule,
                          const StageCosts &costs, const ActionIndex &idx) {
  int p = problem.numRanks;
  SimCore core = runSimulation(problem, schedule, costs, SimOptions());
  if (core.complete)
    return llvm::Error::success();
  for (int r = 0; r < p; ++r) {
    const auto &list = schedule.perRank[r];
    if (core.next[r] >= list.size())
      continue;
    const size_t k = core.next[r];
    // An overlapped pair at k (with fbOverlap > 0) waits for both passes.
    bool pair = problem.fbOverlap > 0 &&
                static_cast<size_t>(r) < schedule.fbPairs.size() &&
                llvm::is_contained(schedule.fbPairs[r], static_cast<int>(k)) &&
                isValidFBPair(list, k);
    for (size_t x = k; x <= k + (pair ? 1 : 0); ++x) {
      const Action &a = list[x];
      Dep deps[2];
      int n = dependencies(a, schedule, costs, p, SimOptions(), deps);
      for (int d = 0; d < n; ++d) {
        Action dep{deps[d].kind, deps[d].stage, deps[d].microbatch};
        if (core.done[idx(dep.kind, dep.stage, dep.microbatch)])
          continue;
        int depRank = schedule.stageToRank[dep.stage];
        return error(llvm::formatv(
            "dependency: {0} on rank {1} needs {2} on rank {3}, which {4} "
            "(deadlock){5}",
            describe(a), r, describe(dep), depRank,
            depRank == r ? "comes later in the same rank's order"
                         : "cannot run before it",
            pair ? llvm::formatv(" (overlapped with {0} in the F&B pair at "
                                 "index {1})",
                                 describe(list[x == k ? k + 1 : k]), k)
                       .str()
                 : std::string()));
      }
    }
  }
  return error("deadlock in schedule '" + schedule.name + "'");
}

/// Memory: every rank's activation memory stays within the limit after
/// every action (F +M_B, B +M_W-M_B, W -M_W).
llvm::Error checkMemory(const Problem &problem, const Schedule &schedule,
                        const StageCosts &costs) {
  for (int r = 0; r < problem.numRanks; ++r) {
    double limit = problem.memoryLimitOf(r);
    if (limit <= 0)
      continue;
    double mem = 0;
    for (const Action &a : schedule.perRank[r]) {
      mem += memDelta(costs, a);
      if (exceeds(mem, limit))
        return error(llvm::formatv("memory limit: rank {0} holds {1} after "
                                   "{2}, above the limit {3}",
                                   r, mem, describe(a), limit));
    }
  }
  return llvm::Error::success();
}
} // namespace

llvm::Error zb::sched::verify(const Problem &problem,
                              const Schedule &schedule) {
  if (llvm::Error e = validateProblem(problem))
    return e;
  if (llvm::Error e = checkShape(problem, schedule))
    return e;
  ActionIndex idx{problem.numStages(), problem.numMicrobatches};
  std::vector<int> position;
  if (llvm::Error e = checkPlacement(problem, schedule, idx, position))
    return e;
  if (llvm::Error e = checkRankOrder(schedule, idx, position))
    return e;
  if (llvm::Error e = checkFBPairs(schedule))
    return e;
  StageCosts costs = resolveStageCosts(problem, schedule);
  if (llvm::Error e = checkDeadlock(problem, schedule, costs, idx))
    return e;
  return checkMemory(problem, schedule, costs);
}

//===----------------------------------------------------------------------===//
// Memory bounds
//===----------------------------------------------------------------------===//

double zb::sched::minimumMemoryOfRank(const Problem &problem,
                                      llvm::ArrayRef<int> stageToRank,
                                      int rank, int directions) {
  StageCosts c = resolveStageCosts(problem, stageToRank, directions);
  // One microbatch at a time: all its F, then B immediately followed by W;
  // the worst of the routes (a microbatch passes through one).
  const int length = stageToRank.size() / directions;
  double peak = 0;
  for (int d = 0; d < directions; ++d) {
    const int begin = d * length, end = begin + length;
    double mem = 0;
    for (int s = begin; s < end; ++s)
      if (stageToRank[s] == rank) {
        mem += c.memoryDelta(ActionKind::F, s);
        peak = std::max(peak, mem);
      }
    for (int s = end - 1; s >= begin; --s)
      if (stageToRank[s] == rank) {
        mem += c.memoryDelta(ActionKind::B, s);
        peak = std::max(peak, mem);
        mem += c.memoryDelta(ActionKind::W, s);
      }
  }
  return peak;
}

double zb::sched::minimumMemory(const Problem &problem,
                                llvm::ArrayRef<int> stageToRank,
                                int *worstRank, int directions) {
  double worst = 0;
  for (int r = 0; r < problem.numRanks; ++r) {
    double peak = minimumMemoryOfRank(problem, stageToRank, r, directions);
    if (r == 0 || peak > worst) {
      worst = peak;
      if (worstRank)
        *worstRank = r;
    }
  }
  return worst;
}
