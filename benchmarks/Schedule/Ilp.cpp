//===- Ilp.cpp - ILP (Appendix G) bars ------------------------------------===//
//
// Prints CBC's status, bound and gap for the ILP on
//   - p=4, m=8 problems (the bar: proven optimal in under 10 s), and
//   - the paper's p=8, m=24 settings (the bar: within the time limit, a
//     schedule no worse than the heuristic, with CBC's bound and gap).
// Usage: zb-bench-ilp [time limit for the p=8 rows, seconds; default 60]
//
//===----------------------------------------------------------------------===//

#include "Table5Data.h"
#include "zb/Schedule/Schedule.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstdlib>

using namespace zb::sched;

static void run(llvm::StringRef label, const Problem &pr, double limit,
                int &misses) {
  BuildOptions options;
  options.timeLimitSeconds = limit;
  IlpReport rep;
  auto t0 = std::chrono::steady_clock::now();
  auto ilp = buildSchedule(pr, "ilp", options, &rep);
  double wall = std::chrono::duration<double>(
                    std::chrono::steady_clock::now() - t0)
                    .count();
  auto heur = buildSchedule(pr, "zb-auto");
  if (!ilp || !heur) {
    llvm::outs() << label << ": "
                 << (ilp ? llvm::toString(heur.takeError())
                         : llvm::toString(ilp.takeError()))
                 << "\n";
    ++misses;
    return;
  }
  double h = simulate(pr, *heur).stageSpan;
  double o = simulate(pr, *ilp).stageSpan;
  if (o > h + 1e-9)
    ++misses;
  llvm::outs() << llvm::formatv(
      "{0,-34} heuristic {1,10:F1}  ilp {2,10:F1}  bound {3,10:F1}  gap "
      "{4,6:P2}  wall {5,5:F1} s (limit {6}) CBC: {7}\n",
      label, h, o, rep.bestBound, rep.gap, wall, limit, rep.status);
  llvm::outs().flush();
}

int main(int argc, char **argv) {
  double bigLimit = argc > 1 ? std::atof(argv[1]) : 60;
  int misses = 0;
  // p=4, m=8: a few cost profiles and memory limits (units of M_B).
  struct Small {
    double f, b, w, c, limitP;
  } smalls[] = {{5, 6, 4, 1, 0},  {5, 6, 4, 1, 2},           {5, 6, 4, 1, 1.5},
                {1, 1, 1, 0, 0},  {18.5, 18.1, 9.3, 0.6, 2}, {10, 12, 3, 2, 0},
                {10, 12, 3, 2, 1}};
  for (const Small &s : smalls) {
    Problem pr;
    pr.numRanks = 4;
    pr.numMicrobatches = 8;
    pr.costF = {s.f};
    pr.costB = {s.b};
    pr.costW = {s.w};
    pr.costComm = {s.c};
    pr.memB = {1};
    pr.memW = {0.5};
    pr.memoryLimit = s.limitP * 4;
    run(llvm::formatv("p=4 m=8 F{0} B{1} W{2} c{3} lim {4}p", s.f, s.b, s.w,
                      s.c, s.limitP)
            .str(),
        pr, 10, misses);
  }
  // The paper's p=8, m=24 rows at 1p and 2p.
  for (const table5::Row &row : table5::rows) {
    if (row.p != 8 || row.m != 24)
      continue;
    for (double factor : {1.0, 2.0}) {
      Problem pr = table5::makeProblem(row);
      pr.memoryLimit = factor * row.p * row.mB;
      run(llvm::formatv("{0} p=8 m=24 ({1}p)", row.model, factor).str(), pr,
          bigLimit, misses);
    }
  }
  llvm::outs() << misses << " rows where the ILP was worse than the heuristic "
               << "or failed\n";
  return misses == 0 ? 0 : 1;
}
