//===- ZBV.cpp - The ZB-V construction ------------------------------------===//
//
// ZB-V as its authors build it (the ZB-V note and the construction its
// authors describe, docs/references.md; written from that description), extended
// to per-stage costs and memory and per-rank memory limits.
//
// Every rank i holds two chunks: F runs chunk 0 (stage i, forward going down
// the ranks) then chunk 1 (stage 2p-1-i, coming back up); B runs the V in
// reverse: first "B-chunk 0" = stage 2p-1-i (going down from rank 0), then
// "B-chunk 1" = stage i (coming back up). Each B queues its W.
//
//  1. Warm-up: one F0 per rank; then from the last rank back, rank i adds F0
//     waves on ranks 0..i while memory (reserving both chunks' M_B for i+1
//     microbatches), time (before F1 arrives from rank i+1) and m allow, then
//     runs its first F1. Ranks then catch up with alternating F0/F1 waves
//     from the last rank back.
//  2. Main loop, 2m rounds of one B then one F per rank. B: the second
//     B-chunk when its upstream is ready (or the first B-chunk is done),
//     placed in descending rank order, the others ascending. F: F1 when its
//     upstream is ready, else F0. Before each pass, Ws are flushed when
//     memory requires, filled while the pass's input is in flight, and one
//     more W is added when the remaining gap exceeds the rank's allowed
//     bubble (B-side and F-side variants: fill_b, fill_f).
//  3. Refinement: the construction is rerun with the previous run's per-rank
//     bubbles as the allowances ("approved bubble") while that lowers the
//     largest bubble; all four settings of fill_f x fill_b are tried and the
//     smallest largest bubble kept.
//
// Times are the simulator's: every pass starts when its rank is free and its
// input has arrived (T_comm between ranks, none between a rank's chunks), so
// the returned order simulates to the bubbles computed here.
//
//===----------------------------------------------------------------------===//

#include "Builders.h"

#include <algorithm>
#include <array>
#include <deque>
#include <optional>

using namespace zb::sched;

namespace {

/// F (0), B (1), W (2) as the construction indexes them.
enum Cat { CatF = 0, CatB = 1, CatW = 2 };

struct Attempt {
  std::vector<std::vector<Action>> perRank;
  std::vector<double> bubble; // per rank, after its first F
  double maxBubble = 0;
};

class ZBVConstruction {
public:
  ZBVConstruction(int p, int m, const StageCosts &c,
                  const std::vector<double> &limits)
      : p(p), m(m), c(c), limits(limits) {}

  /// One run of the construction; nullopt when it cannot respect the
  /// memory limits (or gets stuck).
  std::optional<Attempt> run(bool fillF, bool fillB,
                             const std::vector<double> &approved);

private:
  int p, m;
  const StageCosts &c;
  const std::vector<double> &limits;

  // State of one run.
  std::vector<std::array<int, 6>> count; // [rank][cat * 2 + chunk]
  std::vector<double> endTime;           // by id(); -1: not yet placed
  std::vector<double> curTime, mem, stageBubble, approved;
  double maxApproved = -1;
  std::vector<std::deque<int>> pendingW; // chunk of each queued W
  std::vector<std::vector<Action>> order;
  bool failed = false;

  /// Global stage of (cat, chunk) on rank i: F chunks are model chunks,
  /// B/W chunks run the V backwards.
  int stageOf(int cat, int chunk, int i) const {
    bool first = cat == CatF ? chunk == 0 : chunk == 1;
    return first ? i : 2 * p - 1 - i;
  }
  ActionKind kindOf(int cat) const {
    return cat == CatF ? ActionKind::F
                       : cat == CatB ? ActionKind::B : ActionKind::W;
  }
  double cost(int cat, int chunk, int i) const {
    return c.cost(kindOf(cat), stageOf(cat, chunk, i));
  }
  double memDelta(int cat, int chunk, int i) const {
    return c.memoryDelta(kindOf(cat), stageOf(cat, chunk, i));
  }
  int id(int cat, int chunk, int i, int mb) const {
    return ((cat * 2 + chunk) * p + i) * m + mb;
  }
  double end(int cat, int chunk, int i, int mb) const {
    return mb < m ? endTime[id(cat, chunk, i, mb)] : -1;
  }
  /// The pass the F/B (cat, chunk) on rank i waits for on another rank, and
  /// the latency of that message; rank -1 when it waits for none.
  std::pair<int, double> upstream(int cat, int chunk, int i) const {
    // F chunk 0 and B-chunk 0 go down the ranks, the others up.
    int from = chunk == 0 ? i - 1 : i + 1;
    if (from < 0 || from >= p)
      return {-1, 0.0};
    return {from, c.comm[stageOf(cat, chunk, from)]};
  }
  /// End of the upstream pass of the next (cat, chunk) on rank i plus its
  /// latency; as the reference does, with no upstream this reads the last
  /// pass of the step (not placed until the end, so -1 + its latency).
  double upstreamArrival(int cat, int chunk, int i) const {
    auto [from, lag] = upstream(cat, chunk, i);
    if (from < 0)
      return end(CatW, 1, p - 1, m - 1) + c.comm[stageOf(CatF, 1, p - 1)];
    return end(cat, chunk, from, count[i][cat * 2 + chunk]) + lag;
  }
  bool hasUpstream(int cat, int chunk, int i) const {
    return upstream(cat, chunk, i).first >= 0;
  }
  double maxStageBubble(int rank = -1) const {
    double b = *std::max_element(stageBubble.begin(), stageBubble.end());
    b = std::max(b, 0.0);
    if (rank >= 0)
      b = std::max(b, maxApproved - approved[rank]);
    return b;
  }

