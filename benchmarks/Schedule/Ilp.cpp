//===- Ilp.cpp - ILP (Appendix G) bars ------------------------------------===//
//
// Prints, for every problem, the heuristic's and the ILP's stage span, the
// best bound (max of CBC's bound and the analytic bound, rounded up to the
// time grid), CBC's own bound and where it came from, the analytic bound,
// the gap, the wall time of buildSchedule("ilp") against its limit, and
// CBC's status, on
//   - p=4, m=8 problems with a 10 s limit (the bar: proven optimal in under
//     10 s): the 12 cost sets of the paper's Table 5 (its T_F, T_B, T_W,
//     T_comm, M_B, M_W) at p=4, m=8 and memory limits 1p and 2p (units of
//     p M_B), a few hand-picked cost profiles, and 20 random problems (seed
//     fixed: integer T_F, T_B in 1..12, T_W in 0..8, T_comm in 0..2, M_B=1,
//     M_W in {0.5, 1}, limit in {none, 1p, 1.5p, 2p});
//   - the paper's p=8, m=24 settings at 1p and 2p (the bar: within the time
//     limit, a schedule no worse than the heuristic, with CBC's bound and
//     gap printed).
// Usage: zb-bench-ilp [limit for the p=8 rows, s; default 60]
//                     [limit for the p=4 rows, s; default 10] [--p8-only]
//
//===----------------------------------------------------------------------===//

#include "Table5Data.h"
#include "zb/Schedule/Registry.h"
#include "zb/Schedule/Schedule.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

using namespace zb::sched;

namespace {
struct Tally {
  int rows = 0, proven = 0, provenInLimit = 0, worse = 0;
  double maxWall = 0, maxGap = 0;
};
} // namespace

static void run(llvm::StringRef label, const Problem &pr, double limit,
                Tally &tally) {
  BuildOptions options;
  options.timeLimitSeconds = limit;
  IlpReport rep;
  auto t0 = std::chrono::steady_clock::now();
  auto ilp = buildSchedule(pr, "ilp", options, &rep);
  double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  auto heur = buildSchedule(pr, "zb-auto");
  ++tally.rows;
  if (!ilp || !heur) {
    llvm::outs() << label << ": "
                 << (ilp ? llvm::toString(heur.takeError())
                         : llvm::toString(ilp.takeError()))
                 << "\n";
    ++tally.worse;
    return;
  }
  double h = simulate(pr, *heur).stageSpan;
  double o = simulate(pr, *ilp).stageSpan;
  if (o > h + 1e-9 || verify(pr, *ilp))
    ++tally.worse;
  tally.proven += rep.provenOptimal;
  tally.provenInLimit += rep.provenOptimal && wall <= limit;
  tally.maxWall = std::max(tally.maxWall, wall);
  tally.maxGap = std::max(tally.maxGap, rep.gap);
  std::string cbc = std::isfinite(rep.cbcBound)
                        ? llvm::formatv("{0,10:F1} {1,-8}", rep.cbcBound,
                                        rep.cbcBoundSource == "LP relaxation"
                                            ? "LP"
                                            : rep.cbcBoundSource)
                              .str()
                        : llvm::formatv("{0,10} {1,-8}", "-", "none").str();
  llvm::outs() << llvm::formatv(
      "{0,-40} heur {1,10:F1} ilp {2,10:F1} bound {3,10:F1} cbc {4} analytic "
      "{5,10:F1} gap {6,6:P2} {7,-6} wall {8,5:F1}/{9} s  {10}\n",
      label, h, o, rep.bestBound, cbc, rep.analyticBound, rep.gap,
      rep.provenOptimal ? "proven" : "open", wall, limit, rep.status);
  llvm::outs().flush();
}

static void summary(llvm::StringRef what, const Tally &t, double limit) {
  llvm::outs() << llvm::formatv(
      "{0}: {1} problems, {2} proven optimal ({3} within the {4} s limit), "
      "max gap {5:P2}, max wall {6:F1} s, {7} worse than the heuristic or "
      "failed\n",
      what, t.rows, t.proven, t.provenInLimit, limit, t.maxGap, t.maxWall,
      t.worse);
}

int main(int argc, char **argv) {
  double bigLimit = argc > 1 ? std::atof(argv[1]) : 60;
  double smallLimit = argc > 2 ? std::atof(argv[2]) : 10;
  bool p8Only = argc > 3 && std::strcmp(argv[3], "--p8-only") == 0;
  Tally small, big;
  auto smallProblem = [](double f, double b, double w, double c, double mW,
                         double limitP) {
    Problem pr;
    pr.numRanks = 4;
    pr.numMicrobatches = 8;
    pr.costF = {f};
    pr.costB = {b};
    pr.costW = {w};
    pr.costComm = {c};
    pr.memB = {1};
    pr.memW = {mW};
    pr.memoryLimit = limitP * 4;
    return pr;
  };
  if (!p8Only) {
    // The paper's cost sets at p=4, m=8, memory 1p and 2p.
    for (const table5::Row &row : table5::rows)
      for (double factor : {1.0, 2.0}) {
        Problem pr = table5::makeProblem(row);
        pr.numRanks = 4;
        pr.numMicrobatches = 8;
        pr.memoryLimit = factor * 4 * row.mB;
        run(llvm::formatv("{0} m={1} costs, p=4 m=8 {2}p", row.model, row.m,
                          factor)
                .str(),
            pr, smallLimit, small);
      }
    // Hand-picked profiles.
    struct Small {
      double f, b, w, c, limitP;
    } smalls[] = {{5, 6, 4, 1, 0},           {5, 6, 4, 1, 2},
                  {5, 6, 4, 1, 1.5},         {1, 1, 1, 0, 0},
                  {18.5, 18.1, 9.3, 0.6, 2}, {10, 12, 3, 2, 0},
                  {10, 12, 3, 2, 1}};
    for (const Small &s : smalls)
      run(llvm::formatv("p=4 m=8 F{0} B{1} W{2} c{3} lim {4}p", s.f, s.b, s.w,
                        s.c, s.limitP)
              .str(),
          smallProblem(s.f, s.b, s.w, s.c, 0.5, s.limitP), smallLimit, small);
    // Random problems.
    std::mt19937 rng(2024);
    const double limits[] = {0, 1, 1.5, 2};
    for (int k = 0; k < 20; ++k) {
      double f = 1 + rng() % 12, b = 1 + rng() % 12, w = rng() % 9,
             c = rng() % 3, mW = rng() % 2 ? 0.5 : 1.0, lim = limits[rng() % 4];
      run(llvm::formatv("rand{0} F{1} B{2} W{3} c{4} mW{5} lim {6}p", k, f, b,
                        w, c, mW, lim)
              .str(),
          smallProblem(f, b, w, c, mW, lim), smallLimit, small);
    }
    summary("p=4 m=8", small, smallLimit);
  }
  // The paper's p=8, m=24 rows at 1p and 2p.
  for (const table5::Row &row : table5::rows) {
    if (row.p != 8 || row.m != 24)
      continue;
    for (double factor : {1.0, 2.0}) {
      Problem pr = table5::makeProblem(row);
      pr.memoryLimit = factor * row.p * row.mB;
      run(llvm::formatv("{0} p=8 m=24 ({1}p)", row.model, factor).str(), pr,
          bigLimit, big);
    }
  }
  summary("p=8 m=24", big, bigLimit);
  return small.worse + big.worse == 0 ? 0 : 1;
}
