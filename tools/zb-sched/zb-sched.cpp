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
// ("1p", "2p", "1.5p").
//
//===----------------------------------------------------------------------===//

#include "zb/Schedule/Formats.h"
#include "zb/Schedule/OptimizerSync.h"
#include "zb/Schedule/Registry.h"
#include "zb/Schedule/Schedule.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <algorithm>
#include <cmath>
#include <optional>

using namespace zb::sched;
namespace cl = llvm::cl;

static cl::OptionCategory category("zb-sched options");

static cl::opt<int> numStages("stages", cl::desc("Pipeline stages (ranks), p"),
                              cl::init(4), cl::cat(category));
static cl::opt<int> numMicrobatches("microbatches",
                                    cl::desc("Microbatches per iteration, m"),
                                    cl::init(8), cl::cat(category));
static cl::opt<std::string>
    costF("cost-f", cl::desc("T_F per rank in ms (comma-separated list)"),
          cl::init("1"), cl::cat(category));
static cl::opt<std::string>
    costB("cost-b", cl::desc("T_B per rank in ms (comma-separated list)"),
          cl::init("1"), cl::cat(category));
static cl::opt<std::string>
    costW("cost-w", cl::desc("T_W per rank in ms (comma-separated list)"),
          cl::init("1"), cl::cat(category));
static cl::opt<std::string>
    costComm("cost-comm", cl::desc("T_comm latency between ranks in ms (list)"),
             cl::init("0"), cl::cat(category));
static cl::opt<std::string>
    memB("mem-b", cl::desc("M_B per rank: activation memory F keeps for B"),
         cl::init(""), cl::cat(category));
static cl::opt<std::string> memW("mem-w",
                                 cl::desc("M_W per rank: memory B keeps for W"),
                                 cl::init(""), cl::cat(category));
static cl::opt<std::string> memoryLimit(
    "memory-limit",
    cl::desc("Activation memory limit per rank: absolute (unit of --mem-b) "
             "or a multiple of p*M_B such as 2p; one value for every rank or "
             "a comma-separated list with one per rank (e.g. 2p,1.5p,1p,1p); "
             "0 = unlimited"),
    cl::init("0"), cl::cat(category));
static cl::opt<std::string> scheduleName(
    "schedule",
    cl::desc("gpipe 1f1b 1f1b-i zb-h1 zb-h2 zb-auto zb-1p zb-2p ilp zb-v "
             "v-half v-min v-auto"),
    cl::init("zb-auto"), cl::cat(category));
static cl::opt<std::string>
    format("format",
           cl::desc("Output format: text|json|csv|csv-comm (PyTorch CSV with "
                    "SEND/RECV actions)|trace|svg"),
           cl::init("text"), cl::cat(category));
static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::value_desc("FILE"), cl::init("-"),
                                       cl::cat(category));
static cl::opt<int> virtualStages(
    "virtual-stages",
    cl::desc("Chunks per rank, V (default: 2 for 1f1b-i and the V-shape "
             "schedules, 1 otherwise)"),
    cl::init(0), cl::cat(category));
static cl::opt<double> timeLimit("time-limit",
                                 cl::desc("ILP time limit in seconds"),
                                 cl::init(60), cl::cat(category));
static cl::opt<bool> ilpLog("ilp-log",
                            cl::desc("Print CBC's log to stderr (ILP)"),
                            cl::init(false), cl::cat(category));
static cl::opt<bool>
    compare("compare",
            cl::desc("Print every schedule's bubble rate and peak memory"),
            cl::init(false), cl::cat(category));
static cl::opt<std::string> inputFile(
    "input",
    cl::desc("Read a schedule (JSON, or CSV with --stages/--microbatches and "
             "the costs) instead of building one; it is verified"),
    cl::value_desc("FILE"), cl::init(""), cl::cat(category));
static cl::opt<bool> localSearch(
    "local-search",
    cl::desc("Heuristic: after the paper's 8 flag settings, improve the "
             "order by local search (beyond the paper)"),
    cl::init(false), cl::cat(category));

static cl::opt<bool> verifyComm(
    "verify-comm",
    cl::desc("Insert send/recv (after the producing pass, before the "
             "consuming one) and check matching and deadlock freedom; the "
             "result is part of every output (default on)"),
    cl::init(true), cl::cat(category));
