//===- IO.h - Reading and writing schedules ----------------------*- C++ -*-===//
//
// Text, JSON (read and write), PyTorch torch.distributed.pipelining CSV
// (read and write), Chrome/Perfetto trace JSON and SVG Gantt charts.
//
// JSON schema ("zb-schedule", version 1), written by writeJSON and read back
// by readJSON:
//   {
//     "format": "zb-schedule", "version": 1, "name": "zb-h1",
//     "problem": {"stages": p, "microbatches": m, "virtual_stages": V,
//                 "cost_f": [ms...], "cost_b": [...], "cost_w": [...],
//                 "cost_comm": [...], "mem_b": [...], "mem_w": [...],
//                 "memory_limit": number (0 = unlimited),
//                 "fb_overlap": alpha (only when not 0)},
//     "stage_to_rank": [rank of global stage 0, 1, ...],
//     "cost_convention": "makespan" | "stage_span",
//     "fused_backward": bool,
//     "fb_pairs": [[index, ...] per rank] (only when the schedule has
//                 overlapped F&B pairs: Schedule::fbPairs),
//     "cost": ms (the paper's cost for this schedule), "makespan": ms,
//     "stage_span": ms, "ideal_time": ms,
//     "bubble_rate": (cost - ideal_time) / cost,
//     "peak_memory": [per rank, unit of mem_b],
//     "ranks": [{"rank": r, "peak_memory": x,
//                "actions": [{"kind": "F"|"B"|"W", "stage": s,
//                             "microbatch": i, "start": ms, "end": ms}, ...]}]
//   }
// Only "problem", "stage_to_rank", "cost_convention", "fused_backward",
// "fb_pairs" and the kind/stage/microbatch of the actions are read back (an
// overlapped pair's two actions carry the pair's start and end); times and
// statistics are recomputed by simulate().
//
// CSV: one row per rank, one action per cell, "<stage><type><microbatch>"
// with type F (forward), I (backward input = B), W (backward weight) or B
// (full backward = fused B and W; mixed with I/W allowed), as
// torch.distributed.pipelining writes
// them with _dump_csv(format="compute_only"). readCSV also takes PyTorch's
// other action types as no-ops (UNSHARD, RESHARD, SEND_F, RECV_F, SEND_B,
// RECV_B, WAIT_SEND_F, WAIT_SEND_B, REDUCE_GRAD, WAIT_REDUCE_GRAD: zb derives
// communication from the schedule), empty cells (PyTorch's None) as nothing,
// and "(0F1;3B0)OVERLAP_F_B" as its sub-actions in order, its F and B
// marked as an overlapped F&B pair (Schedule::fbPairs). The CSVs of every
// torch 2.15 schedule class read and verify, except Schedule1F1B's, whose
// order is wrong on the last rank (test/Schedule/Inputs/pytorch,
// docs/schedule-json.md).
//
//===----------------------------------------------------------------------===//

#ifndef ZB_SCHEDULE_IO_H
#define ZB_SCHEDULE_IO_H

#include "zb/Schedule/DataParallel.h"
#include "zb/Schedule/OptimizerSync.h"
#include "zb/Schedule/Schedule.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

namespace zb::sched {

/// Human-readable text: statistics, then one line per rank with its actions
/// ("F3" = forward of microbatch 3; "F3.5" = chunk stage 5 for V > 1).
void writeText(llvm::raw_ostream &os, const Problem &problem,
               const Schedule &schedule, const SimResult &sim);

/// The JSON document described above.
llvm::json::Value toJSON(const Problem &problem, const Schedule &schedule,
                         const SimResult &sim);
void writeJSON(llvm::raw_ostream &os, const Problem &problem,
               const Schedule &schedule, const SimResult &sim);
/// Parses a JSON document of the schema above. Does not verify the schedule.
llvm::Error readJSON(llvm::StringRef text, Problem &problem,
                     Schedule &schedule);

/// torch.distributed.pipelining CSV: compute actions only, or with
/// \p withCommunication the SEND_F/RECV_F/SEND_B/RECV_B actions of
/// communicationProgram() beside them (PyTorch's _dump_csv "full" format;
/// readCSV reads both back to the same schedule).
void writeCSV(llvm::raw_ostream &os, const Schedule &schedule,
              bool withCommunication = false);
/// Parses CSV rows into a schedule for \p numRanks ranks (0 = one per row).
/// Stages are mapped to the rank whose row holds them; a full backward "B"
/// makes the schedule fusedBackward. Returns an error naming the bad cell.
llvm::Expected<Schedule> readCSV(llvm::StringRef text, int numRanks = 0);

/// A schedule file as zb-sched --input and zb-compile --schedule-file read
/// it: zb's schedule JSON when `json` (callers: the text starts with '{'),
/// with its problem, else the PyTorch CSV for \p numRanks ranks (0 = one
/// per row), without one (`problem` empty; the CSV carries no costs).
struct ScheduleFile {
  Schedule schedule;
  std::optional<Problem> problem;
};
llvm::Expected<ScheduleFile> readScheduleFile(llvm::StringRef text, bool json,
                                              int numRanks = 0);
/// Whether readScheduleFile should read \p text as JSON: it starts with '{'.
inline bool looksLikeScheduleJSON(llvm::StringRef text) {
  return text.ltrim().starts_with("{");
}
/// zb-compile --schedule-file and zb-opt's zb-schedule{schedule-file=}: the
/// file at \p path through readScheduleFile (JSON or CSV by its first
/// character); a CSV schedule, which zb did not build, is simulated in zb's
/// own convention (CostConvention::StageSpan). Errors: "cannot read:
/// <reason>", or readScheduleFile's.
llvm::Expected<ScheduleFile> loadScheduleFile(llvm::StringRef path,
                                              int numRanks = 0);

/// Chrome / Perfetto trace event JSON (one thread per rank, times in us).
/// With \p sync: two iterations (args.iteration 1, 2), the optimizer steps,
/// the all-reduce or the state messages as flow events ("partial state",
/// "full state") and the validation as an instant event, category
/// "optimizer_sync". With \p dp: the overlapped all-reduce of each stage
/// (Appendix A; DataParallel.h) of the (first) iteration on one more thread
/// per rank, tid p + r named "rank r all-reduce" and sorted under rank r,
/// category "data_parallel"; a bucketed model (DataParallelModel::
/// bucketed()) has one bar per bucket, "all-reduce stage s bucket j".
void writeTrace(llvm::raw_ostream &os, const Schedule &schedule,
                const SimResult &sim, const OptimizerSyncTiming *sync = nullptr,
                const DataParallelTiming *dp = nullptr);

/// SVG Gantt chart in the style of the paper's figures: one row per rank,
/// F/B/W in distinct colours, the microbatch number in each box, idle time
/// left blank on a grey background. With \p sync: two iterations (the second
/// pale), the optimizer steps, the all-reduce or the partial/full state
/// messages as arrows and each rank's validation point. With \p dp: under
/// each rank's row a lane with the overlapped all-reduce of each of its
/// stages (Appendix A; DataParallel.h) of the (first) iteration, titled
/// "all-reduce of stage s" ("all-reduce of stage s bucket j", one bar per
/// bucket, for a bucketed model).
void writeSVG(llvm::raw_ostream &os, const Problem &problem,
              const Schedule &schedule, const SimResult &sim,
              const OptimizerSyncTiming *sync = nullptr,
              const DataParallelTiming *dp = nullptr);

} // namespace zb::sched

#endif // ZB_SCHEDULE_IO_H
