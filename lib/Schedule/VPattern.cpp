//===- VPattern.cpp - V-Half and V-Min from their building blocks ---------===//
//
// V-Half and V-Min of "Pipeline Parallelism with Controllable Memory" (Qi et
// al., 2024; docs/references.md), as the authors describe their construction
// (written from that description):
//
//  1. A periodic pattern of 6 unit slots per microbatch. Rank i runs the
//     passes F(chunk 0), F(chunk 1), B-chunk 0 (= stage 2p-1-i, first in the
//     backward V) and B-chunk 1 (= stage i) of microbatch k in the slots
//     offset + 6k, with the offsets
//       V-Min:  (i, 2p-1-i, 2p+d+i, 4p+d-1-i),     d = 2 if p % 3 == 0 else 0
//       V-Half: (2i, 3p-2-i, 3p+d+2i-1, 6p+d-i-2), d = 3 if p is even else 0.
//  2. W goes into the free slots after its B (putW).
//  3. A greedy reorder moves every pass (in slot order) to the earliest free
//     slot after its dependencies that does not raise the peak activation
//     memory of the pattern, first with the Ws in place, then without them
//     (Ws re-placed afterwards); after each, the slots are squeezed (every
//     pass as early as its dependencies allow, unit times).
//  4. W is split per chunk and the rank orders read off the slots; the real
//     costs time them (the simulator).
//
//===----------------------------------------------------------------------===//

#include "Builders.h"

#include <algorithm>
#include <array>
#include <optional>
#include <tuple>

using namespace zb::sched;

namespace {

/// Slot of every pass: lists[rank][type][microbatch]. Types 0..3: F0, F1,
/// B-chunk 0, B-chunk 1; 4 (and 5 when W is split per chunk): W.
using Lists = std::vector<std::vector<std::vector<int>>>;

class VPattern {
public:
  VPattern(int p, int m) : p(p), m(m) {}

  std::optional<Lists> build(bool half);

private:
  int p, m;

