//===- DualPipeV.cpp - DeepSeek's DualPipeV and DualPipe ------------------===//
//
// DualPipeV: the V-shaped ("cut-in-half") variant of DualPipe, the
// bidirectional pipeline of the DeepSeek-V3 technical report (DeepSeek-AI,
// arXiv:2412.19437, Section 3.2.1 and Table 2) as the DualPipe repository
// (github.com/deepseek-ai/DualPipe, dualpipev.py) runs it, in the per-rank
// order PyTorch's torch.distributed.pipelining.ScheduleDualPipeV generates
// (its _calculate_single_rank_operations, torch 2.15; written from reading
// that order and the CSVs of test/Schedule/Inputs/pytorch, not copied).
//
// Placement: the V of ZB-V (vShapeStageToRank, V = 2 chunks per rank): rank
// r holds stage r ("down", chunk 0, the forward going down the ranks) and
// stage 2p-1-r ("up", chunk 1, coming back up; its backward runs first).
//
// Per rank r of p, m >= 2p microbatches, in eight phases:
//   1. warm-up      2(p-r-1) x  F(down)
//   2.              r+1      x  F(down) F(up)
//   3.              p-r-1    x  B(up) W(up) F(up)                 (zero bubble)
//   4. steady       m-2p+r+1 x  F(down) B(up) W(up)  F(up) B(down) W(down)
//   5.              p-r-1    x  B(up) W(up)          F(up) B(down) W(down)
//   6. cool-down    r+1      x  B(up) B(down), the first half of them with
//                               their W right after (a full backward), the
//                               second half split: their W queued
//   7.              p-r-1    x  oldest queued W, B(down) (W queued)
//   8.              r+1      x  oldest queued W
// In phases 4 and 5 the pair "F(x) B(y) W(y)" is PyTorch's OVERLAP_F_B (the
// forward of one microbatch and the full backward of another issued together
// so that one's communication hides behind the other's compute), in the
// order zb's CSV reader gives the overlapped cell. The builder marks each
// such F and the B after it as an overlapped F&B pair (Schedule::fbPairs:
// the index of the F), exactly the cells PyTorch writes as OVERLAP_F_B; the
// last rank's first steady F(down) and B(up) are not overlapped in PyTorch
// (they run back to back anyway) and not marked. zb-sched costs a pair with
// Problem::fbOverlap (--fb-overlap alpha: max(T_F, T_B) + (1 - alpha)
// min(T_F, T_B)); the compiler and runtime run its passes one after the
// other. With --local-search the order changes and no pair is marked. The split of phase 6 starts at its
// iteration (r+1)/2 (integer division): before that iteration's B(up) on odd
// ranks, between its B(up) and B(down) on even ranks.
//
// Microbatches run in order on every stage: the k-th F (B, W) of a stage is
// microbatch k. The order does not depend on the costs; with T_F = T_B = T_W
// and T_comm = 0 it leaves a bubble below DeepSeek's published DualPipeV
// bound (PP/2 - 1)(F&B + B - 3W) per rank (PP = 2p stages, F&B = F + B for
// passes that run back to back, F&B = the pair's max(F, B) + (1 - alpha)
// min(F, B) plus its W with --fb-overlap alpha; see
// unittests/Schedule/DualPipeVTest.cpp).
// BuildOptions::localSearch (zb-sched --local-search) improves the order
// beyond PyTorch's within the same per-rank activation memory.
//
// DualPipe (DeepSeek's dualpipe.py, DualPipe.step) is DualPipeV unfolded:
// p ranks (p even), the model in p stages, microbatches 0..m/2-1 going down
// (model stage s on rank s) and m/2..m-1 going up (model stage s on rank
// p-1-s, a replica with its own parameters; Schedule::directions = 2). Its
// phases are DualPipeV's with p/2 ranks and m/2 microbatches per direction:
// rank r runs the order of DualPipeV's rank h = min(r, p-1-r), with chunk 0
// the direction whose input is nearer (down on the first half of the ranks,
// up on the second) and chunk 1 the other. Both routes are the V-shape
// mapping of 2p global stages cut at the bottom of the V: route 0 is stages
// 0..p-1 (stage s on rank s), route 1 stages p..2p-1 (stage p+s, model stage
// s, on rank p-1-s). With T_comm = 0 the timeline equals DualPipeV's on p/2
// ranks (each DualPipe rank and its mirror do what one DualPipeV rank does,
// each for one direction), hence DeepSeek's table gives both one bubble.
//
//===----------------------------------------------------------------------===//

