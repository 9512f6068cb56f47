//===- Report.cpp - zb-sched's work as a library --------------------------===//
//
// See zb/Schedule/Report.h.
//
//===----------------------------------------------------------------------===//

#include "zb/Schedule/Report.h"
#include "zb/Schedule/IO.h"
#include "zb/Schedule/Registry.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cmath>

using namespace zb::sched;

//===----------------------------------------------------------------------===//
// The problem
//===----------------------------------------------------------------------===//

int ProblemFlags::chunksFor(ScheduleKind kind) const {
  if (virtualStages > 0)
    return virtualStages;
  return defaultChunks(kind);
}

/// A comma-separated list of numbers (empty text: none).
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

/// --memory-limit: one value for every rank or one per rank, each a number
/// or a multiple of p M_B such as 1.5p; sets p.memoryLimit or p.memoryLimits.
static llvm::Error parseMemoryLimit(llvm::StringRef text, Problem &p) {
  llvm::SmallVector<llvm::StringRef> items;
  text.split(items, ',');
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
  return llvm::Error::success();
}

llvm::Expected<Problem> zb::sched::parseProblem(const ProblemFlags &flags,
                                                int chunks) {
  Problem p;
  p.numRanks = flags.stages;
  p.numMicrobatches = flags.microbatches;
  p.numChunks = chunks;
  p.fbOverlap = flags.fbOverlap;
  std::tuple<llvm::StringRef, const std::string *, std::vector<double> *>
      fields[] = {{"cost-f", &flags.costF, &p.costF},
                  {"cost-b", &flags.costB, &p.costB},
                  {"cost-w", &flags.costW, &p.costW},
                  {"cost-comm", &flags.costComm, &p.costComm},
                  {"mem-b", &flags.memB, &p.memB},
                  {"mem-w", &flags.memW, &p.memW}};
  for (auto &[flag, text, vec] : fields) {
    auto list = parseList(flag, *text);
    if (!list)
      return list.takeError();
    *vec = *list;
  }
  if (llvm::Error e = parseMemoryLimit(flags.memoryLimit, p))
    return std::move(e);
  if (llvm::Error e = validateProblem(p))
    return std::move(e);
  return p;
}

llvm::Expected<DataParallelModel>
zb::sched::parseDataParallel(const DataParallelFlags &flags,
                             const Problem &problem) {
  DataParallelModel model;
  model.numReplicas = flags.replicas;
  model.bandwidthGBps = flags.bandwidthGBps;
  model.latencyMs = flags.latencyMs;
  auto bytes = parseList("param-bytes", flags.paramBytes);
  if (!bytes)
    return bytes.takeError();
  model.paramBytes = std::move(*bytes);
  model.bucketsPerStage = flags.bucketsPerStage;
  if (llvm::Error e = validateDataParallel(model, problem))
    return std::move(e);
  return model;
}

//===----------------------------------------------------------------------===//
// Communication and optimizer sync
//===----------------------------------------------------------------------===//

llvm::Expected<CommOptions>
zb::sched::parseCommOptions(llvm::StringRef sends, llvm::StringRef channels) {
  if ((sends != "buffered" && sends != "rendezvous") ||
      (channels != "tag" && channels != "pair"))
    return llvm::createStringError(
        "--comm-sends must be buffered or rendezvous and --comm-channels "
        "tag or pair, got '" +
        sends.str() + "' and '" + channels.str() + "'");
  CommOptions o;
  o.sends = sends == "rendezvous" ? SendSemantics::Rendezvous
                                  : SendSemantics::Buffered;
  o.oneChannelPerPeerPair = channels == "pair";
  return o;
}

CommReport zb::sched::checkCommunication(const Problem &problem,
                                         const Schedule &schedule,
                                         const CommOptions &required) {
  auto run = [&](SendSemantics sends, bool pair) {
    CommOptions o;
    o.sends = sends;
    o.oneChannelPerPeerPair = pair;
    llvm::Error e = verifyCommunication(problem, schedule, o);
    return e ? llvm::toString(std::move(e)) : std::string();
  };
  CommReport r;
  r.required = run(required.sends, required.oneChannelPerPeerPair);
  r.bufferedTag = run(SendSemantics::Buffered, false);
  r.bufferedPair = run(SendSemantics::Buffered, true);
  r.rendezvousTag = run(SendSemantics::Rendezvous, false);
  r.rendezvousPair = run(SendSemantics::Rendezvous, true);
  return r;
}