static cl::opt<std::string> commSends(
    "comm-sends",
    cl::desc("Send semantics the schedule must work with: buffered (sends "
             "return at once, receives block) or rendezvous (both block)"),
    cl::init("buffered"), cl::cat(category));
static cl::opt<std::string> commChannels(
    "comm-channels",
    cl::desc("Message matching the schedule must work with: tag (one FIFO "
             "channel per peer pair and message kind, activation/gradient) or "
             "pair (one FIFO channel per peer pair)"),
    cl::init("tag"), cl::cat(category));

static cl::opt<std::string> optimizerSync(
    "optimizer-sync",
    cl::desc("Show the optimizer step between iterations and how the ranks "
             "get the global gradient norm / finite flag: none, all-reduce "
             "(synchronous) or post-validation (the paper's Section 4): two "
             "iterations in --format svg/trace, the steady state of all three "
             "in text/json"),
    cl::value_desc("MODE"), cl::init(""), cl::cat(category));
static cl::opt<double> optimizerCost(
    "optimizer-cost",
    cl::desc("T_opt: the optimizer step's time per rank in ms (with "
             "--optimizer-sync)"),
    cl::init(0), cl::cat(category));

/// The communication checks of a schedule: the required one (--comm-sends,
/// --comm-channels) and, for the report, every combination.
struct CommReport {
  /// Empty string = ok, else the verifier's message.
  std::string required, bufferedTag, bufferedPair, rendezvousTag,
      rendezvousPair;
};

static CommOptions requiredCommOptions() {
  CommOptions o;
  o.sends = commSends == "rendezvous" ? SendSemantics::Rendezvous
                                      : SendSemantics::Buffered;
  o.oneChannelPerPeerPair = commChannels == "pair";
  return o;
}

static CommReport checkCommunication(const Problem &problem,
                                     const Schedule &schedule) {
  auto run = [&](SendSemantics sends, bool pair) {
    CommOptions o;
    o.sends = sends;
    o.oneChannelPerPeerPair = pair;
    llvm::Error e = verifyCommunication(problem, schedule, o);
    return e ? llvm::toString(std::move(e)) : std::string();
  };
  CommReport r;
  CommOptions req = requiredCommOptions();
  r.required = run(req.sends, req.oneChannelPerPeerPair);
  r.bufferedTag = run(SendSemantics::Buffered, false);
  r.bufferedPair = run(SendSemantics::Buffered, true);
  r.rendezvousTag = run(SendSemantics::Rendezvous, false);
  r.rendezvousPair = run(SendSemantics::Rendezvous, true);
  return r;
}

/// "rendezvous", "buffered", "buffered+tags" or "none": the weakest
/// communication this schedule needs.
static std::string commNeeds(const CommReport &r) {
  if (r.rendezvousPair.empty())
    return "rendezvous";
  if (r.rendezvousTag.empty())
    return "rendezvous+tags";
  if (r.bufferedPair.empty())
    return "buffered";
  if (r.bufferedTag.empty())
    return "buffered+tags";
  return "none";
}

static llvm::Expected<std::vector<double>> parseList(llvm::StringRef flag,
                                                     llvm::StringRef text) {
  std::vector<double> out;
  if (text.trim().empty())
    return out;
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, ',');
  for (llvm::StringRef part : parts) {
    double v;
    if (part.trim().getAsDouble(v))
      return llvm::createStringError(
          llvm::formatv("--{0}: '{1}' is not a number", flag, part).str());
    out.push_back(v);
  }
  return out;
}

static int chunksFor(llvm::StringRef name) {
  if (virtualStages > 0)
    return virtualStages;
  return zb::sched::defaultChunks(name);
}