  void put(int cat, int chunk, int i);
  void putW(int i) {
    if (pendingW[i].empty()) {
      failed = true;
      return;
    }
    int chunk = pendingW[i].front();
    pendingW[i].pop_front();
    put(CatW, chunk, i);
  }
  /// Ws while the next pass's input is in flight, then one more when the
  /// remaining gap exceeds the rank's allowed bubble (if `extra`).
  void fillW(int cat, int chunk, int i, bool extra) {
    bool up = hasUpstream(cat, chunk, i);
    while (!failed && !pendingW[i].empty() && up &&
           upstreamArrival(cat, chunk, i) >=
               curTime[i] + cost(CatW, pendingW[i].front(), i))
      putW(i);
    if (!failed && extra && !pendingW[i].empty() &&
        upstreamArrival(cat, chunk, i) - curTime[i] >
            maxStageBubble(i) - stageBubble[i])
      putW(i);
  }
  /// Ws until `delta` more fits the rank's limit.
  void flushForMemory(int i, double delta) {
    while (!failed && !StageCosts::fits(mem[i] + delta, limits[i]))
      putW(i);
  }
  void warmUp();
  void mainLoop(bool fillF, bool fillB);
};

void ZBVConstruction::put(int cat, int chunk, int i) {
  if (failed)
    return;
  int mb = count[i][cat * 2 + chunk];
  double dM = memDelta(cat, chunk, i);
  if (mb >= m || !StageCosts::fits(mem[i] + dM, limits[i])) {
    failed = true;
    return;
  }
  // Same-rank predecessor: F1 after F0, B-chunk 0 after F1, B-chunk 1 after
  // B-chunk 0, W after its B (all earlier on this rank, so no time lag).
  int prev = cat * 2 + chunk - 1;
  if (cat == CatW)
    prev = 2 + chunk;
  if (prev >= 0 && end(prev / 2, prev % 2, i, mb) < 0) {
    failed = true;
    return;
  }
  double noBubble = curTime[i] + cost(cat, chunk, i);
  double t = noBubble;
  if (cat != CatW) {
    auto [from, lag] = upstream(cat, chunk, i);
    if (from >= 0) {
      double e = end(cat, chunk, from, mb);
      if (e < 0) {
        failed = true;
        return;
      }
      t = std::max(t, e + lag + cost(cat, chunk, i));
    }
  }
  if (count[i][0] > 0)
    stageBubble[i] += t - noBubble;
  endTime[id(cat, chunk, i, mb)] = t;
  curTime[i] = t;
  mem[i] += dM;
  order[i].push_back({kindOf(cat), stageOf(cat, chunk, i), mb});
  if (cat == CatB)
    pendingW[i].push_back(chunk);
  ++count[i][cat * 2 + chunk];
}

void ZBVConstruction::warmUp() {
  for (int i = 0; i < p; ++i)
    put(CatF, 0, i);
  for (int i = p - 1; i >= 0 && !failed; --i) {
    if (i == p - 1) {
      put(CatF, 1, i);
      continue;
    }
    double arrival = end(CatF, 1, i + 1, 0) + upstream(CatF, 1, i).second;
    double reserve = (memDelta(CatF, 0, i) + memDelta(CatF, 1, i)) * (i + 1);
    while (!failed && StageCosts::fits(mem[i] + reserve, limits[i]) &&
           curTime[i] + cost(CatF, 0, i) <= arrival && count[i][0] < m)
      for (int j = 0; j <= i; ++j)
        if (count[j][0] < m)
          put(CatF, 0, j);
    put(CatF, 1, i);
  }
  // The later ranks catch up with alternating F0 / F1 waves.
  int chunk = 0;
  for (int i = 1; i < p && !failed; ++i) {
    auto behind = [&] {
      int mine = count[i][0] + count[i][1];
      int prev = count[i - 1][0] + count[i - 1][1];
      return mine < prev || (count[i][1] <= count[i - 1][1] &&
                             count[i - 1][1] < m);
    };
    for (int guard = 0; !failed && behind(); ++guard) {
      if (guard > 4 * m) {
        failed = true;
        break;
      }
      for (int j = p - 1; j >= i && !failed; --j)
        if (count[j][chunk] < m)
          put(CatF, chunk, j);
      chunk = 1 - chunk;
    }
  }
}

void ZBVConstruction::mainLoop(bool fillF, bool fillB) {
  for (int round = 0; round < 2 * m && !failed; ++round) {
    // Room for a B on every rank.
    for (int i = 0; i < p && !failed; ++i)
      flushForMemory(i, std::max(memDelta(CatB, 0, i), memDelta(CatB, 1, i)));
    // Which B-chunk each rank runs; the second ones in descending rank
    // order (each waits for the rank above), then the first ones ascending.
    std::vector<std::pair<int, int>> bRanks;
    std::vector<int> first, second;
    for (int i = 0; i < p; ++i) {
      if (count[i][3] >= count[i][2])
        first.push_back(i);
      else if (i == p - 1 || end(CatB, 1, i + 1, count[i][3]) >= 0 ||
               count[i][2] >= m)
        second.push_back(i);
      else
        first.push_back(i);
    }
    for (auto it = second.rbegin(); it != second.rend(); ++it)
      bRanks.push_back({*it, 1});
    for (int i : first)
      bRanks.push_back({i, 0});
    for (auto [i, chunk] : bRanks) {
      if (failed)
        break;
      fillW(CatB, chunk, i, /*extra=*/chunk == 1 || fillB);
      put(CatB, chunk, i);
    }
    // One F per rank: F1 when its upstream is ready, else F0.
    for (int i = 0; i < p && !failed; ++i) {
      if (count[i][1] >= m)
        continue;
      int item = -1;
      if (count[i][1] >= count[i][0])
        item = 0;
      else if (i == p - 1 || end(CatF, 1, i + 1, count[i][1]) >= 0)
        item = 1;
      else if (count[i][0] < m &&
               (i == 0 || end(CatF, 0, i - 1, count[i][0]) >= 0))
        item = 0;
      if (item < 0)
        continue;
      flushForMemory(i, memDelta(CatF, item, i));
      fillW(CatF, item, i, /*extra=*/fillF);
      put(CatF, item, i);
    }
  }
  for (int i = 0; i < p && !failed; ++i)
    while (!failed && !pendingW[i].empty())
      putW(i);
}

std::optional<Attempt>
ZBVConstruction::run(bool fillF, bool fillB,
                     const std::vector<double> &approvedBubble) {
  count.assign(p, {0, 0, 0, 0, 0, 0});
  endTime.assign(6 * p * m, -1.0);
  curTime.assign(p, 0.0);
  mem.assign(p, 0.0);
  stageBubble.assign(p, 0.0);
  approved = approvedBubble;
  maxApproved = *std::max_element(approved.begin(), approved.end());
  pendingW.assign(p, {});
  order.assign(p, {});
  failed = false;
  warmUp();
  mainLoop(fillF, fillB);
  for (int i = 0; i < p && !failed; ++i)
    for (int k = 0; k < 6; ++k)
      failed |= count[i][k] != m;
  if (failed)
    return std::nullopt;
  Attempt a;
  a.perRank = std::move(order);
  a.bubble = stageBubble;
  a.maxBubble = maxStageBubble();
  return a;
}

} // namespace

