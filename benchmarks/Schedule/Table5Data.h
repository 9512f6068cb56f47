//===- Table5Data.h - The paper's Table 5 with its inputs --------*- C++
//-*-===//
//
// Inputs/zb_paper_table5.csv (docs/references.md): Table 5 (bubble rates) of
// the Zero Bubble paper with the Table 6 profiles (ms, converted to integer us
// as the authors did) and the memory units of Table 1 (M_B = 34h + 5as, M_W =
// 32h, s = 1024). Shared by the benchmark and the unit tests.
//
//===----------------------------------------------------------------------===//

#ifndef ZB_BENCHMARKS_SCHEDULE_TABLE5DATA_H
#define ZB_BENCHMARKS_SCHEDULE_TABLE5DATA_H

#include "zb/Schedule/Schedule.h"

#include <cmath>

namespace zb::sched::table5 {

struct Row {
  const char *model;
  int h, a, layers, p, m;
  double tF, tB, tW, tComm; // ms
  double mB, mW;
  int chunks1F1BI;
  double bubble1F1B, bubble1F1BI, bubbleH1, bubbleH2, bubble1p, bubble2p;
};

inline constexpr Row rows[] = {
    {"1.5B", 2304, 24, 22, 8, 24, 18.522, 18.086, 9.337, 0.601, 201216, 73728,
     3, 0.2431, 0.1055, 0.1585, 0.1083, 0.1585, 0.0433},
    {"1.5B", 2304, 24, 22, 8, 32, 18.513, 18.086, 9.331, 0.626, 201216, 73728,
     3, 0.1985, 0.0818, 0.1242, 0.0837, 0.1242, 0.0039},
    {"1.5B", 2304, 24, 22, 8, 64, 18.546, 18.097, 9.321, 0.762, 201216, 73728,
     3, 0.1240, 0.0443, 0.0674, 0.0444, 0.0674, 0.0026},
    {"6.2B", 4096, 32, 30, 8, 24, 29.718, 29.444, 19.927, 0.527, 303104, 131072,
     4, 0.2347, 0.0808, 0.1323, 0.0698, 0.1323, 0.0029},
    {"6.2B", 4096, 32, 30, 8, 32, 29.802, 29.428, 19.530, 0.577, 303104, 131072,
     4, 0.1898, 0.0628, 0.1045, 0.0559, 0.1045, 0.0022},
    {"6.2B", 4096, 32, 30, 8, 64, 29.935, 29.621, 19.388, 0.535, 303104, 131072,
     4, 0.1091, 0.0320, 0.0554, 0.0294, 0.0554, 0.0010},
    {"14.6B", 5120, 40, 46, 16, 48, 11.347, 11.248, 8.132, 0.377, 378880,
     163840, 3, 0.2552, 0.1104, 0.1397, 0.0672, 0.1397, 0.0066},
    {"14.6B", 5120, 40, 46, 16, 64, 11.307, 11.254, 8.101, 0.379, 378880,
     163840, 3, 0.2082, 0.0852, 0.1088, 0.0516, 0.1088, 0.0054},
    {"14.6B", 5120, 40, 46, 16, 128, 11.325, 11.308, 8.109, 0.378, 378880,
     163840, 3, 0.1251, 0.0445, 0.0576, 0.0266, 0.0576, 0.0028},
    {"28.3B", 6144, 48, 62, 32, 96, 10.419, 10.207, 7.715, 0.408, 454656,
     196608, 2, 0.2646, 0.1493, 0.1421, 0.0641, 0.1421, 0.0038},
    {"28.3B", 6144, 48, 62, 32, 128, 10.408, 10.204, 7.703, 0.408, 454656,
     196608, 2, 0.2168, 0.1164, 0.1106, 0.0490, 0.1106, 0.0029},
    {"28.3B", 6144, 48, 62, 32, 256, 10.402, 10.248, 7.698, 0.460, 454656,
     196608, 2, 0.1352, 0.0624, 0.0594, 0.0257, 0.0594, 0.0018},
};

/// The scheduling problem of a row in the authors' integer units (ms x 1000),
/// with `chunks` virtual stages per rank and no memory limit.
inline Problem makeProblem(const Row &row, int chunks = 1) {
  Problem p;
  p.numRanks = row.p;
  p.numMicrobatches = row.m;
  p.numChunks = chunks;
  p.costF = {std::round(row.tF * 1000)};
  p.costB = {std::round(row.tB * 1000)};
  p.costW = {std::round(row.tW * 1000)};
  p.costComm = {std::round(row.tComm * 1000)};
  p.memB = {row.mB};
  p.memW = {row.mW};
  return p;
}

} // namespace zb::sched::table5

#endif // ZB_BENCHMARKS_SCHEDULE_TABLE5DATA_H
