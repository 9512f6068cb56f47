//===- Report.h - zb-sched's work as a library ------------------*- C++ -*-===//
//
// What tools/zb-sched does behind its option parsing: a Problem from the
// flags' text (comma-separated per-rank lists, memory limits such as "2p"),
// the schedule built by name or read from a file (zb's JSON or PyTorch's
// CSV) and verified, the communication checks under every send semantics
// and channel matching, the steady state of every optimizer sync mode, the
// data-parallel gradient all-reduce (zb/Schedule/DataParallel.h), the
// report in every output format (zb/Schedule/IO.h, with the ILP's,
// communication's, optimizer sync's and data parallelism's parts in text
// and JSON), and the
// --compare table of every schedule. Error messages name zb-sched's flags
// ("--cost-b: 'x' is not a number"). Times are ms, memory in the unit of
// M_B. No MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef ZB_SCHEDULE_REPORT_H
#define ZB_SCHEDULE_REPORT_H

#include "zb/Schedule/BuildOptions.h"
#include "zb/Schedule/DataParallel.h"
#include "zb/Schedule/OptimizerSync.h"
#include "zb/Schedule/Registry.h"
#include "zb/Schedule/Schedule.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace zb::sched {

/// A problem as zb-sched's flags give it. Costs (ms) and memory (unit of
/// M_B) are comma-separated per-rank lists (one value: every rank; empty:
/// none, e.g. memB without memory accounting). memoryLimit: one value for
/// every rank or one per rank, each absolute or a multiple of p * max(M_B)
/// such as "2p" or "1.5p"; "0" = unlimited.
struct ProblemFlags {
  int stages = 4;       ///< p (--stages)
  int microbatches = 8; ///< m (--microbatches)
  std::string costF = "1", costB = "1", costW = "1", costComm = "0";
  std::string memB, memW;
  std::string memoryLimit = "0";
  /// Chunks per rank V; 0: the schedule's default (defaultChunks).
  int virtualStages = 0;
  /// alpha of the overlapped F&B pairs (--fb-overlap, Problem::fbOverlap).
  double fbOverlap = 0;

  /// V for a schedule of \p kind: virtualStages, or its default.
  int chunksFor(ScheduleKind kind) const;
};

/// The problem of \p flags with \p chunks chunks per rank, validated.
/// Errors: "--cost-f: 'x' is not a number", "--memory-limit: '...' is not a
/// number or a multiple of p such as 2p", "--memory-limit 2p needs --mem-b
/// (M_B)", or validateProblem's.
llvm::Expected<Problem> parseProblem(const ProblemFlags &flags, int chunks);

/// The send semantics and message matching zb-sched's --comm-sends
/// ("buffered" or "rendezvous") and --comm-channels ("tag" or "pair") name.
/// Error: "--comm-sends must be buffered or rendezvous and --comm-channels
/// tag or pair, got '<sends>' and '<channels>'".
llvm::Expected<CommOptions> parseCommOptions(llvm::StringRef sends,
                                             llvm::StringRef channels);

/// The communication checks of a schedule (verifyCommunication, sends after
/// the producing pass, receives before the consuming one): the required one
/// and, for the report, every combination. Each is "" when the schedule
/// works that way, else the verifier's message.
struct CommReport {
  std::string required, bufferedTag, bufferedPair, rendezvousTag,
      rendezvousPair;
};
CommReport checkCommunication(const Problem &problem, const Schedule &schedule,
                              const CommOptions &required);
/// The weakest communication the schedule works with: "rendezvous",
/// "rendezvous+tags", "buffered", "buffered+tags" or "none".
std::string commNeeds(const CommReport &report);

/// The steady state of every optimizer sync mode (none, all-reduce,
/// post-validation; simulateOptimizerSync, each verified), and the selected
/// mode's timing per rank.
struct SyncReport {
  OptimizerSyncTiming selected;
  std::vector<OptimizerSyncTiming> all; ///< none, all-reduce, post-validation
  double optimizerCost = 0;             ///< T_opt, ms
};
/// Errors: those of simulateOptimizerSync and verifyOptimizerSync.
llvm::Expected<SyncReport> optimizerSyncReport(const Problem &problem,
                                               const Schedule &schedule,
                                               OptimizerSync mode,
                                               double optimizerCost);