#include "Builders.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <deque>

using namespace zb::sched;

namespace {

/// One rank's order under construction: the next microbatch of every pass
/// kind on the rank's two stages, and the W passes of split backwards in the
/// order their B ran.
class RankOrder {
public:
  RankOrder(std::vector<Action> &out, int down, int up)
      : out(out), down(down), up(up) {}

  void forward(int stage) {
    out.push_back({ActionKind::F, stage, next(stage).f++});
  }
  /// A full backward: B and its W right after it.
  void fullBackward(int stage) {
    int i = next(stage).b++;
    out.push_back({ActionKind::B, stage, i});
    out.push_back({ActionKind::W, stage, i});
  }
  /// An overlapped F&B pair (Schedule::fbPairs): the forward of \p fStage
  /// and the full backward of \p bStage, the F marked with the B after it.
  void overlapped(int fStage, int bStage, std::vector<int> &pairs) {
    pairs.push_back(static_cast<int>(out.size()));
    forward(fStage);
    fullBackward(bStage);
  }
  /// A split backward: B now, its W queued (popOldestW).
  void splitBackward(int stage) {
    int i = next(stage).b++;
    out.push_back({ActionKind::B, stage, i});
    pendingW.push_back({ActionKind::W, stage, i});
  }
  void backward(int stage, bool split) {
    split ? splitBackward(stage) : fullBackward(stage);
  }
  /// The oldest queued W, if any.
  void popOldestW() {
    if (pendingW.empty())
      return;
    out.push_back(pendingW.front());
    pendingW.pop_front();
  }

private:
  struct Next {
    int f = 0, b = 0;
  };
  Next &next(int stage) { return stage == down ? nextDown : nextUp; }

  std::vector<Action> &out;
  int down, up;
  Next nextDown, nextUp;
  std::deque<Action> pendingW;
};

} // namespace

/// Rank r's DualPipeV order for p ranks and m microbatches, its chunk 0
/// named stage \p down and its chunk 1 stage \p up (phases 1-8 above);
/// the indices of its overlapped F&B pairs in \p pairs.
static std::vector<Action> dualPipeVOrder(int p, int m, int r, int down,
                                          int up, std::vector<int> &pairs) {
  std::vector<Action> out;
  pairs.clear();
  RankOrder o(out, down, up);
  // 1-2. Warm-up: the forward of chunk 0, then both chunks.
  for (int k = 0; k < 2 * (p - r - 1); ++k)
    o.forward(down);
  for (int k = 0; k < r + 1; ++k) {
    o.forward(down);
    o.forward(up);
  }
  // 3. The first backwards of chunk 1, split with the W right after.
  for (int k = 0; k < p - r - 1; ++k) {
    o.splitBackward(up);
    o.popOldestW();
    o.forward(up);
  }
  // 4. Steady: F of one chunk overlapped with the full backward of the
  // other (OVERLAP_F_B), except the last rank's first F(down) B(up) (PyTorch
  // ScheduleDualPipeV; DeepSeek's DualPipe.step, "We don't overlap these
  // two chunks to further reduce bubble size", on its middle ranks).
  for (int k = 0; k < m - 2 * p + r + 1; ++k) {
    if (k == 0 && r == p - 1) {
      o.forward(down);
      o.fullBackward(up);
    } else {
      o.overlapped(down, up, pairs);
    }
    o.overlapped(up, down, pairs);
  }
  // 5. Chunk 0's forwards are done.
  for (int k = 0; k < p - r - 1; ++k) {
    o.fullBackward(up);
    o.overlapped(up, down, pairs);
  }
  // 6. Cool-down: the backwards left, split from iteration (r+1)/2 on.
  int half = (r + 1) / 2;
  bool split = false;
  for (int k = 0; k < r + 1; ++k) {
    if (k == half && r % 2 == 1)
      split = true;
    o.backward(up, split);
    if (k == half && r % 2 == 0)
      split = true;
    o.backward(down, split);
  }
  // 7-8. Chunk 0's last backwards behind the queued W, then the rest.
  for (int k = 0; k < p - r - 1; ++k) {
    o.popOldestW();
    o.splitBackward(down);
  }
  for (int k = 0; k < r + 1; ++k)
    o.popOldestW();
  return out;
}

