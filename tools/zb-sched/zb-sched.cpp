//===- zb-sched.cpp - Pipeline schedule explorer --------------------------===//
//
// Builds, verifies, simulates and prints pipeline-parallel schedules:
//
//   zb-sched --stages 8 --microbatches 24 --cost-f 18.5 --cost-b 18.1 \
//       --cost-w 9.3 --cost-comm 0.6 --mem-b 1 --mem-w 0.4 \
//       --memory-limit 2p --schedule zb-auto --format svg -o zb.svg
//
// Costs and memory are per rank (comma-separated lists: one value = every
// rank). --memory-limit takes an absolute value or a multiple of p*M_B
// ("1p", "2p", "1.5p"). --data-parallel D with --param-bytes adds the
// gradient all-reduce across D pipelines (zb/Schedule/DataParallel.h),
// --dp-buckets K in K buckets per stage started during the last W.
// Option parsing only: the work is lib/Schedule
// (zb/Schedule/Report.h); -o is written atomically (zb/Support/AtomicFile.h).
//
//===----------------------------------------------------------------------===//

#include "zb/Support/AtomicFile.h"
#include "zb/Schedule/Report.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/WithColor.h"

using namespace zb::sched;
namespace cl = llvm::cl;

namespace {

ReportOptions opts;
cl::OptionCategory category("zb-sched options");

cl::opt<int, true> numStages("stages", cl::desc("Pipeline stages (ranks), p"),
                             cl::location(opts.problem.stages), cl::init(4),
                             cl::cat(category));
cl::opt<int, true> numMicrobatches("microbatches",
                                   cl::desc("Microbatches per iteration, m"),
                                   cl::location(opts.problem.microbatches),
                                   cl::init(8), cl::cat(category));
cl::opt<std::string, true>
    costF("cost-f", cl::desc("T_F per rank in ms (comma-separated list)"),
          cl::location(opts.problem.costF), cl::init("1"), cl::cat(category));
cl::opt<std::string, true>
    costB("cost-b", cl::desc("T_B per rank in ms (comma-separated list)"),
          cl::location(opts.problem.costB), cl::init("1"), cl::cat(category));
cl::opt<std::string, true>
    costW("cost-w", cl::desc("T_W per rank in ms (comma-separated list)"),
          cl::location(opts.problem.costW), cl::init("1"), cl::cat(category));
cl::opt<std::string, true>
    costComm("cost-comm", cl::desc("T_comm latency between ranks in ms (list)"),
             cl::location(opts.problem.costComm), cl::init("0"),
             cl::cat(category));
cl::opt<std::string, true>
    memB("mem-b", cl::desc("M_B per rank: activation memory F keeps for B"),
         cl::location(opts.problem.memB), cl::init(""), cl::cat(category));
cl::opt<std::string, true> memW("mem-w",
                                cl::desc("M_W per rank: memory B keeps for W"),
                                cl::location(opts.problem.memW), cl::init(""),
                                cl::cat(category));
cl::opt<std::string, true> memoryLimit(
    "memory-limit",
    cl::desc("Activation memory limit per rank: absolute (unit of --mem-b) "
             "or a multiple of p*M_B such as 2p; one value for every rank or "
             "a comma-separated list with one per rank (e.g. 2p,1.5p,1p,1p); "
             "0 = unlimited"),
    cl::location(opts.problem.memoryLimit), cl::init("0"), cl::cat(category));
cl::opt<double, true> fbOverlap(
    "fb-overlap",
    cl::desc("alpha in [0, 1]: how much of an overlapped F&B pair (dualpipe, "
             "dualpipev, PyTorch's OVERLAP_F_B: the forward of one microbatch "
             "and the backward of another issued together) hides; a pair "
             "takes max(T_F, T_B) + (1 - alpha) min(T_F, T_B) and both its "
             "outputs are ready at its end; 0 (default): its passes one after "
             "the other. Used by --compare; a JSON --input keeps its own "
             "fb_overlap"),
    cl::value_desc("ALPHA"), cl::location(opts.problem.fbOverlap),
    cl::init(0), cl::cat(category));
/// "gpipe 1f1b ... v-auto" from the schedule table.
const std::string &scheduleList() {
  static const std::string list = llvm::join(zb::sched::scheduleNames(), " ");
  return list;
}
cl::opt<std::string, true> scheduleName(
    "schedule", cl::desc(scheduleList()), cl::location(opts.scheduleName),
    cl::init(zb::sched::scheduleName(zb::sched::ScheduleKind::ZBAuto).str()),
    cl::cat(category));
cl::opt<std::string>
    format("format",
           cl::desc("Output format: text|json|csv|csv-comm (PyTorch CSV with "
                    "SEND/RECV actions)|trace|svg"),
           cl::init("text"), cl::cat(category));
cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                cl::value_desc("FILE"), cl::init("-"),
                                cl::cat(category));