static llvm::Expected<Problem> makeProblem(int chunks) {
  Problem p;
  p.numRanks = numStages;
  p.numMicrobatches = numMicrobatches;
  p.numChunks = chunks;
  std::pair<cl::opt<std::string> *, std::vector<double> *> fields[] = {
      {&costF, &p.costF},       {&costB, &p.costB}, {&costW, &p.costW},
      {&costComm, &p.costComm}, {&memB, &p.memB},   {&memW, &p.memW}};
  for (auto &[opt, vec] : fields) {
    auto list = parseList(opt->ArgStr, *opt);
    if (!list)
      return list.takeError();
    *vec = *list;
  }
  // --memory-limit: one value for every rank or one per rank, each a
  // number or a multiple of p M_B such as 1.5p.
  llvm::SmallVector<llvm::StringRef> items;
  llvm::StringRef(memoryLimit).split(items, ',');
  std::vector<double> limits;
  for (llvm::StringRef item : items) {
    item = item.trim();
    if (item.empty() && items.size() == 1)
      break;
    double value;
    if (item.ends_with("p")) {
      if (item.drop_back().getAsDouble(value))
        return llvm::createStringError(
            "--memory-limit: '" + item.str() +
            "' is not a number or a multiple of p such as 2p");
      if (p.memB.empty())
        return llvm::createStringError("--memory-limit " + item.str() +
                                       " needs --mem-b (M_B)");
      value *= p.numRanks * *std::max_element(p.memB.begin(), p.memB.end());
    } else if (item.getAsDouble(value)) {
      return llvm::createStringError(
          "--memory-limit: '" + item.str() +
          "' is not a number or a multiple of p such as 2p");
    }
    limits.push_back(value);
  }
  if (limits.size() == 1)
    p.memoryLimit = limits[0];
  else
    p.memoryLimits = limits;
  if (llvm::Error e = validateProblem(p))
    return std::move(e);
  return p;
}

/// CBC's bound for JSON: a number, or null when CBC had none.
static llvm::json::Value cbcBoundJSON(const IlpReport &ilp) {
  if (std::isfinite(ilp.cbcBound))
    return ilp.cbcBound;
  return nullptr;
}

/// The steady state of every optimizer sync mode (the selected one first
/// is in `selected`).
struct SyncReport {
  OptimizerSyncTiming selected;
  std::vector<OptimizerSyncTiming> all; ///< none, all-reduce, post-validation
};

static llvm::Expected<SyncReport> optimizerSyncReport(const Problem &problem,
                                                      const Schedule &schedule,
                                                      OptimizerSync mode) {
  SyncReport report;
  for (OptimizerSync m : {OptimizerSync::None, OptimizerSync::AllReduce,
                          OptimizerSync::PostValidation}) {
    OptimizerSyncOptions o;
    o.mode = m;
    o.costOptimizer = optimizerCost;
    auto t = simulateOptimizerSync(problem, schedule, o);
    if (!t)
      return t.takeError();
    if (llvm::Error e = verifyOptimizerSync(problem, schedule, *t))
      return std::move(e);
    if (m == mode)
      report.selected = *t;
    report.all.push_back(std::move(*t));
  }
  return report;
}

static llvm::json::Value syncJSON(const SyncReport &r) {
  llvm::json::Array ranks;
  for (size_t i = 0; i < r.selected.ranks.size(); ++i) {
    const RankSync &s = r.selected.ranks[i];
    auto opt = [](double t) -> llvm::json::Value {
      if (t < 0)
        return nullptr;
      return t;
    };
    ranks.push_back(llvm::json::Object{
        {"rank", static_cast<int64_t>(i)},
        {"passes_end", s.passesEnd},
        {"state_in", opt(s.stateIn)},
        {"state_out", opt(s.stateOut)},
        {"step_start", s.stepStart},
        {"step_end", s.stepEnd},
        {"full_state_arrives", opt(s.fullArrives)},
        {"validate_before_action", static_cast<int64_t>(s.validateBefore)},
        {"forwards_before_validation", s.forwardsBeforeValidation}});
  }
  llvm::json::Object steady;
  for (const OptimizerSyncTiming &t : r.all)
    steady[optimizerSyncName(t.mode)] = llvm::json::Object{
        {"period_ms", t.period}, {"bubble_rate", t.bubbleRate}};
  return llvm::json::Object{{"mode", optimizerSyncName(r.selected.mode)},
                            {"optimizer_cost_ms", (double)optimizerCost},
                            {"ideal_ms", r.selected.idealTime},
                            {"steady_state", std::move(steady)},
                            {"ranks", std::move(ranks)}};
}

