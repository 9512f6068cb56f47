//===- Bounds.cpp - Lower bounds on the stage span ------------------------===//
//
// A combinatorial lower bound on the stage span of every V = 1 schedule
// (any order of the passes on every stage, not only the microbatch order the
// ILP of Appendix G assumes). For stage j let
//   chain(j) = sum_{k>j} (T_comm(k-1) + T_F(k)) + sum_{k>j} (T_B(k) +
//   T_comm(k))
// be the shortest time from the end of F(j,i) to the start of B(j,i) (the
// forward and backward chain through the later stages).
//
//  - Start: no B can start on stage j before t0 + T_F(j) + chain(j) (t0 = the
//    start of the stage's first pass, an F); before its first B the stage can
//    only run F passes, at most nF = min(m, floor(L / M_B)) of them (nothing
//    frees memory before a B). Idle >= T_F + chain - nF T_F.
//  - End: when the stage's last F, of microbatch i, ends, a microbatches have
//    had their F but not their B (i among them) and b their B but not their
//    W, with a M_B + b M_W <= L. Until B(j,i) can start (chain(j) later) the
//    stage can only run the other a-1 B passes and a-1+b W passes: idle >=
//    chain - max_{a,b} ((a-1)(T_B + T_W) + b T_W).
// The two idle periods are disjoint when m > nF (the first B comes before the
// last F); otherwise only the larger counts. span(j) >= work(j) + idle(j).
//
//  - Load of a later stage k > j: stage k's first pass starts no earlier
//    than D(j,k) = sum_{j<=l<k} (T_F(l) + T_comm(l)) after stage j's (it is
//    an F whose input passed through F on stages j..k-1). Its last B ends no
//    earlier than its m F and m B passes and the x W passes that memory
//    forces before that B (just before it, the stage holds M_B plus M_W for
//    each of the m-1 earlier B whose W has not run: x >= m-1-(L-M_B)/M_W).
//    The last B on stage j ends at least the backward chain later (the
//    microbatch whose B ends last on stage k still needs B on k-1..j), then
//    a W: span(j) >= D(j,k) + m (T_F(k) + T_B(k)) + x T_W(k)
//                    + sum_{j<=l<k} (T_comm(l+1) + T_B(l)) + T_W(j).
//
//===----------------------------------------------------------------------===//

#include "zb/Schedule/Schedule.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace zb::sched;

double zb::sched::stageSpanLowerBound(const Problem &problem,
                                      llvm::ArrayRef<double> limits) {
  int p = problem.numRanks, m = problem.numMicrobatches;
  StageCosts c = resolveStageCosts(problem, interleavedStageToRank(p, 1));
  double best = 0;
  for (int j = 0; j < p; ++j) {
    double work = m * (c.f[j] + c.b[j] + c.w[j]);
    double chain = 0;
    for (int k = j + 1; k < p; ++k)
      chain += c.comm[k - 1] + c.f[k] + c.b[k] + c.comm[k];
    double limit = j < (int)limits.size() && limits[j] > 0
                       ? limits[j]
                       : std::numeric_limits<double>::infinity();
    // A tiny tolerance so that a limit of exactly k M_B allows k passes.
    auto fitCount = [&](double budget, double unit) -> long {
      if (unit <= 0 || std::isinf(budget))
        return m;
      return std::min<long>(
          m, (long)std::floor(budget / unit + StageCosts::kFitTolerance));
    };
    long nF = fitCount(limit, c.memB[j]);
    double idleStart = std::max(0.0, c.f[j] + chain - nF * c.f[j]);
    double fill = 0;
    for (long a = 1; a <= std::min<long>(m, std::max<long>(1, nF)); ++a) {
      double left = limit - a * c.memB[j];
      long b = std::min<long>(m - a, fitCount(std::max(0.0, left), c.memW[j]));
      if (left < -StageCosts::kFitTolerance * std::max(1.0, limit))
        break;
      fill = std::max(fill, (a - 1) * (c.b[j] + c.w[j]) + b * c.w[j]);
    }
    double idleEnd = std::max(0.0, chain - fill);
    double idle = m > nF ? idleStart + idleEnd : std::max(idleStart, idleEnd);
    best = std::max(best, work + idle);
    double delay = 0, back = 0;
    for (int k = j + 1; k < p; ++k) {
      delay += c.f[k - 1] + c.comm[k - 1];
      back += c.comm[k] + c.b[k - 1];
      double limitK = k < (int)limits.size() && limits[k] > 0
                          ? limits[k]
                          : std::numeric_limits<double>::infinity();
      double forcedW = 0;
      if (!std::isinf(limitK) && c.memW[k] > 0)
        forcedW = std::max(
            0.0, std::ceil((m - 1) - (limitK - c.memB[k]) / c.memW[k] - 1e-9));
      forcedW = std::min<double>(forcedW, m - 1);
      best = std::max(best, delay + m * (c.f[k] + c.b[k]) + forcedW * c.w[k] +
                                back + c.w[j]);
    }
  }
  return best;
}