cl::opt<int, true> virtualStages(
    "virtual-stages",
    cl::desc("Chunks per rank, V (default: 2 for 1f1b-i and the V-shape "
             "schedules, 1 otherwise)"),
    cl::location(opts.problem.virtualStages), cl::init(0), cl::cat(category));
cl::opt<double, true> timeLimit("time-limit",
                                cl::desc("ILP time limit in seconds"),
                                cl::location(opts.build.timeLimitSeconds),
                                cl::init(60), cl::cat(category));
cl::opt<bool, true> ilpLog("ilp-log",
                           cl::desc("Print CBC's log to stderr (ILP)"),
                           cl::location(opts.build.verbose), cl::init(false),
                           cl::cat(category));
cl::opt<bool>
    compare("compare",
            cl::desc("Print every schedule's bubble rate and peak memory"),
            cl::init(false), cl::cat(category));
cl::opt<std::string, true> inputFile(
    "input",
    cl::desc("Read a schedule (JSON, or CSV with --stages/--microbatches and "
             "the costs) instead of building one; it is verified"),
    cl::value_desc("FILE"), cl::location(opts.inputFile), cl::init(""),
    cl::cat(category));
cl::opt<bool, true> localSearch(
    "local-search",
    cl::desc("Heuristic: after the paper's 8 flag settings, improve the "
             "order by local search (beyond the paper)"),
    cl::location(opts.build.localSearch), cl::init(false), cl::cat(category));

cl::opt<bool, true> verifyComm(
    "verify-comm",
    cl::desc("Insert send/recv (after the producing pass, before the "
             "consuming one) and check matching and deadlock freedom; the "
             "result is part of every output (default on)"),
    cl::location(opts.verifyComm), cl::init(true), cl::cat(category));
cl::opt<std::string> commSends(
    "comm-sends",
    cl::desc("Send semantics the schedule must work with: buffered (sends "
             "return at once, receives block) or rendezvous (both block)"),
    cl::init("buffered"), cl::cat(category));
cl::opt<std::string> commChannels(
    "comm-channels",
    cl::desc("Message matching the schedule must work with: tag (one FIFO "
             "channel per peer pair and message kind, activation/gradient) or "
             "pair (one FIFO channel per peer pair)"),
    cl::init("tag"), cl::cat(category));

cl::opt<std::string, true> optimizerSync(
    "optimizer-sync",
    cl::desc("Show the optimizer step between iterations and how the ranks "
             "get the global gradient norm / finite flag: none, all-reduce "
             "(synchronous) or post-validation (the paper's Section 4): two "
             "iterations in --format svg/trace, the steady state of all three "
             "in text/json"),
    cl::value_desc("MODE"), cl::location(opts.optimizerSync), cl::init(""),
    cl::cat(category));