static void syncText(llvm::raw_ostream &os, const SyncReport &r) {
  os << llvm::formatv("  optimizer sync (steady state, T_opt {0} ms, ideal "
                      "{1:F3} ms per iteration):\n",
                      (double)optimizerCost, r.selected.idealTime);
  for (const OptimizerSyncTiming &t : r.all)
    os << llvm::formatv("    {0,-16} iteration {1,10:F3} ms, bubble rate "
                        "{2:F4}{3}\n",
                        optimizerSyncName(t.mode), t.period, t.bubbleRate,
                        t.mode == r.selected.mode ? "  <- selected" : "");
  for (size_t i = 0; i < r.selected.ranks.size(); ++i) {
    const RankSync &s = r.selected.ranks[i];
    os << llvm::formatv("    rank {0,-3}: passes end {1:F3}, step [{2:F3}, "
                        "{3:F3}]",
                        i, s.passesEnd, s.stepStart, s.stepEnd);
    if (r.selected.mode == OptimizerSync::PostValidation)
      os << llvm::formatv(", full state at {0:F3}, validates before action "
                          "{1} of the next iteration ({2} F to redo on a "
                          "rollback)",
                          s.fullArrives, s.validateBefore,
                          s.forwardsBeforeValidation);
    else if (s.stateIn >= 0)
      os << llvm::formatv(", reduced state at {0:F3}", s.stateIn);
    os << "\n";
  }
}

static void emit(llvm::raw_ostream &os, const Problem &problem,
                 const Schedule &schedule, const SimResult &sim,
                 const IlpReport *ilp, const CommReport *comm,
                 const SyncReport *sync) {
  auto okOr = [](const std::string &e) -> llvm::json::Value {
    if (e.empty())
      return "ok";
    return e;
  };
  if (format == "json") {
    llvm::json::Value v = toJSON(problem, schedule, sim);
    if (comm)
      v.getAsObject()->try_emplace(
          "communication",
          llvm::json::Object{
              {"needs", commNeeds(*comm)},
              {"buffered_tag_channels", okOr(comm->bufferedTag)},
              {"buffered_one_channel_per_pair", okOr(comm->bufferedPair)},
              {"rendezvous_tag_channels", okOr(comm->rendezvousTag)},
              {"rendezvous_one_channel_per_pair", okOr(comm->rendezvousPair)}});
    if (sync)
      v.getAsObject()->try_emplace("optimizer_sync", syncJSON(*sync));
    if (ilp && !ilp->status.empty())
      v.getAsObject()->try_emplace(
          "ilp", llvm::json::Object{{"status", ilp->status},
                                    {"proven_optimal", ilp->provenOptimal},
                                    {"objective", ilp->objective},
                                    {"best_bound", ilp->bestBound},
                                    {"cbc_bound", cbcBoundJSON(*ilp)},
                                    {"cbc_bound_source", ilp->cbcBoundSource},
                                    {"analytic_bound", ilp->analyticBound},
                                    {"gap", ilp->gap},
                                    {"warm_start", ilp->warmStartObjective},
                                    {"seconds", ilp->seconds}});
    os << llvm::formatv("{0:2}", v) << "\n";
  } else if (format == "csv" || format == "csv-comm") {
    writeCSV(os, schedule, format == "csv-comm");
  } else if (format == "trace") {
    writeTrace(os, schedule, sim, sync ? &sync->selected : nullptr);
  } else if (format == "svg") {
    writeSVG(os, problem, schedule, sim, sync ? &sync->selected : nullptr);
  } else {
    writeText(os, problem, schedule, sim);
    if (sync)
      syncText(os, *sync);
    if (ilp && !ilp->status.empty())
      os << llvm::formatv("  ilp: CBC status '{0}', objective {1}, best bound "
                          "{2} (CBC's bound {3} [{4}], analytic bound {5}), "
                          "gap {6:P2}, warm start {7}, {8:F1} s, {9} "
                          "variables, {10} constraints\n",
                          ilp->status, ilp->objective, ilp->bestBound,
                          std::isfinite(ilp->cbcBound)
                              ? llvm::formatv("{0}", ilp->cbcBound).str()
                              : std::string("none"),
                          ilp->cbcBoundSource, ilp->analyticBound, ilp->gap,
                          ilp->warmStartObjective, ilp->seconds,
                          ilp->numVariables, ilp->numConstraints);
    if (comm) {
      auto line = [&](llvm::StringRef what, const std::string &e) {
        os << "    " << what << ": " << (e.empty() ? "ok" : e) << "\n";
      };
      os << "  communication (send after the producer, recv before the "
            "consumer): needs "
         << commNeeds(*comm) << " sends\n";
      line("buffered sends, activation/gradient tags", comm->bufferedTag);
      line("buffered sends, one channel per peer pair", comm->bufferedPair);
      line("rendezvous sends, activation/gradient tags", comm->rendezvousTag);
      line("rendezvous sends, one channel per peer pair", comm->rendezvousPair);
    }
  }
}

