//===- Registry.h - Schedules by kind and name ------------------*- C++ -*-===//
//
// The one table of zb's schedules (gpipe, 1f1b, ..., zb-v, dualpipev) and the
// kind -> builder dispatch:
// the layer above the base (zb/Schedule/Schedule.h: problem, simulation,
// verification) and the builders (lib/Schedule/Builders.h). Every schedule a
// caller gets by name has been validated and verified here. No MLIR
// dependency.
//
//===----------------------------------------------------------------------===//

#ifndef ZB_SCHEDULE_REGISTRY_H
#define ZB_SCHEDULE_REGISTRY_H

#include "zb/Schedule/BuildOptions.h"
#include "zb/Schedule/Schedule.h"

namespace zb::sched {

/// Every schedule zb builds. The one list of their names and properties is
/// the table of Registry.cpp (scheduleInfo); nothing else compares a
/// schedule's name.
enum class ScheduleKind {
  GPipe,           ///< "gpipe": all F, then all B+W (Huang et al., 2019)
  OneFOneB,        ///< "1f1b": one F, one B+W (PipeDream-Flush)
  Interleaved1F1B, ///< "1f1b-i": 1F1B over V >= 2 chunks (Megatron-LM)
  ZBH1,            ///< "zb-h1": the paper's handcrafted ZB-H1 (Section 2)
  ZBH2,            ///< "zb-h2": ZB-H2 (Section 2)
  ZBAuto,          ///< "zb-auto": the heuristic (Section 3.1) at the limit
  ZB1P,            ///< "zb-1p": the heuristic at p M_B
  ZB2P,            ///< "zb-2p": the heuristic at 2p M_B
  Ilp,             ///< "ilp": the ILP of Section 3 / Appendix G with CBC
  ZBV,             ///< "zb-v": ZB-V (the ZB-V note)
  VHalf,           ///< "v-half": V-Half
  VMin,            ///< "v-min": V-Min
  VAuto,           ///< "v-auto": the best V-shape schedule that fits
  DualPipeV,       ///< "dualpipev": DeepSeek's DualPipeV (DeepSeek-V3
                   ///< report, Section 3.2.1; PyTorch's ScheduleDualPipeV)
  DualPipe,        ///< "dualpipe": DeepSeek's DualPipe, two pipelines in
                   ///< opposite directions (DeepSeek-V3 report, 3.2.1)
};

/// How a schedule places the P x V global stages on the ranks.
enum class StagePlacement {
  Sequential,  ///< V = 1: stage s on rank s
  Interleaved, ///< V >= 2: stage s on rank s mod P (1f1b-i)
  VShape,      ///< V = 2: chunk 0 down the ranks, chunk 1 back up
  /// V = 2, two directions (Schedule::directions): the model's p stages
  /// down the ranks (stage s on rank s) and a replica of them up the ranks
  /// (model stage s on rank p-1-s), on the V-shape mapping of 2p stages.
  Bidirectional,
  Either,      ///< ilp: Sequential with V = 1, VShape with V = 2
};

/// One row of the schedule table.
struct ScheduleInfo {
  ScheduleKind kind;
  llvm::StringRef name;       ///< the name of --schedule and the files
  StagePlacement placement;
  int defaultChunks;          ///< V when none is given
};

/// The row of `kind`.
const ScheduleInfo &scheduleInfo(ScheduleKind kind);
/// Every row, in the order zb-sched --compare prints them.
llvm::ArrayRef<ScheduleInfo> scheduleTable();
/// "gpipe", "1f1b", ..., "v-auto".
llvm::StringRef scheduleName(ScheduleKind kind);
/// The kind named `name`; error "unknown schedule '<name>'; expected one
/// of: gpipe, 1f1b, ...".
llvm::Expected<ScheduleKind> parseScheduleKind(llvm::StringRef name);

/// Names accepted by buildSchedule, in the order zb-sched --compare prints
/// them.
llvm::ArrayRef<llvm::StringRef> scheduleNames();

/// Directions (sched::Schedule::directions) of the schedules of `kind`: 2
/// for dualpipe (StagePlacement::Bidirectional), 1 otherwise. A compiler
/// partitions the model into p*V/2 stages for it and runs each twice.
int scheduleDirections(ScheduleKind kind);

/// Chunks per rank V a schedule uses when none is given: 2 for 1f1b-i and
/// the V-shape schedules (zb-v, v-half, v-min, v-auto, dualpipev) and
/// dualpipe, 1 otherwise.
int defaultChunks(ScheduleKind kind);

/// Builds a schedule of `kind`:
///   - gpipe, 1f1b, zb-h1, zb-h2, zb-auto, zb-1p, zb-2p need V = 1; ilp takes
///     V = 1 or V = 2 (the V-shape mapping, warm-started from ZB-V);
///     1f1b-i needs V >= 2 and m a multiple of p; zb-v, v-half, v-min, v-auto
///     and dualpipev need V=2 (v-auto: the best of ZB-V, V-Half, V-Min and
///     the greedy V-shape order that fits every rank's limit).
///   - zb-h1 needs m >= p, zb-h2 needs m >= 2p (Section 2); dualpipev needs
///     m >= 2p (one microbatch per stage of the V, as PyTorch's
///     ScheduleDualPipeV), its order fixed whatever the costs and limits
///     (with options.localSearch improved within its per-rank memory).
///   - dualpipe needs V=2, an even p >= 2 and an even m >= 2p (DeepSeek's
///     DualPipe.step): microbatches 0..m/2-1 go down, m/2..m-1 up
///     (Schedule::directions = 2); per-rank costs and memory are a model
///     stage's (each of a rank's two chunks is a whole stage).
///   - zb-auto uses problem.memoryLimit; zb-1p / zb-2p use p*M_B / 2p*M_B
///     (the limit is min(that, memoryLimit) when memoryLimit is set).
///   - Every result is verified (including the memory limit, when set) before
///     it is returned.
/// On invalid parameters returns an error that states the minimum that would
/// work (e.g. "zb-h1 needs at least p=4 microbatches, got m=2").
llvm::Expected<Schedule> buildSchedule(const Problem &problem,
                                       ScheduleKind kind,
                                       const BuildOptions &options = {},
                                       IlpReport *ilpReport = nullptr);
/// The same by name (parseScheduleKind's error for an unknown one).
llvm::Expected<Schedule> buildSchedule(const Problem &problem,
                                       llvm::StringRef name);
llvm::Expected<Schedule> buildSchedule(const Problem &problem,
                                       llvm::StringRef name,
                                       const BuildOptions &options,
                                       IlpReport *ilpReport = nullptr);

} // namespace zb::sched

#endif // ZB_SCHEDULE_REGISTRY_H