/// Data parallelism as zb-sched's flags give it (DataParallel.h's model).
struct DataParallelFlags {
  int replicas = 1;           ///< D (--data-parallel)
  double bandwidthGBps = 100; ///< GB/s (--dp-bandwidth)
  double latencyMs = 0.02;    ///< ms per all-reduce (--dp-latency)
  /// Parameter bytes: a comma-separated list of 1, p or p*V values
  /// (--param-bytes); empty: none.
  std::string paramBytes;
  /// All-reduce buckets per stage (--dp-buckets; Appendix A: the last W's
  /// computations reordered by parameter, each bucket all-reduced as soon
  /// as it is computed); 1 = the stage as the unit.
  int bucketsPerStage = 1;
  /// True when the report shows the all-reduce: D > 1, bytes or buckets
  /// given.
  bool enabled() const {
    return replicas != 1 || !paramBytes.empty() || bucketsPerStage != 1;
  }
};

/// The model of \p flags for \p problem, validated. Errors: "--param-bytes:
/// 'x' is not a number", or validateDataParallel's.
llvm::Expected<DataParallelModel>
parseDataParallel(const DataParallelFlags &flags, const Problem &problem);

/// zb-sched's output formats: text, json, csv, csv-comm (PyTorch CSV with
/// SEND/RECV actions), trace, svg.
enum class ReportFormat { Text, JSON, CSV, CSVComm, Trace, SVG };
/// The format named \p name ("text", "json", ...); nullopt for another name.
std::optional<ReportFormat> parseReportFormat(llvm::StringRef name);

/// Writes the report of one schedule in \p format: writeText or the JSON
/// document of IO.h with, when given, the ILP run (status, bounds,
/// gap), the communication checks and the optimizer sync; CSV, trace and
/// SVG as IO.h writes them (trace and SVG draw \p sync's selected
/// mode and \p dp's overlapped all-reduces). \p ilp is reported only when
/// its status is set.
void writeReport(llvm::raw_ostream &os, ReportFormat format,
                 const Problem &problem, const Schedule &schedule,
                 const SimResult &sim, const IlpReport *ilp,
                 const CommReport *comm, const SyncReport *sync,
                 const DataParallelTiming *dp = nullptr);

/// Everything one zb-sched run does (its flags, parsed).
struct ReportOptions {
  ProblemFlags problem;
  /// The schedule to build (Registry.h's names); ignored with inputFile.
  std::string scheduleName = "zb-auto";
  /// A schedule file to read instead ("-": stdin): zb's JSON (also when the
  /// path ends in .json) or PyTorch's CSV (the problem then comes from
  /// `problem`, V = the CSV's stages / p).
  std::string inputFile;
  ReportFormat format = ReportFormat::Text;
  BuildOptions build;
  /// Check the communication; the schedule must work with requiredComm.
  bool verifyComm = true;
  CommOptions requiredComm;
  /// An optimizer sync mode's name (parseOptimizerSync); empty: none.
  std::string optimizerSync;
  double optimizerCost = 0; ///< T_opt, ms
  /// The data-parallel all-reduce; reported when dataParallel.enabled().
  DataParallelFlags dataParallel;
};

/// Builds (or reads and verifies) the schedule of \p options, checks its
/// communication, simulates it and writes its report to \p os. Errors:
/// "cannot read '<file>': <reason>", the schedule file's parse errors,
/// parseProblem's, buildSchedule's, verify's, "schedule '<name>' does not
/// work with <sends> sends and <channels> channels (--comm-sends,
/// --comm-channels): <reason>", parseOptimizerSync's,
/// optimizerSyncReport's, parseDataParallel's and simulateDataParallel's;
/// nothing is written to \p os then.
llvm::Error writeScheduleReport(llvm::raw_ostream &os,
                                const ReportOptions &options);

/// --compare: one line per schedule of scheduleNames() with its bubble rate,
/// cost, makespan, peak memory, with options.dataParallel enabled the step
/// time with the overlapped all-reduce, the communication it needs (with
/// options.verifyComm) and a note (V, the ILP's status and gap); a schedule
/// that cannot be built gets its error as the note. Error: parseProblem's or
/// parseDataParallel's (the table is then incomplete).
llvm::Error writeComparison(llvm::raw_ostream &os,
                            const ReportOptions &options);

} // namespace zb::sched

#endif // ZB_SCHEDULE_REPORT_H