static int runCompare(llvm::raw_ostream &os) {
  os << llvm::formatv("{0,-8} {1,11} {2,14} {3,14} {4,14}  {5,-15} {6}\n",
                      "schedule", "bubble", "cost", "makespan", "peak memory",
                      "comm needs", "note");
  BuildOptions options;
  options.timeLimitSeconds = timeLimit;
  options.verbose = ilpLog;
  options.localSearch = localSearch;
  for (llvm::StringRef name : scheduleNames()) {
    auto problem = makeProblem(chunksFor(name));
    if (!problem) {
      llvm::WithColor::error(llvm::errs(), "zb-sched")
          << llvm::toString(problem.takeError()) << "\n";
      return 1;
    }
    IlpReport ilp;
    auto schedule = buildSchedule(*problem, name, options, &ilp);
    if (!schedule) {
      os << llvm::formatv("{0,-8} {1,11} {2,14} {3,14} {4,14}  {5,-15} {6}\n",
                          name, "-", "-", "-", "-", "-",
                          llvm::toString(schedule.takeError()));
      continue;
    }
    SimResult sim = simulate(*problem, *schedule);
    double peak =
        *std::max_element(sim.peakMemory.begin(), sim.peakMemory.end());
    std::string note;
    if (problem->numChunks > 1)
      note = llvm::formatv("V={0}", problem->numChunks).str();
    if (!ilp.status.empty())
      note += llvm::formatv("CBC {0}, gap {1:P2}", ilp.status, ilp.gap).str();
    std::string needs = "-";
    if (verifyComm)
      needs = commNeeds(checkCommunication(*problem, *schedule));
    os << llvm::formatv(
        "{0,-8} {1,11:F4} {2,14:F3} {3,14:F3} {4,14}  {5,-15} {6}\n", name,
        sim.bubbleRate, sim.cost, sim.makespan, peak, needs, note);
  }
  return 0;
}