  static int lastSlot(const std::vector<std::vector<int>> &rank) {
    int last = 0;
    for (const auto &l : rank)
      if (!l.empty())
        last = std::max(last, l.back());
    return last;
  }
  /// Appends the W list(s): a W (of the chunk with pending Ws, chunk 0
  /// first when split) in every free slot after its B, the rest after the
  /// last pass.
  static void putW(std::vector<std::vector<int>> &rank, bool split);
  /// Peak activation memory of one rank's slots: F +1, B 0, W -1 (Ws in
  /// free slots when the lists hold none).
  static int memoryPeak(const std::vector<std::vector<int>> &rank);
  /// Every pass as early as its dependencies allow with unit times and no
  /// latency, in the slot order; nullopt if a dependency comes later.
  std::optional<Lists> squeeze(const Lists &lists) const;
  std::optional<Lists> reorder(Lists lists, bool considerW) const;
};

void VPattern::putW(std::vector<std::vector<int>> &rank, bool split) {
  int bound = lastSlot(rank);
  std::vector<int> typeAt(bound + 1, -1);
  for (int t = 0; t < 4; ++t)
    for (int s : rank[t])
      typeAt[s] = t;
  rank.resize(split ? 6 : 5);
  int pending[2] = {0, 0};
  int i = 0;
  for (; i <= bound; ++i) {
    int t = typeAt[i];
    if (t >= 0) {
      if (t >= 2)
        ++pending[split ? t - 2 : 0];
      continue;
    }
    for (int w = 0; w < 2; ++w)
      if (pending[w]) {
        rank[4 + w].push_back(i);
        --pending[w];
        break;
      }
  }
  // The reference continues from the last slot it visited.
  i = bound;
  for (int w = 0; w < 2; ++w)
    while (pending[w] > 0) {
      rank[4 + w].push_back(++i);
      --pending[w];
    }
}

int VPattern::memoryPeak(const std::vector<std::vector<int>> &rank) {
  static const int kMemory[6] = {1, 1, 0, 0, -1, -1};
  bool hasW = rank.size() > 4;
  int bound = lastSlot(rank);
  std::vector<int> typeAt(bound + 1, -1);
  for (size_t t = 0; t < rank.size(); ++t)
    for (int s : rank[t])
      typeAt[s] = t;
  int cur = 0, peak = 0, pendingW = 0;
  for (int i = 0; i <= bound; ++i) {
    int t = typeAt[i];
    if (t >= 0) {
      cur += kMemory[t];
      if (t == 2 || t == 3)
        ++pendingW;
    } else if (!hasW && pendingW) {
      --cur;
      --pendingW;
    }
    peak = std::max(peak, cur);
  }
  return peak;
}

/// The passes in the order the reference visits them: slot, rank, type,
/// microbatch.
static std::vector<std::array<int, 4>> slotOrder(const Lists &lists) {
  std::vector<std::array<int, 4>> all;
  for (size_t i = 0; i < lists.size(); ++i)
    for (size_t t = 0; t < lists[i].size(); ++t)
      for (size_t k = 0; k < lists[i][t].size(); ++k)
        all.push_back({lists[i][t][k], (int)i, (int)t, (int)k});
  std::sort(all.begin(), all.end());
  return all;
}

std::optional<Lists> VPattern::squeeze(const Lists &lists) const {
  int numTypes = lists[0].size();
  // end[rank][type][mb], -1 until computed.
  Lists end = lists;
  for (auto &rank : end)
    for (auto &l : rank)
      std::fill(l.begin(), l.end(), -1);
  std::vector<int> rankFree(p, 0);
  Lists start = end;
  for (auto [slot, i, t, k] : slotOrder(lists)) {
    int deps = rankFree[i];
    auto need = [&](int r, int tt, int kk) {
      int e = end[r][tt][kk];
      if (e < 0)
        return false;
      deps = std::max(deps, e);
      return true;
    };
    bool ok = true;
    if ((t == 0 || t == 2) && i > 0)
      ok &= need(i - 1, t, k);
    if ((t == 1 || t == 3) && i + 1 < p)
      ok &= need(i + 1, t, k);
    if (t > 0 && t < 4)
      ok &= need(i, t - 1, k);
    if (k > 0)
      ok &= need(i, t, k - 1);
    if (!ok)
      return std::nullopt;
    end[i][t][k] = deps + 1;
    start[i][t][k] = deps;
    rankFree[i] = deps + 1;
  }
  (void)numTypes;
  return start;
}

std::optional<Lists> VPattern::reorder(Lists lists, bool considerW) const {
  if (considerW)
    for (auto &rank : lists)
      putW(rank, /*split=*/false);
  int currentMem = 0;
  for (const auto &rank : lists)
    currentMem = std::max(currentMem, memoryPeak(rank));
  std::vector<std::vector<char>> occupied(p);
  for (int i = 0; i < p; ++i)
    occupied[i].assign(lastSlot(lists[i]) + 1, 0);
  int phase = 0;
  for (auto [nextTime, i, t, k] : slotOrder(lists)) {
    auto &rank = lists[i];
    auto occupy = [&] { occupied[i][rank[t][k]] = 1; };
    if (t == 3 && i == 0 && phase == 0)
      phase = 1;
    if (phase == 1) {
      if (t == 0 && k == m - 1)
        phase = 2;
      occupy();
      continue;
    }
    if (phase == 0 && !considerW) {
      occupy();
      continue;
    }
    int deps = -1;
    if ((t == 0 || t == 2) && i > 0)
      deps = std::max(deps, lists[i - 1][t][k]);
    if ((t == 1 || t == 3) && i + 1 < p)
      deps = std::max(deps, lists[i + 1][t][k]);
    if (t > 0 && t < 4)
      deps = std::max(deps, rank[t - 1][k]);
    if (t == 4) {
      std::vector<int> bs = rank[2];
      bs.insert(bs.end(), rank[3].begin(), rank[3].end());
      std::nth_element(bs.begin(), bs.begin() + k, bs.end());
      deps = std::max(deps, bs[k]);
    }
    if (k > 0)
      deps = std::max(deps, rank[t][k - 1]);
    ++deps;
    if (deps > nextTime)
      return std::nullopt;
    bool ok = false;
    for (int slot = deps; slot < nextTime && !ok; ++slot) {
      if (occupied[i][slot])
        continue;
      rank[t][k] = slot;
      ok = memoryPeak(rank) <= currentMem;
    }
    if (!ok)
      rank[t][k] = nextTime;
    occupy();
  }
  if (!considerW)
    for (auto &rank : lists)
      putW(rank, /*split=*/false);
  return squeeze(lists);
}

std::optional<Lists> VPattern::build(bool half) {
  Lists lists(p, std::vector<std::vector<int>>(4));
  for (int i = 0; i < p; ++i) {
    std::array<int, 4> offset;
    if (half) {
      int d = p % 2 == 0 ? 3 : 0;
      offset = {2 * i, 3 * p - 2 - i, 3 * p + d + 2 * i - 1, 6 * p + d - i - 2};
    } else {
      int d = p % 3 == 0 ? 2 : 0;
      offset = {i, 2 * p - 1 - i, 2 * p + d + i, 4 * p + d - 1 - i};
    }
    for (int t = 0; t < 4; ++t)
      for (int k = 0; k < m; ++k)
        lists[i][t].push_back(offset[t] + 6 * k);
  }
  auto strip = [](Lists l) {
    for (auto &rank : l)
      rank.resize(4);
    return l;
  };
  std::optional<Lists> r1 = reorder(lists, /*considerW=*/true);
  if (!r1)
    return std::nullopt;
  std::optional<Lists> r2 = reorder(strip(*r1), /*considerW=*/false);
  if (!r2)
    return std::nullopt;
  Lists out = strip(*r2);
  for (auto &rank : out)
    putW(rank, /*split=*/true);
  return out;
}

} // namespace

std::optional<std::vector<std::vector<Action>>>
detail::constructVPattern(const Problem &problem, bool half) {
  int p = problem.numRanks, m = problem.numMicrobatches;
  std::optional<Lists> lists = VPattern(p, m).build(half);
  if (!lists)
    return std::nullopt;
  std::vector<std::vector<Action>> perRank(p);
  for (int i = 0; i < p; ++i) {
    int first = i, second = 2 * p - 1 - i;
    // Type -> action: F0, F1, B-chunk 0, B-chunk 1, W-chunk 0, W-chunk 1.
    const std::pair<ActionKind, int> kinds[6] = {
        {ActionKind::F, first},  {ActionKind::F, second},
        {ActionKind::B, second}, {ActionKind::B, first},
        {ActionKind::W, second}, {ActionKind::W, first}};
    std::vector<std::tuple<int, int, int>> passes; // slot, type, mb
    for (int t = 0; t < 6; ++t)
      for (int k = 0; k < (int)(*lists)[i][t].size(); ++k)
        passes.push_back({(*lists)[i][t][k], t, k});
    std::sort(passes.begin(), passes.end());
    for (auto [slot, t, k] : passes)
      perRank[i].push_back({kinds[t].first, kinds[t].second, k});
  }
  return perRank;
}
