//===- Handcrafted.cpp - GPipe, 1F1B, 1F1B-I, ZB-H1, ZB-H2 ----------------===//
//
// The fixed-pattern schedules. Rank r of p runs stage r (V = 1) or stages
// r, r+p, ... (interleaved).
//
//===----------------------------------------------------------------------===//

#include "Builders.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace zb::sched;

static Schedule makeSchedule(ScheduleKind kind, const Problem &problem,
                             CostConvention convention, bool fused) {
  Schedule s;
  s.name = scheduleName(kind).str();
  s.perRank.resize(problem.numRanks);
  s.stageToRank = interleavedStageToRank(problem.numRanks, problem.numChunks);
  s.costConvention = convention;
  s.fusedBackward = fused;
  return s;
}

llvm::Expected<Schedule> detail::buildGPipe(const Problem &problem) {
  Schedule s = makeSchedule(ScheduleKind::GPipe, problem,
                            CostConvention::Makespan, true);
  int m = problem.numMicrobatches;
  for (int r = 0; r < problem.numRanks; ++r) {
    auto &list = s.perRank[r];
    for (int i = 0; i < m; ++i)
      list.push_back({ActionKind::F, r, i});
    for (int i = 0; i < m; ++i) {
      list.push_back({ActionKind::B, r, i});
      list.push_back({ActionKind::W, r, i});
    }
  }
  return s;
}

/// The 1F1B family of Section 2: rank r first runs `warmup` forward passes,
/// then alternates one F and one B; W is either fused with B or delayed until
/// `warmup + i >= wDelay` (ZB-H1: wDelay = p-1, ZB-H2: 2(p-1)), and the
/// remaining W passes close the schedule.
static void fillOneFOneB(Schedule &s, const Problem &problem, int warmupFactor,
                         bool fused) {
  int p = problem.numRanks, m = problem.numMicrobatches;
  int wDelay = (p - 1) * warmupFactor;
  for (int r = 0; r < p; ++r) {
    auto &list = s.perRank[r];
    int warmup = std::min((p - r - 1) * warmupFactor, m);
    int f = 0, w = 0;
    for (; f < warmup; ++f)
      list.push_back({ActionKind::F, r, f});
    for (int i = 0; i < m; ++i) {
      if (warmup + i < m)
        list.push_back({ActionKind::F, r, f++});
      list.push_back({ActionKind::B, r, i});
      if (fused || warmup + i >= wDelay)
        list.push_back({ActionKind::W, r, w++});
    }
    while (w < m)
      list.push_back({ActionKind::W, r, w++});
  }
}

llvm::Expected<Schedule> detail::build1F1B(const Problem &problem) {
  Schedule s = makeSchedule(ScheduleKind::OneFOneB, problem,
                            CostConvention::Makespan, true);
  fillOneFOneB(s, problem, 1, true);
  return s;
}

llvm::Expected<Schedule> detail::buildZBH1(const Problem &problem) {
  int p = problem.numRanks, m = problem.numMicrobatches;
  if (m < p)
    return llvm::createStringError(
        llvm::formatv("zb-h1 needs at least p={0} microbatches, got m={1}", p,
                      m)
            .str());
  Schedule s = makeSchedule(ScheduleKind::ZBH1, problem,
                            CostConvention::Makespan, false);
  fillOneFOneB(s, problem, 1, false);
  return s;
}

llvm::Expected<Schedule> detail::buildZBH2(const Problem &problem) {
  int p = problem.numRanks, m = problem.numMicrobatches;
  int need = std::max(1, 2 * p - 1);
  if (m < need)
    return llvm::createStringError(
        llvm::formatv("zb-h2 needs at least 2p-1={0} microbatches, got m={1}",
                      need, m)
            .str());
  Schedule s = makeSchedule(ScheduleKind::ZBH2, problem,
                            CostConvention::StageSpan, false);
  fillOneFOneB(s, problem, 2, false);
  return s;
}

/// Megatron-LM's interleaved 1F1B (Narayanan et al., 2021), as simulated for
/// the paper's Table 5: warm-up 2(p-r-1) + (V-1)p forward passes, then 1F1B
/// over the m*V chunk passes; microbatches go through the chunks in groups of
/// p; the backward pass is not split (B and W fused).
llvm::Expected<Schedule> detail::buildInterleaved1F1B(const Problem &problem) {
  int p = problem.numRanks, m = problem.numMicrobatches, v = problem.numChunks;
  if (m % p != 0)
    return llvm::createStringError(
        llvm::formatv("1f1b-i needs the number of microbatches to be a "
                      "multiple of p={0} (at least {0}), got m={1}",
                      p, m)
            .str());
  Schedule s = makeSchedule(ScheduleKind::Interleaved1F1B, problem,
                            CostConvention::Makespan, true);
  int total = m * v;
  auto forward = [&](int r, int k) {
    int chunk = (k / p) % v;
    int mb = (k / (p * v)) * p + k % p;
    return Action{ActionKind::F, chunk * p + r, mb};
  };
  auto backward = [&](int r, int k, ActionKind kind) {
    int chunk = v - 1 - (k / p) % v;
    int mb = (k / (p * v)) * p + k % p;
    return Action{kind, chunk * p + r, mb};
  };
  for (int r = 0; r < p; ++r) {
    auto &list = s.perRank[r];
    int warmup = std::min(2 * (p - r - 1) + (v - 1) * p, total);
    int f = 0;
    for (; f < warmup; ++f)
      list.push_back(forward(r, f));
    for (int i = 0; i < total; ++i) {
      if (warmup + i < total)
        list.push_back(forward(r, f++));
      list.push_back(backward(r, i, ActionKind::B));
      list.push_back(backward(r, i, ActionKind::W));
    }
  }
  return s;
}