/// -o FILE, written atomically like every zb output: the text is kept in
/// memory and, when complete, written to a temporary file next to FILE that
/// is renamed over it (a symlink is replaced, not followed; a failed write
/// leaves the previous file). "-" is stdout; a device or FIFO is written in
/// place.
class AtomicOutput {
public:
  explicit AtomicOutput(std::string path) : path(std::move(path)), stream(text) {}
  llvm::raw_ostream &os() { return stream; }
  /// Writes the output; 0, or 1 after an error message.
  int keep() {
    stream.flush();
    if (path == "-") {
      llvm::outs() << text;
      llvm::outs().flush();
      if (llvm::outs().has_error()) {
        llvm::WithColor::error(llvm::errs(), "zb-sched")
            << "cannot write to standard output: "
            << llvm::outs().error().message() << "\n";
        llvm::outs().clear_error();
        return 1;
      }
      return 0;
    }
    llvm::sys::fs::file_status st;
    bool inPlace = !llvm::sys::fs::status(path, st, /*Follow=*/false) &&
                   st.type() != llvm::sys::fs::file_type::regular_file &&
                   st.type() != llvm::sys::fs::file_type::symlink_file;
    std::string tmp =
        inPlace ? path
                : path + ".tmp." +
                      std::to_string(llvm::sys::Process::getProcessId());
    std::error_code ec;
    {
      llvm::raw_fd_ostream f(tmp, ec, llvm::sys::fs::OF_Text);
      if (!ec) {
        f << text;
        f.close();
        if (f.has_error()) {
          ec = f.error();
          f.clear_error();
        }
      }
    }
    if (!ec && !inPlace)
      ec = llvm::sys::fs::rename(tmp, path);
    if (ec) {
      if (!inPlace)
        llvm::sys::fs::remove(tmp);
      llvm::WithColor::error(llvm::errs(), "zb-sched")
          << "cannot write '" << path << "': " << ec.message()
          << " (the previous file is unchanged)\n";
      return 1;
    }
    return 0;
  }

private:
  std::string path, text;
  llvm::raw_string_ostream stream;
};

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "zb-sched: zero-bubble pipeline schedules\n");
  if (format != "text" && format != "json" && format != "csv" &&
      format != "csv-comm" && format != "trace" && format != "svg") {
    llvm::WithColor::error(llvm::errs(), "zb-sched")
        << "--format must be text, json, csv, csv-comm, trace or svg, got '"
        << format << "'\n";
    return 1;
  }
  if ((commSends != "buffered" && commSends != "rendezvous") ||
      (commChannels != "tag" && commChannels != "pair")) {
    llvm::WithColor::error(llvm::errs(), "zb-sched")
        << "--comm-sends must be buffered or rendezvous and --comm-channels "
           "tag or pair, got '"
        << commSends << "' and '" << commChannels << "'\n";
    return 1;
  }
  AtomicOutput out(outputFile);
  auto fail = [](llvm::Error e) {
    llvm::WithColor::error(llvm::errs(), "zb-sched")
        << llvm::toString(std::move(e)) << "\n";
    return 1;
  };

  if (compare) {
    int rc = runCompare(out.os());
    return rc == 0 ? out.keep() : rc;
  }

  Problem problem;
  Schedule schedule;
  IlpReport ilp;
  if (!inputFile.empty()) {
    auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(inputFile);
    if (!buffer)
      return fail(llvm::createStringError("cannot read '" + inputFile +
                                          "': " + buffer.getError().message()));
    llvm::StringRef text = (*buffer)->getBuffer();
    const bool json = looksLikeScheduleJSON(text) ||
                      text.ltrim().starts_with("[") ||
                      llvm::StringRef(inputFile).ends_with(".json");
    auto file = readScheduleFile(text, json, numStages);
    if (!file)
      return fail(file.takeError());
    schedule = std::move(file->schedule);
    if (file->problem) {
      problem = std::move(*file->problem);
    } else {
      int chunks = std::max<int>(1, schedule.stageToRank.size() / numStages);
      auto p = makeProblem(chunks);
      if (!p)
        return fail(p.takeError());
      problem = *p;
    }
    if (llvm::Error e = verify(problem, schedule))
      return fail(std::move(e));
  } else {
    auto p = makeProblem(chunksFor(scheduleName));
    if (!p)
      return fail(p.takeError());
    problem = *p;
    BuildOptions options;
    options.timeLimitSeconds = timeLimit;
    options.verbose = ilpLog;
    options.localSearch = localSearch;
    auto s = buildSchedule(problem, scheduleName, options, &ilp);
    if (!s)
      return fail(s.takeError());
    schedule = std::move(*s);
  }
  CommReport comm;
  if (verifyComm) {
    comm = checkCommunication(problem, schedule);
    if (!comm.required.empty())
      return fail(llvm::createStringError(
          llvm::formatv("schedule '{0}' does not work with {1} sends and {2} "
                        "channels (--comm-sends, --comm-channels): {3}",
                        schedule.name, commSends, commChannels, comm.required)
              .str()));
  }
  SimResult sim = simulate(problem, schedule);
  std::optional<SyncReport> sync;
  if (!optimizerSync.empty()) {
    auto mode = parseOptimizerSync(optimizerSync);
    if (!mode)
      return fail(mode.takeError());
    auto report = optimizerSyncReport(problem, schedule, *mode);
    if (!report)
      return fail(report.takeError());
    sync = std::move(*report);
  }
  emit(out.os(), problem, schedule, sim, &ilp, verifyComm ? &comm : nullptr,
       sync ? &*sync : nullptr);
  return out.keep();
}