std::string zb::sched::commNeeds(const CommReport &r) {
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

llvm::Expected<SyncReport>
zb::sched::optimizerSyncReport(const Problem &problem, const Schedule &schedule,
                               OptimizerSync mode, double optimizerCost) {
  SyncReport report;
  report.optimizerCost = optimizerCost;
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

//===----------------------------------------------------------------------===//
// The report
//===----------------------------------------------------------------------===//

std::optional<ReportFormat> zb::sched::parseReportFormat(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<ReportFormat>>(name)
      .Case("text", ReportFormat::Text)
      .Case("json", ReportFormat::JSON)
      .Case("csv", ReportFormat::CSV)
      .Case("csv-comm", ReportFormat::CSVComm)
      .Case("trace", ReportFormat::Trace)
      .Case("svg", ReportFormat::SVG)
      .Default(std::nullopt);
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
                            {"optimizer_cost_ms", r.optimizerCost},
                            {"ideal_ms", r.selected.idealTime},
                            {"steady_state", std::move(steady)},
                            {"ranks", std::move(ranks)}};
}

static void syncText(llvm::raw_ostream &os, const SyncReport &r) {
  os << llvm::formatv("  optimizer sync (steady state, T_opt {0} ms, ideal "
                      "{1:F3} ms per iteration):\n",
                      r.optimizerCost, r.selected.idealTime);
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

/// \p bucketed: each all-reduce names its bucket (DataParallelModel::
/// bucketed(); without buckets the report is as before them).
static llvm::json::Value allReduceJSON(const AllReduceTimeline &t,
                                       bool bucketed) {
  llvm::json::Array ranks;
  for (size_t r = 0; r < t.ranks.size(); ++r) {
    const RankAllReduces &rank = t.ranks[r];
    llvm::json::Array allReduces;
    for (const StageAllReduce &a : rank.allReduces) {
      llvm::json::Object o{{"stage", a.stage},          {"bytes", a.bytes},
                           {"duration_ms", a.duration}, {"ready", a.ready},
                           {"start", a.start},          {"end", a.end}};
      if (bucketed)
        o["bucket"] = a.bucket;
      allReduces.push_back(std::move(o));
    }
    ranks.push_back(llvm::json::Object{{"rank", static_cast<int64_t>(r)},
                                       {"compute_start", rank.computeStart},
                                       {"compute_end", rank.computeEnd},
                                       {"end", rank.end},
                                       {"exposed_ms", rank.exposed},
                                       {"all_reduces", std::move(allReduces)}});
  }
  return llvm::json::Object{
      {"step_ms", t.stepTime},     {"makespan", t.makespan},
      {"stage_span", t.stageSpan}, {"bubble_rate", t.bubbleRate},
      {"exposed_ms", t.exposed},   {"ranks", std::move(ranks)}};
}

static llvm::json::Value dataParallelJSON(const DataParallelTiming &dp) {
  llvm::json::Array bytes;
  for (double b : dp.model.paramBytes)
    bytes.push_back(b);
  bool bucketed = dp.model.bucketed();
  llvm::json::Object o{
      {"replicas", dp.model.numReplicas},
      {"bandwidth_gbps", dp.model.bandwidthGBps},
      {"latency_ms", dp.model.latencyMs},
      {"param_bytes", std::move(bytes)},
      {"pipeline_cost_ms", dp.pipelineCost},
      {"ideal_ms", dp.idealTime},
      {"overlapped", allReduceJSON(dp.overlapped, bucketed)},
      {"after_backward", allReduceJSON(dp.afterBackward, bucketed)}};
  if (bucketed) {
    if (dp.model.bucketBytes.empty()) {
      o["buckets_per_stage"] = dp.model.bucketsPerStage;
    } else {
      llvm::json::Array stages;
      for (const std::vector<double> &stage : dp.model.bucketBytes)
        stages.push_back(llvm::json::Array(stage));
      o["bucket_bytes"] = std::move(stages);
    }
  }
  return o;
}

/// The per-stage text of one rank's bucketed all-reduces: one line per
/// stage (in the order of its first bucket on the stream) with its buckets'
/// bytes and time summed, the first and the last bucket's ready time, and
/// the span from the first start to the last end, overlapped (\p o) and
/// after backward (\p a, the same order).
static void bucketedStagesText(llvm::raw_ostream &os, const RankAllReduces &o,
                               const RankAllReduces &a) {
  struct Stage {
    int stage = 0, buckets = 0;
    double bytes = 0, duration = 0;
    double firstReady = 0, lastReady = 0;
    double start = 0, end = 0, afterStart = 0, afterEnd = 0;
  };
  std::vector<Stage> stages;
  for (size_t k = 0; k < o.allReduces.size(); ++k) {
    const StageAllReduce &x = o.allReduces[k], &y = a.allReduces[k];
    auto it = std::find_if(stages.begin(), stages.end(),
                           [&](const Stage &s) { return s.stage == x.stage; });
    if (it == stages.end()) {
      Stage s;
      s.stage = x.stage;
      s.firstReady = s.lastReady = x.ready;
      s.start = x.start;
      s.end = x.end;
      s.afterStart = y.start;
      s.afterEnd = y.end;
      stages.push_back(s);
      it = stages.end() - 1;
    }
    ++it->buckets;
    it->bytes += x.bytes;
    it->duration += x.duration;
    it->firstReady = std::min(it->firstReady, x.ready);
    it->lastReady = std::max(it->lastReady, x.ready);
    it->start = std::min(it->start, x.start);
    it->end = std::max(it->end, x.end);
    it->afterStart = std::min(it->afterStart, y.start);
    it->afterEnd = std::max(it->afterEnd, y.end);
  }
  for (const Stage &s : stages) {
    if (!(s.bytes > 0)) {
      os << llvm::formatv("      stage {0,-3}: 0 bytes, 0.000 ms, ready "
                          "{1:F3}\n",
                          s.stage, s.lastReady);
      continue;
    }
    os << llvm::formatv("      stage {0,-3}: {1} bytes in {2} bucket{3}, "
                        "{4:F3} ms, ready {5:F3} to {6:F3}, overlapped "
                        "[{7:F3}, {8:F3}], after backward [{9:F3}, {10:F3}]\n",
                        s.stage, llvm::format("%.0f", s.bytes), s.buckets,
                        s.buckets == 1 ? "" : "s", s.duration, s.firstReady,
                        s.lastReady, s.start, s.end, s.afterStart, s.afterEnd);
  }
}

static void dataParallelText(llvm::raw_ostream &os,
                             const DataParallelTiming &dp) {
  const DataParallelModel &m = dp.model;
  os << llvm::formatv("  data parallelism (Appendix A): D={0}, one all-reduce "
                      "of B bytes takes {1} ms + 2(D-1)/D B / {2} GB/s\n",
                      m.numReplicas, llvm::format("%g", m.latencyMs),
                      llvm::format("%g", m.bandwidthGBps));
  if (m.bucketed())
    os << "    each stage's gradients in "
       << (m.bucketBytes.empty()
               ? llvm::formatv("{0} equal buckets", m.bucketsPerStage).str()
               : std::string("the given buckets"))
       << ", each all-reduced once its part of the stage's last W is done\n";
  os << llvm::formatv(
      "    pipeline alone        step {0,10:F3} ms, bubble "
      "rate {1:F4}\n",
      dp.pipelineCost,
      dp.pipelineCost > 0
          ? std::max(0.0, (dp.pipelineCost - dp.idealTime) / dp.pipelineCost)
          : 0.0);
  auto line = [&](llvm::StringRef what, const AllReduceTimeline &t) {
    os << llvm::formatv("    {0,-21} step {1,10:F3} ms, bubble rate {2:F4}, "
                        "exposed all-reduce up to {3:F3} ms\n",
                        what, t.stepTime, t.bubbleRate, t.exposed);
  };
  line("overlapped", dp.overlapped);
  line("after backward", dp.afterBackward);
  for (size_t r = 0; r < dp.overlapped.ranks.size(); ++r) {
    const RankAllReduces &o = dp.overlapped.ranks[r];
    const RankAllReduces &a = dp.afterBackward.ranks[r];
    os << llvm::formatv("    rank {0,-3}: passes end {1:F3}, exposed {2:F3} "
                        "overlapped, {3:F3} after backward\n",
                        r, o.computeEnd, o.exposed, a.exposed);
    if (m.bucketed()) {
      bucketedStagesText(os, o, a);
      continue;
    }
    for (size_t k = 0; k < o.allReduces.size(); ++k) {
      const StageAllReduce &x = o.allReduces[k], &y = a.allReduces[k];
      os << llvm::formatv("      stage {0,-3}: {1} bytes, {2:F3} ms, ready "
                          "{3:F3}, overlapped [{4:F3}, {5:F3}], after "
                          "backward [{6:F3}, {7:F3}]\n",
                          x.stage, llvm::format("%.0f", x.bytes), x.duration,
                          x.ready, x.start, x.end, y.start, y.end);
    }
  }
}

static llvm::json::Value okOr(const std::string &e) {
  if (e.empty())
    return "ok";
  return e;
}

static llvm::json::Value commJSON(const CommReport &comm) {
  return llvm::json::Object{
      {"needs", commNeeds(comm)},
      {"buffered_tag_channels", okOr(comm.bufferedTag)},
      {"buffered_one_channel_per_pair", okOr(comm.bufferedPair)},
      {"rendezvous_tag_channels", okOr(comm.rendezvousTag)},
      {"rendezvous_one_channel_per_pair", okOr(comm.rendezvousPair)}};
}

static llvm::json::Value ilpJSON(const IlpReport &ilp) {
  // CBC's bound: a number, or null when CBC had none.
  llvm::json::Value cbcBound = nullptr;
  if (std::isfinite(ilp.cbcBound))
    cbcBound = ilp.cbcBound;
  return llvm::json::Object{{"status", ilp.status},
                            {"proven_optimal", ilp.provenOptimal},
                            {"objective", ilp.objective},
                            {"best_bound", ilp.bestBound},
                            {"cbc_bound", std::move(cbcBound)},
                            {"cbc_bound_source", ilp.cbcBoundSource},
                            {"analytic_bound", ilp.analyticBound},
                            {"gap", ilp.gap},
                            {"warm_start", ilp.warmStartObjective},
                            {"seconds", ilp.seconds}};
}

static void ilpText(llvm::raw_ostream &os, const IlpReport &ilp) {
  os << llvm::formatv(
      "  ilp: CBC status '{0}', objective {1}, best bound "
      "{2} (CBC's bound {3} [{4}], analytic bound {5}), "
      "gap {6:P2}, warm start {7}, {8:F1} s, {9} "
      "variables, {10} constraints\n",
      ilp.status, ilp.objective, ilp.bestBound,
      std::isfinite(ilp.cbcBound) ? llvm::formatv("{0}", ilp.cbcBound).str()
                                  : std::string("none"),
      ilp.cbcBoundSource, ilp.analyticBound, ilp.gap, ilp.warmStartObjective,
      ilp.seconds, ilp.numVariables, ilp.numConstraints);
}

static void commText(llvm::raw_ostream &os, const CommReport &comm) {
  auto line = [&](llvm::StringRef what, const std::string &e) {
    os << "    " << what << ": " << (e.empty() ? "ok" : e) << "\n";
  };
  os << "  communication (send after the producer, recv before the "
        "consumer): needs "
     << commNeeds(comm) << " sends\n";
  line("buffered sends, activation/gradient tags", comm.bufferedTag);
  line("buffered sends, one channel per peer pair", comm.bufferedPair);
  line("rendezvous sends, activation/gradient tags", comm.rendezvousTag);
  line("rendezvous sends, one channel per peer pair", comm.rendezvousPair);
}

void zb::sched::writeReport(llvm::raw_ostream &os, ReportFormat format,
                            const Problem &problem, const Schedule &schedule,
                            const SimResult &sim, const IlpReport *ilp,
                            const CommReport *comm, const SyncReport *sync,
                            const DataParallelTiming *dp) {
  const OptimizerSyncTiming *timing = sync ? &sync->selected : nullptr;
  bool withIlp = ilp && !ilp->status.empty();
  switch (format) {
  case ReportFormat::JSON: {
    llvm::json::Value v = toJSON(problem, schedule, sim);
    llvm::json::Object *root = v.getAsObject();
    if (comm)
      root->try_emplace("communication", commJSON(*comm));
    if (sync)
      root->try_emplace("optimizer_sync", syncJSON(*sync));
    if (dp)
      root->try_emplace("data_parallel", dataParallelJSON(*dp));
    if (withIlp)
      root->try_emplace("ilp", ilpJSON(*ilp));
    os << llvm::formatv("{0:2}", v) << "\n";
    return;
  }
  case ReportFormat::CSV:
  case ReportFormat::CSVComm:
    writeCSV(os, schedule, format == ReportFormat::CSVComm);
    return;
  case ReportFormat::Trace:
    writeTrace(os, schedule, sim, timing, dp);
    return;
  case ReportFormat::SVG:
    writeSVG(os, problem, schedule, sim, timing, dp);
    return;
  case ReportFormat::Text:
    writeText(os, problem, schedule, sim);
    if (sync)
      syncText(os, *sync);
    if (dp)
      dataParallelText(os, *dp);
    if (withIlp)
      ilpText(os, *ilp);
    if (comm)
      commText(os, *comm);
    return;
  }
}

//===----------------------------------------------------------------------===//
// One run, and --compare
//===----------------------------------------------------------------------===//

/// The schedule of --input, verified, with its problem: the JSON's own, or
/// for a CSV the flags' problem with V = the CSV's stages / p.
static llvm::Error readInput(const ReportOptions &options, Problem &problem,
                             Schedule &schedule) {
  const std::string &path = options.inputFile;
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path);
  if (!buffer)
    return llvm::createStringError("cannot read '" + path +
                                   "': " + buffer.getError().message());
  llvm::StringRef text = (*buffer)->getBuffer();
  const bool json = looksLikeScheduleJSON(text) ||
                    text.ltrim().starts_with("[") ||
                    llvm::StringRef(path).ends_with(".json");
  int numStages = options.problem.stages;
  auto file = readScheduleFile(text, json, numStages);
  if (!file)
    return file.takeError();
  schedule = std::move(file->schedule);
  if (file->problem) {
    problem = std::move(*file->problem);
  } else {
    int chunks = std::max<int>(1, schedule.stageToRank.size() / numStages);
    auto p = parseProblem(options.problem, chunks);
    if (!p)
      return p.takeError();
    problem = *p;
  }
  return verify(problem, schedule);
}

llvm::Error zb::sched::writeScheduleReport(llvm::raw_ostream &os,
                                           const ReportOptions &options) {
  Problem problem;
  Schedule schedule;
  IlpReport ilp;
  if (!options.inputFile.empty()) {
    if (llvm::Error e = readInput(options, problem, schedule))
      return e;
  } else {
    // The problem's errors first, then the name's (as before the kinds).
    llvm::Expected<ScheduleKind> kind = parseScheduleKind(options.scheduleName);
    auto p = parseProblem(options.problem,
                          kind ? options.problem.chunksFor(*kind)
                               : std::max(options.problem.virtualStages, 1));
    if (!p) {
      llvm::consumeError(kind.takeError());
      return p.takeError();
    }
    problem = *p;
    if (!kind)
      return kind.takeError();
    auto s = buildSchedule(problem, *kind, options.build, &ilp);
    if (!s)
      return s.takeError();
    schedule = std::move(*s);
  }
  CommReport comm;
  if (options.verifyComm) {
    comm = checkCommunication(problem, schedule, options.requiredComm);
    const CommOptions &req = options.requiredComm;
    if (!comm.required.empty())
      return llvm::createStringError(
          llvm::formatv("schedule '{0}' does not work with {1} sends and {2} "
                        "channels (--comm-sends, --comm-channels): {3}",
                        schedule.name,
                        req.sends == SendSemantics::Rendezvous ? "rendezvous"
                                                               : "buffered",
                        req.oneChannelPerPeerPair ? "pair" : "tag",
                        comm.required)
              .str());
  }
  SimResult sim = simulate(problem, schedule);
  std::optional<SyncReport> sync;
  if (!options.optimizerSync.empty()) {
    auto mode = parseOptimizerSync(options.optimizerSync);
    if (!mode)
      return mode.takeError();
    auto report =
        optimizerSyncReport(problem, schedule, *mode, options.optimizerCost);
    if (!report)
      return report.takeError();
    sync = std::move(*report);
  }
  std::optional<DataParallelTiming> dp;
  if (options.dataParallel.enabled()) {
    auto model = parseDataParallel(options.dataParallel, problem);
    if (!model)
      return model.takeError();
    auto timing = simulateDataParallel(problem, schedule, sim, *model);
    if (!timing)
      return timing.takeError();
    dp = std::move(*timing);
  }
  writeReport(os, options.format, problem, schedule, sim, &ilp,
              options.verifyComm ? &comm : nullptr, sync ? &*sync : nullptr,
              dp ? &*dp : nullptr);
  return llvm::Error::success();
}

llvm::Error zb::sched::writeComparison(llvm::raw_ostream &os,
                                       const ReportOptions &options) {
  // With data parallelism: one more column, the step time with the
  // overlapped all-reduce (Appendix A).
  const bool dp = options.dataParallel.enabled();
  auto dpColumn = [&](llvm::StringRef text) {
    return dp ? llvm::formatv(" {0,14}", text).str() : std::string();
  };
  os << llvm::formatv("{0,-9} {1,11} {2,14} {3,14} {4,14}{5}  {6,-15} {7}\n",
                      "schedule", "bubble", "cost", "makespan", "peak memory",
                      dpColumn("dp step"), "comm needs", "note");
  for (const ScheduleInfo &info : scheduleTable()) {
    llvm::StringRef name = info.name;
    auto problem =
        parseProblem(options.problem, options.problem.chunksFor(info.kind));
    if (!problem)
      return problem.takeError();
    std::optional<DataParallelModel> model;
    if (dp) {
      auto m = parseDataParallel(options.dataParallel, *problem);
      if (!m)
        return m.takeError();
      model = std::move(*m);
    }
    IlpReport ilp;
    auto schedule = buildSchedule(*problem, info.kind, options.build, &ilp);
    if (!schedule) {
      os << llvm::formatv("{0,-9} {1,11} {2,14} {3,14} {4,14}{5}  {6,-15} "
                          "{7}\n",
                          name, "-", "-", "-", "-", dpColumn("-"), "-",
                          llvm::toString(schedule.takeError()));
      continue;
    }
    SimResult sim = simulate(*problem, *schedule);
    double peak =
        *std::max_element(sim.peakMemory.begin(), sim.peakMemory.end());
    std::string note;
    if (problem->numChunks > 1)
      note = llvm::formatv("V={0}", problem->numChunks).str();
    if (schedule->directions > 1)
      note += llvm::formatv(", {0} directions, 2x parameters",
                            schedule->directions)
                  .str();
    if (!ilp.status.empty())
      note += llvm::formatv("CBC {0}, gap {1:P2}", ilp.status, ilp.gap).str();
    std::string dpStep;
    if (model) {
      auto timing = simulateDataParallel(*problem, *schedule, sim, *model);
      if (!timing)
        return timing.takeError();
      dpStep = llvm::formatv("{0:F3}", timing->overlapped.stepTime).str();
    }
    std::string needs = "-";
    if (options.verifyComm)
      needs = commNeeds(
          checkCommunication(*problem, *schedule, options.requiredComm));
    os << llvm::formatv(
        "{0,-9} {1,11:F4} {2,14:F3} {3,14:F3} {4,14}{5}  {6,-15} {7}\n", name,
        sim.bubbleRate, sim.cost, sim.makespan, peak, dpColumn(dpStep), needs,
        note);
  }
  return llvm::Error::success();
}