/// The construction with its refinement and the four fill settings at one
/// set of limits; the attempt with the smallest largest bubble.
static std::optional<Attempt> bestAttempt(int p, int m, const StageCosts &costs,
                                          const std::vector<double> &limits) {
  ZBVConstruction zbv(p, m, costs, limits);
  std::optional<Attempt> best;
  for (bool fillB : {true, false})
    for (bool fillF : {true, false}) {
      // The refinement: rerun with this run's bubbles as the allowances
      // while that lowers the largest bubble.
      std::vector<double> approved(p, -1.0);
      std::optional<Attempt> cur = zbv.run(fillF, fillB, approved);
      for (int k = 0; cur && k < 64; ++k) {
        std::optional<Attempt> next = zbv.run(fillF, fillB, cur->bubble);
        if (!next || !(next->maxBubble < cur->maxBubble))
          break;
        cur = std::move(next);
      }
      if (cur && (!best || cur->maxBubble < best->maxBubble))
        best = std::move(cur);
    }
  return best;
}

std::optional<std::vector<std::vector<Action>>>
detail::constructZBV(const Problem &problem, const StageCosts &costs,
                     const std::vector<double> &limits) {
  std::optional<Attempt> best =
      bestAttempt(problem.numRanks, problem.numMicrobatches, costs, limits);
  if (!best)
    return std::nullopt;
  return std::move(best->perRank);
}