cl::opt<double, true> optimizerCost(
    "optimizer-cost",
    cl::desc("T_opt: the optimizer step's time per rank in ms (with "
             "--optimizer-sync)"),
    cl::location(opts.optimizerCost), cl::init(0), cl::cat(category));

cl::opt<int, true> dataParallel(
    "data-parallel",
    cl::desc("D: data-parallel copies of the pipeline; each stage's "
             "gradients are all-reduced across them (the Zero Bubble paper's "
             "Appendix A), reported in text/json, drawn in trace/svg; needs "
             "--param-bytes when D > 1 (default 1: none)"),
    cl::value_desc("D"), cl::location(opts.dataParallel.replicas), cl::init(1),
    cl::cat(category));
cl::opt<double, true> dpBandwidth(
    "dp-bandwidth",
    cl::desc("The all-reduce's bus bandwidth in GB/s (1e9 bytes/s): one "
             "all-reduce of B bytes takes --dp-latency + 2(D-1)/D B / "
             "bandwidth"),
    cl::value_desc("GBPS"), cl::location(opts.dataParallel.bandwidthGBps),
    cl::init(100), cl::cat(category));
cl::opt<double, true>
    dpLatency("dp-latency", cl::desc("The fixed cost of one all-reduce in ms"),
              cl::value_desc("MS"), cl::location(opts.dataParallel.latencyMs),
              cl::init(0.02), cl::cat(category));
cl::opt<std::string, true> paramBytes(
    "param-bytes",
    cl::desc("Parameter (= gradient) bytes per rank, or per stage with p*V "
             "values (comma-separated list; one value = every rank)"),
    cl::value_desc("LIST"), cl::location(opts.dataParallel.paramBytes),
    cl::init(""), cl::cat(category));
cl::opt<int, true> dpBuckets(
    "dp-buckets",
    cl::desc("K: each stage's gradients in K equal all-reduce buckets "
             "(1..4096), each all-reduced as soon as it is computed, during "
             "the stage's last W (the Zero Bubble paper's Appendix A: the "
             "last W's computations reordered per parameter; W's time taken "
             "as proportional to its gradient bytes); default 1: one "
             "all-reduce per stage, after its last W"),
    cl::value_desc("K"), cl::location(opts.dataParallel.bucketsPerStage),
    cl::init(1), cl::cat(category));

int fail(llvm::Error e) {
  llvm::WithColor::error(llvm::errs(), "zb-sched")
      << llvm::toString(std::move(e)) << "\n";
  return 1;
}

/// Writes the finished output to -o: standard output for "-", else the file,
/// atomically (a failed write leaves the previous file). 0, or 1 after an
/// error message.
int writeOutput(llvm::StringRef text) {
  if (outputFile == "-") {
    llvm::outs() << text;
    llvm::outs().flush();
    if (!llvm::outs().has_error())
      return 0;
    std::error_code ec = llvm::outs().error();
    llvm::outs().clear_error();
    return fail(llvm::createStringError("cannot write to standard output: " +
                                        ec.message()));
  }
  llvm::Error e =
      zb::support::writeFileAtomically(outputFile, [&](llvm::raw_ostream &os) {
        os << text;
        return llvm::Error::success();
      });
  if (!e)
    return 0;
  return fail(std::move(e));
}

} // namespace

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "zb-sched: zero-bubble pipeline schedules\n");
  std::optional<ReportFormat> reportFormat = parseReportFormat(format);
  if (!reportFormat)
    return fail(llvm::createStringError(
        "--format must be text, json, csv, csv-comm, trace or svg, got '" +
        format + "'"));
  opts.format = *reportFormat;
  auto comm = parseCommOptions(commSends, commChannels);
  if (!comm)
    return fail(comm.takeError());
  opts.requiredComm = *comm;

  std::string text;
  llvm::raw_string_ostream os(text);
  if (llvm::Error e =
          compare ? writeComparison(os, opts) : writeScheduleReport(os, opts))
    return fail(std::move(e));
  return writeOutput(text);
}