/// Local search on the order (BuildOptions::localSearch): beyond PyTorch's
/// and DeepSeek's order, never above the activation memory it holds on each
/// rank (nor the problem's limit).
static void improve(const Problem &problem, Schedule &s,
                    const BuildOptions &options) {
  if (!options.localSearch)
    return;
  std::vector<double> limits = simulate(problem, s).peakMemory;
  for (int r = 0; r < problem.numRanks; ++r)
    if (problem.memoryLimitOf(r) > 0)
      limits[r] = std::min(limits[r], problem.memoryLimitOf(r));
  // The search moves passes one by one: it searches (and returns) the order
  // without the F&B pairs, which no longer is PyTorch's.
  s.fbPairs.clear();
  s.perRank = detail::improveByLocalSearch(problem, s, limits,
                                          options.searchEvaluations);
}

/// An empty schedule of `kind` on the V-shape mapping of p ranks (both
/// DualPipeV's V and DualPipe's two routes), split backward, costed by stage
/// span, with p empty rank orders.
static Schedule vPlaced(ScheduleKind kind, int p, int directions) {
  Schedule s;
  s.name = scheduleName(kind).str();
  s.stageToRank = vShapeStageToRank(p);
  s.directions = directions;
  s.costConvention = CostConvention::StageSpan;
  s.fusedBackward = false;
  s.perRank.resize(p);
  return s;
}

llvm::Expected<Schedule> detail::buildDualPipeV(const Problem &problem,
                                                const BuildOptions &options) {
  int p = problem.numRanks, m = problem.numMicrobatches;
  if (m < 2 * p)
    return llvm::createStringError(
        llvm::formatv("dualpipev needs at least 2p={0} microbatches (one per "
                      "stage of the V), got m={1}",
                      2 * p, m)
            .str());
  Schedule s = vPlaced(ScheduleKind::DualPipeV, p, 1);
  s.fbPairs.resize(p);
  for (int r = 0; r < p; ++r)
    s.perRank[r] = dualPipeVOrder(p, m, r, r, 2 * p - 1 - r, s.fbPairs[r]);
  improve(problem, s, options);
  return s;
}

llvm::Expected<Schedule> detail::buildDualPipe(const Problem &problem,
                                               const BuildOptions &options) {
  int p = problem.numRanks, m = problem.numMicrobatches;
  if (p % 2 != 0)
    return llvm::createStringError(
        llvm::formatv("dualpipe needs an even number of ranks (its two "
                      "directions meet in the middle), got p={0}",
                      p)
            .str());
  if (m % 2 != 0 || m < 2 * p)
    return llvm::createStringError(
        llvm::formatv("dualpipe needs an even number of microbatches, at "
                      "least 2p={0} (half of them in each direction), got "
                      "m={1}",
                      2 * p, m)
            .str());
  Schedule s = vPlaced(ScheduleKind::DualPipe, p, 2);
  s.fbPairs.resize(p);
  const int half = p / 2, halfM = m / 2;
  for (int r = 0; r < p; ++r) {
    // Rank r of the first half runs its down stage r as DualPipeV's chunk 0
    // and the up route's stage there (model stage p-1-r) as chunk 1; its
    // mirror p-1-r the other way round (DualPipe.step's phases 0 and 1).
    const bool first = r < half;
    const int h = first ? r : p - 1 - r;
    const int downStage = r, upStage = 2 * p - 1 - r;
    std::vector<Action> order =
        dualPipeVOrder(half, halfM, h, 0, 1, s.fbPairs[r]);
    for (Action &a : order) {
      const bool down = (a.stage == 0) == first;
      a.stage = down ? downStage : upStage;
      a.microbatch += down ? 0 : halfM;
    }
    s.perRank[r] = std::move(order);
  }
  improve(problem, s, options);
  return s;
}
