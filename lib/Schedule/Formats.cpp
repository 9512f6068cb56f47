//===- Formats.cpp - Text, JSON, CSV, trace and SVG -----------------------===//

#include "zb/Schedule/Formats.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

using namespace zb::sched;
namespace json = llvm::json;

static std::string actionLabel(const Action &a, int numRanks, bool chunks) {
  std::string s = (kindName(a.kind) + llvm::Twine(a.microbatch)).str();
  if (chunks)
    s += "." + std::to_string(a.stage);
  (void)numRanks;
  return s;
}

/// Integers without decimals, other values with 6 significant digits.
static std::string num(double v) {
  if (std::fabs(v) < 1e15 && v == std::floor(v))
    return llvm::formatv("{0}", static_cast<long long>(v)).str();
  return llvm::formatv("{0}", llvm::format("%.6g", v)).str();
}

//===----------------------------------------------------------------------===//
// Text
//===----------------------------------------------------------------------===//

void zb::sched::writeText(llvm::raw_ostream &os, const Problem &problem,
                          const Schedule &schedule, const SimResult &sim) {
  os << "schedule " << schedule.name << ": p=" << problem.numRanks
     << " m=" << problem.numMicrobatches;
  if (problem.numChunks > 1)
    os << " V=" << problem.numChunks;
  os << "\n";
  os << llvm::formatv("  bubble rate {0:F4} (cost {1} = {2}, ideal {3})\n",
                      sim.bubbleRate, num(sim.cost),
                      schedule.costConvention == CostConvention::Makespan
                          ? "makespan"
                          : "max stage span",
                      num(sim.idealTime));
  os << llvm::formatv("  makespan {0}, max stage span {1}\n", num(sim.makespan),
                      num(sim.stageSpan));
  os << "  peak memory per rank:";
  for (double m : sim.peakMemory)
    os << " " << num(m);
  os << "\n";
  bool chunks = problem.numChunks > 1;
  for (size_t r = 0; r < schedule.perRank.size(); ++r) {
    os << llvm::formatv("  rank {0,-3}:", r);
    for (const Action &a : schedule.perRank[r])
      os << " " << actionLabel(a, problem.numRanks, chunks);
    os << "\n";
  }
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

static json::Array toArray(const std::vector<double> &v) {
  json::Array a;
  for (double x : v)
    a.push_back(x);
  return a;
}

json::Value zb::sched::toJSON(const Problem &problem, const Schedule &schedule,
                              const SimResult &sim) {
  json::Object prob{{"stages", problem.numRanks},
                    {"microbatches", problem.numMicrobatches},
                    {"virtual_stages", problem.numChunks},
                    {"cost_f", toArray(problem.costF)},
                    {"cost_b", toArray(problem.costB)},
                    {"cost_w", toArray(problem.costW)},
                    {"cost_comm", toArray(problem.costComm)},
                    {"mem_b", toArray(problem.memB)},
                    {"mem_w", toArray(problem.memW)},
                    {"memory_limit",
                     problem.memoryLimits.empty()
                         ? json::Value(problem.memoryLimit)
                         : json::Value(toArray(problem.memoryLimits))}};
  json::Array stageToRank;
  for (int r : schedule.stageToRank)
    stageToRank.push_back(r);
  json::Array ranks;
  for (size_t r = 0; r < schedule.perRank.size(); ++r) {
    json::Array actions;
    const auto *timed = r < sim.timeline.size() ? &sim.timeline[r] : nullptr;
    for (size_t k = 0; k < schedule.perRank[r].size(); ++k) {
      const Action &a = schedule.perRank[r][k];
      json::Object o{{"kind", kindName(a.kind)},
                     {"stage", a.stage},
                     {"microbatch", a.microbatch}};
      if (timed && k < timed->size()) {
        o["start"] = (*timed)[k].start;
        o["end"] = (*timed)[k].end;
      }
      actions.push_back(std::move(o));
    }
    json::Object rank{{"rank", static_cast<int64_t>(r)},
                      {"actions", std::move(actions)}};
    if (r < sim.peakMemory.size())
      rank["peak_memory"] = sim.peakMemory[r];
    ranks.push_back(std::move(rank));
  }
  return json::Object{
      {"format", "zb-schedule"},
      {"version", 1},
      {"name", schedule.name},
      {"problem", std::move(prob)},
      {"stage_to_rank", std::move(stageToRank)},
      {"cost_convention", schedule.costConvention == CostConvention::Makespan
                              ? "makespan"
                              : "stage_span"},
      {"fused_backward", schedule.fusedBackward},
      {"cost", sim.cost},
      {"makespan", sim.makespan},
      {"stage_span", sim.stageSpan},
      {"ideal_time", sim.idealTime},
      {"bubble_rate", sim.bubbleRate},
      {"peak_memory", toArray(sim.peakMemory)},
      {"ranks", std::move(ranks)}};
}

void zb::sched::writeJSON(llvm::raw_ostream &os, const Problem &problem,
                          const Schedule &schedule, const SimResult &sim) {
  os << llvm::formatv("{0:2}", toJSON(problem, schedule, sim)) << "\n";
}

static llvm::Error readNumbers(const json::Object &o, llvm::StringRef key,
                               std::vector<double> &out) {
  out.clear();
  const json::Value *v = o.get(key);
  if (!v)
    return llvm::Error::success();
  const json::Array *a = v->getAsArray();
  if (!a)
    return llvm::createStringError("problem." + key.str() +
                                   " must be an array of numbers");
  for (const json::Value &x : *a) {
    std::optional<double> d = x.getAsNumber();
    if (!d)
      return llvm::createStringError("problem." + key.str() +
                                     " must be an array of numbers");
    out.push_back(*d);
  }
  return llvm::Error::success();
}

llvm::Error zb::sched::checkJSONNesting(llvm::StringRef text,
                                        llvm::StringRef what,
                                        unsigned maxDepth) {
  unsigned depth = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i; // the escaped character
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > maxDepth)
        return llvm::createStringError(
            llvm::formatv("{0}: JSON nests deeper than {1} levels (at byte "
                          "{2}); refusing to parse it",
                          what, maxDepth, i)
                .str());
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return llvm::Error::success();
}

llvm::Error zb::sched::readJSON(llvm::StringRef text, Problem &problem,
                                Schedule &schedule) {
  if (llvm::Error e = checkJSONNesting(text, "schedule JSON"))
    return e;
  llvm::Expected<json::Value> parsed = json::parse(text);
  if (!parsed)
    return parsed.takeError();
  const json::Object *root = parsed->getAsObject();
  if (!root)
    return llvm::createStringError("schedule JSON: expected an object");
  const json::Object *prob = root->getObject("problem");
  if (!prob)
    return llvm::createStringError("schedule JSON: missing \"problem\"");
  auto getInt = [&](const json::Object &o, llvm::StringRef key,
                    int &out) -> llvm::Error {
    std::optional<int64_t> v = o.getInteger(key);
    if (!v)
      return llvm::createStringError("schedule JSON: missing integer \"" +
                                     key.str() + "\"");
    // No silent truncation (2^40 would become 0).
    if (*v < INT32_MIN || *v > INT32_MAX)
      return llvm::createStringError(
          llvm::formatv("schedule JSON: \"{0}\" = {1} is out of range", key,
                        *v)
              .str());
    out = static_cast<int>(*v);
    return llvm::Error::success();
  };
  problem = Problem();
  if (llvm::Error e = getInt(*prob, "stages", problem.numRanks))
    return e;
  if (llvm::Error e = getInt(*prob, "microbatches", problem.numMicrobatches))
    return e;
  if (prob->get("virtual_stages"))
    if (llvm::Error e = getInt(*prob, "virtual_stages", problem.numChunks))
      return e;
  // Sizes first (the costs are checked with them by validateProblem).
  if (problem.numRanks < 1 || problem.numRanks > kMaxRanks ||
      problem.numMicrobatches < 1 ||
      problem.numMicrobatches > kMaxMicrobatches || problem.numChunks < 1 ||
      problem.numChunks > kMaxChunks)
    return llvm::createStringError(llvm::formatv(
        "schedule JSON: \"stages\" {0}, \"microbatches\" {1} and "
        "\"virtual_stages\" {2} must lie in [1, {3}], [1, {4}] and [1, {5}]",
        problem.numRanks, problem.numMicrobatches, problem.numChunks,
        kMaxRanks, kMaxMicrobatches, kMaxChunks).str());
  for (auto [key, vec] : {std::pair<const char *, std::vector<double> *>{
                              "cost_f", &problem.costF},
                          {"cost_b", &problem.costB},
                          {"cost_w", &problem.costW},
                          {"cost_comm", &problem.costComm},
                          {"mem_b", &problem.memB},
                          {"mem_w", &problem.memW}})
    if (llvm::Error e = readNumbers(*prob, key, *vec))
      return e;
  // memory_limit: one number for every rank, or one per rank.
  if (std::optional<double> l = prob->getNumber("memory_limit"))
    problem.memoryLimit = *l;
  else if (prob->getArray("memory_limit"))
    if (llvm::Error e =
            readNumbers(*prob, "memory_limit", problem.memoryLimits))
      return e;

  schedule = Schedule();
  if (std::optional<llvm::StringRef> n = root->getString("name"))
    schedule.name = n->str();
  if (const json::Array *map = root->getArray("stage_to_rank")) {
    for (const json::Value &x : *map) {
      std::optional<int64_t> r = x.getAsInteger();
      if (!r || *r < 0 || *r >= kMaxRanks ||
          schedule.stageToRank.size() >= (size_t)(kMaxRanks * kMaxChunks))
        return llvm::createStringError(llvm::formatv(
            "schedule JSON: stage_to_rank must hold at most {0} ranks in "
            "[0, {1})",
            kMaxRanks * kMaxChunks, kMaxRanks).str());
      schedule.stageToRank.push_back(static_cast<int>(*r));
    }
  } else {
    schedule.stageToRank =
        interleavedStageToRank(problem.numRanks, problem.numChunks);
  }
  if (std::optional<llvm::StringRef> c = root->getString("cost_convention"))
    schedule.costConvention =
        *c == "makespan" ? CostConvention::Makespan : CostConvention::StageSpan;
  if (std::optional<bool> f = root->getBoolean("fused_backward"))
    schedule.fusedBackward = *f;
  const json::Array *ranks = root->getArray("ranks");
  if (!ranks)
    return llvm::createStringError("schedule JSON: missing \"ranks\"");
  for (const json::Value &rv : *ranks) {
    const json::Object *ro = rv.getAsObject();
    const json::Array *actions = ro ? ro->getArray("actions") : nullptr;
    if (!actions)
      return llvm::createStringError(
          "schedule JSON: every rank needs an \"actions\" array");
    auto &list = schedule.perRank.emplace_back();
    for (const json::Value &av : *actions) {
      const json::Object *ao = av.getAsObject();
      if (!ao)
        return llvm::createStringError(
            "schedule JSON: an action must be an object");
      std::optional<llvm::StringRef> kind = ao->getString("kind");
      Action a{ActionKind::F, 0, 0};
      if (!kind || (*kind != "F" && *kind != "B" && *kind != "W"))
        return llvm::createStringError(
            "schedule JSON: action kind must be \"F\", \"B\" or \"W\"");
      a.kind = *kind == "F"   ? ActionKind::F
               : *kind == "B" ? ActionKind::B
                              : ActionKind::W;
      if (llvm::Error e = getInt(*ao, "stage", a.stage))
        return e;
      if (llvm::Error e = getInt(*ao, "microbatch", a.microbatch))
        return e;
      list.push_back(a);
    }
  }
  return llvm::Error::success();
}

llvm::Expected<ScheduleFile> zb::sched::readScheduleFile(llvm::StringRef text,
                                                         bool json,
                                                         int numRanks) {
  ScheduleFile file;
  if (json) {
    Problem problem;
    if (llvm::Error e = readJSON(text, problem, file.schedule))
      return std::move(e);
    file.problem = std::move(problem);
    return file;
  }
  llvm::Expected<Schedule> csv = readCSV(text, numRanks);
  if (!csv)
    return csv.takeError();
  file.schedule = std::move(*csv);
  return file;
}

//===----------------------------------------------------------------------===//
// CSV (torch.distributed.pipelining)
//===----------------------------------------------------------------------===//

/// "<stage><F|I|W|B><microbatch>", or "" for the W of a fused backward.
static std::string computeCell(const Schedule &schedule, const Action &a) {
  char type = 'F';
  switch (a.kind) {
  case ActionKind::F:
    type = 'F';
    break;
  case ActionKind::B:
    type = schedule.fusedBackward ? 'B' : 'I';
    break;
  case ActionKind::W:
    if (schedule.fusedBackward)
      return "";
    type = 'W';
    break;
  }
  return llvm::formatv("{0}{1}{2}", a.stage, type, a.microbatch).str();
}

void zb::sched::writeCSV(llvm::raw_ostream &os, const Schedule &schedule,
                         bool withCommunication) {
  auto row = [&](llvm::ArrayRef<std::string> cells) {
    bool first = true;
    for (const std::string &c : cells) {
      if (c.empty())
        continue;
      os << (first ? "" : ",") << c;
      first = false;
    }
    os << "\n";
  };
  if (!withCommunication) {
    for (const auto &list : schedule.perRank) {
      std::vector<std::string> cells;
      for (const Action &a : list)
        cells.push_back(computeCell(schedule, a));
      row(cells);
    }
    return;
  }
  // PyTorch's names: SEND_F / SEND_B carry the sending stage, RECV_F /
  // RECV_B the receiving one (the next stage for an activation, the
  // previous one for a gradient).
  for (const auto &ops : communicationProgram(schedule)) {
    std::vector<std::string> cells;
    for (const CommOp &op : ops) {
      const Action &a = op.action;
      switch (op.kind) {
      case CommOp::Kind::Compute:
        cells.push_back(computeCell(schedule, a));
        break;
      case CommOp::Kind::Send:
        cells.push_back(llvm::formatv("{0}{1}{2}", a.stage,
                                      op.isGradient() ? "SEND_B" : "SEND_F",
                                      a.microbatch)
                            .str());
        break;
      case CommOp::Kind::Recv:
        cells.push_back(
            llvm::formatv("{0}{1}{2}",
                          op.isGradient() ? a.stage - 1 : a.stage + 1,
                          op.isGradient() ? "RECV_B" : "RECV_F", a.microbatch)
                .str());
        break;
      }
    }
    row(cells);
  }
}

namespace {
/// A cell as error messages quote it: at most 40 characters.
std::string quoteCell(llvm::StringRef cell) {
  return cell.size() <= 40 ? cell.str() : (cell.take_front(40) + "...").str();
}

/// PyTorch's actions beside the compute passes (torch.distributed.pipelining
/// _ComputationType, torch 2.15): communication, the waits on sends, and FSDP
/// and gradient-reduction steps, which zb derives from the schedule itself;
/// read as no-ops.
bool isNonComputeAction(llvm::StringRef type) {
  return llvm::is_contained({"UNSHARD", "RESHARD", "SEND_F", "RECV_F", "SEND_B",
                             "RECV_B", "WAIT_SEND_F", "WAIT_SEND_B",
                             "REDUCE_GRAD", "WAIT_REDUCE_GRAD"},
                            type);
}
} // namespace

llvm::Expected<Schedule> zb::sched::readCSV(llvm::StringRef text,
                                            int numRanks) {
  Schedule s;
  s.name = "csv";
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n');
  while (!lines.empty() && lines.back().trim().empty())
    lines.pop_back();
  bool sawFull = false, sawSplit = false;
  int maxStage = -1;
  std::vector<int> stageRank;
  for (size_t row = 0; row < lines.size(); ++row) {
    auto &list = s.perRank.emplace_back();
    llvm::SmallVector<llvm::StringRef> cells;
    lines[row].trim().split(cells, ',');
    // OVERLAP_F_B (DualPipeV): "(0F1;3B0)OVERLAP_F_B" runs its sub-actions
    // in order; every other cell is one action.
    llvm::SmallVector<llvm::StringRef> actions;
    for (llvm::StringRef cell : cells) {
      cell = cell.trim();
      if (cell.empty())
        continue;
      if (cell.starts_with("(") && cell.contains(")")) {
        auto [inner, type] = cell.drop_front().split(')');
        if (type.trim() != "OVERLAP_F_B")
          return llvm::createStringError(
              llvm::formatv("CSV row {0}: action '{1}' groups actions under "
                            "'{2}'; only (..;..)OVERLAP_F_B is supported",
                            row, quoteCell(cell), quoteCell(type))
                  .str());
        llvm::SmallVector<llvm::StringRef> subs;
        inner.split(subs, ';');
        for (llvm::StringRef sub : subs)
          actions.push_back(sub.trim());
        continue;
      }
      actions.push_back(cell);
    }
    for (llvm::StringRef cell : actions) {
      size_t pos = cell.find_first_not_of("0123456789");
      unsigned stage;
      if (pos == 0 || pos == llvm::StringRef::npos ||
          cell.substr(0, pos).getAsInteger(10, stage))
        return llvm::createStringError(
            llvm::formatv("CSV row {0}: cannot parse action '{1}' (expected "
                          "<stage><F|I|W|B><microbatch>, e.g. 0F3)",
                          row, quoteCell(cell))
                .str());
      llvm::StringRef rest = cell.substr(pos);
      size_t digits = rest.find_first_of("0123456789");
      llvm::StringRef type = rest.substr(0, digits);
      if (isNonComputeAction(type))
        continue;
      unsigned mb;
      if (type.size() != 1 || digits == llvm::StringRef::npos ||
          rest.substr(digits).getAsInteger(10, mb))
        return llvm::createStringError(
            llvm::formatv("CSV row {0}: action '{1}' has type '{2}'; the "
                          "compute actions F, I, W, B and PyTorch's UNSHARD, "
                          "RESHARD, SEND_F, RECV_F, SEND_B, RECV_B, "
                          "WAIT_SEND_F, WAIT_SEND_B, REDUCE_GRAD, "
                          "WAIT_REDUCE_GRAD and (..;..)OVERLAP_F_B are "
                          "supported",
                          row, quoteCell(cell), quoteCell(type))
                .str());
      if (stage >= (unsigned)(kMaxRanks * kMaxChunks) ||
          mb >= (unsigned)kMaxMicrobatches)
        return llvm::createStringError(
            llvm::formatv("CSV row {0}: action '{1}': stage {2} or "
                          "microbatch {3} is beyond zb's limits ({4} stages, "
                          "{5} microbatches)",
                          row, quoteCell(cell), stage, mb,
                          kMaxRanks * kMaxChunks, kMaxMicrobatches)
                .str());
      if (stage >= stageRank.size())
        stageRank.resize(stage + 1, -1);
      if (stageRank[stage] >= 0 && stageRank[stage] != (int)row)
        return llvm::createStringError(
            llvm::formatv("CSV row {0}: stage {1} already appears on row {2}",
                          row, stage, stageRank[stage])
                .str());
      stageRank[stage] = row;
      maxStage = std::max<int>(maxStage, stage);
      switch (type[0]) {
      case 'F':
        list.push_back({ActionKind::F, (int)stage, (int)mb});
        break;
      case 'I':
        sawSplit = true;
        list.push_back({ActionKind::B, (int)stage, (int)mb});
        break;
      case 'W':
        sawSplit = true;
        list.push_back({ActionKind::W, (int)stage, (int)mb});
        break;
      case 'B':
        sawFull = true;
        list.push_back({ActionKind::B, (int)stage, (int)mb});
        list.push_back({ActionKind::W, (int)stage, (int)mb});
        break;
      default:
        return llvm::createStringError(
            llvm::formatv("CSV row {0}: action '{1}' has type '{2}'; only "
                          "compute actions F, I, W and B are supported",
                          row, cell, type)
                .str());
      }
    }
  }
  // A full backward B is B directly followed by its W; mixed with split
  // I/W actions (PyTorch's ZB schedules), the gradient of a full B is sent
  // after its B as for I (the schedule is not fused).
  s.fusedBackward = sawFull && !sawSplit;
  if (numRanks > 0)
    s.perRank.resize(std::max<size_t>(numRanks, s.perRank.size()));
  for (int st = 0; st <= maxStage; ++st) {
    if (stageRank[st] < 0)
      return llvm::createStringError(
          llvm::formatv("CSV: stage {0} never appears", st).str());
    s.stageToRank.push_back(stageRank[st]);
  }
  s.costConvention = CostConvention::StageSpan;
  return s;
}

//===----------------------------------------------------------------------===//
// Chrome trace
//===----------------------------------------------------------------------===//

/// The optimizer sync's events: the step on each rank, the state messages
/// as flows, the validation as an instant event (times in us).
static void addSyncTraceEvents(json::Array &events,
                               const OptimizerSyncTiming &sync) {
  int p = sync.ranks.size();
  int64_t flow = 0;
  auto message = [&](llvm::StringRef name, int from, double sent, int to,
                     double arrives) {
    ++flow;
    events.push_back(json::Object{{"name", name}, {"cat", "optimizer_sync"},
                                  {"ph", "s"}, {"id", flow}, {"pid", 0},
                                  {"tid", from}, {"ts", sent * 1000.0}});
    events.push_back(json::Object{{"name", name}, {"cat", "optimizer_sync"},
                                  {"ph", "f"}, {"bp", "e"}, {"id", flow},
                                  {"pid", 0}, {"tid", to},
                                  {"ts", arrives * 1000.0}});
  };
  for (int r = 0; r < p; ++r) {
    const RankSync &s = sync.ranks[r];
    events.push_back(json::Object{
        {"name", sync.mode == OptimizerSync::PostValidation ? "optimizer step (eager)"
                                                            : "optimizer step"},
        {"cat", "optimizer_sync"}, {"ph", "X"}, {"pid", 0}, {"tid", r},
        {"ts", s.stepStart * 1000.0},
        {"dur", (s.stepEnd - s.stepStart) * 1000.0}});
    if (sync.mode == OptimizerSync::PostValidation) {
      if (r + 1 < p)
        message("partial state", r, s.stateOut, r + 1,
                sync.ranks[r + 1].stateIn);
      if (r + 1 < p)
        message("full state", p - 1, sync.ranks[p - 1].stepStart, r,
                s.fullArrives);
      double at = validationTime(sync, r);
      events.push_back(json::Object{
          {"name", "validate"}, {"cat", "optimizer_sync"}, {"ph", "i"},
          {"s", "t"}, {"pid", 0}, {"tid", r}, {"ts", at * 1000.0},
          {"args", json::Object{{"before_action",
                                 static_cast<int64_t>(s.validateBefore)},
                                {"forwards_redone_on_rollback",
                                 s.forwardsBeforeValidation}}}});
    } else if (sync.mode == OptimizerSync::AllReduce && s.stateIn >= 0) {
      events.push_back(json::Object{
          {"name", "all-reduce"}, {"cat", "optimizer_sync"}, {"ph", "X"},
          {"pid", 0}, {"tid", r}, {"ts", s.passesEnd * 1000.0},
          {"dur", (s.stateIn - s.passesEnd) * 1000.0}});
    }
  }
}

void zb::sched::writeTrace(llvm::raw_ostream &os, const Schedule &schedule,
                           const SimResult &sim,
                           const OptimizerSyncTiming *sync) {
  json::Array events;
  auto addPasses = [&](const SimResult &iteration, int number) {
    for (size_t r = 0; r < iteration.timeline.size(); ++r)
      for (const TimedAction &t : iteration.timeline[r]) {
        const Action &a = t.action;
        json::Object args{{"stage", a.stage}, {"microbatch", a.microbatch}};
        if (sync)
          args["iteration"] = number;
        events.push_back(json::Object{
            {"name", (kindName(a.kind) + llvm::Twine(a.microbatch)).str()},
            {"cat", kindName(a.kind)},
            {"ph", "X"},
            {"pid", 0},
            {"tid", static_cast<int64_t>(r)},
            {"ts", t.start * 1000.0},
            {"dur", (t.end - t.start) * 1000.0},
            {"args", std::move(args)}});
      }
  };
  for (size_t r = 0; r < sim.timeline.size(); ++r)
    events.push_back(json::Object{
        {"name", "thread_name"},
        {"ph", "M"},
        {"pid", 0},
        {"tid", static_cast<int64_t>(r)},
        {"args", json::Object{{"name", llvm::formatv("rank {0}", r).str()}}}});
  json::Object other{{"schedule", schedule.name},
                     {"bubble_rate", sim.bubbleRate},
                     {"cost_ms", sim.cost}};
  if (sync) {
    addPasses(sync->first, 1);
    addPasses(sync->second, 2);
    addSyncTraceEvents(events, *sync);
    other["optimizer_sync"] = optimizerSyncName(sync->mode);
    other["steady_state_period_ms"] = sync->period;
    other["steady_state_bubble_rate"] = sync->bubbleRate;
  } else {
    addPasses(sim, 1);
  }
  json::Object root{{"traceEvents", std::move(events)},
                    {"displayTimeUnit", "ms"},
                    {"otherData", std::move(other)}};
  os << llvm::formatv("{0}", json::Value(std::move(root))) << "\n";
}

//===----------------------------------------------------------------------===//
// SVG
//===----------------------------------------------------------------------===//

/// The optimizer sync drawn over a two-iteration chart: the step (orange),
/// the partial-state messages (red arrows), the full state (purple, dashed),
/// the validation (black bar) or the all-reduce (red band).
static void writeSyncSVG(llvm::raw_ostream &os, const OptimizerSyncTiming &sync,
                         double left, double top, double rowH, double scale) {
  int p = sync.ranks.size();
  auto x = [&](double t) { return left + t * scale; };
  auto arrow = [&](int from, double sent, int to, double arrives,
                   const char *colour, const char *dash, llvm::StringRef what) {
    double y1 = top + from * rowH + (to > from ? rowH - 2 : 2);
    double y2 = top + to * rowH + (to > from ? 2 : rowH - 2);
    os << llvm::formatv("<line x1=\"{0:F2}\" y1=\"{1}\" x2=\"{2:F2}\" "
                        "y2=\"{3}\" stroke=\"{4}\" stroke-width=\"1.2\"{5} "
                        "marker-end=\"url(#arrow)\"><title>{6}: rank {7} "
                        "-> rank {8}, sent {9:F3}, arrives {10:F3}</title>"
                        "</line>\n",
                        x(sent), y1, x(arrives), y2, colour, dash, what, from,
                        to, sent, arrives);
  };
  for (int r = 0; r < p; ++r) {
    const RankSync &s = sync.ranks[r];
    double y = top + r * rowH;
    if (sync.mode == OptimizerSync::AllReduce && s.stateIn > s.passesEnd)
      os << llvm::formatv("<rect x=\"{0:F2}\" y=\"{1}\" width=\"{2:F2}\" "
                          "height=\"{3}\" fill=\"#f4a6a6\"><title>all-reduce "
                          "[{4:F3}, {5:F3}]</title></rect>\n",
                          x(s.passesEnd), y + rowH * 0.35,
                          (s.stateIn - s.passesEnd) * scale, rowH * 0.3,
                          s.passesEnd, s.stateIn);
    os << llvm::formatv("<rect x=\"{0:F2}\" y=\"{1}\" width=\"{2:F2}\" "
                        "height=\"{3}\" fill=\"#f0a030\" stroke=\"#333\" "
                        "stroke-width=\"0.5\"><title>optimizer step{4} "
                        "[{5:F3}, {6:F3}]</title></rect>\n",
                        x(s.stepStart), y + 1,
                        std::max(3.0, (s.stepEnd - s.stepStart) * scale),
                        rowH - 2,
                        sync.mode == OptimizerSync::PostValidation ? " (eager)"
                                                                   : "",
                        s.stepStart, s.stepEnd);
  }
  if (sync.mode != OptimizerSync::PostValidation)
    return;
  for (int r = 0; r + 1 < p; ++r)
    arrow(r, sync.ranks[r].stateOut, r + 1, sync.ranks[r + 1].stateIn,
          "#c0392b", "", "partial state");
  for (int r = 0; r + 1 < p; ++r)
    arrow(p - 1, sync.ranks[p - 1].stepStart, r, sync.ranks[r].fullArrives,
          "#7d3c98", " stroke-dasharray=\"3,2\"", "full state");
  for (int r = 0; r < p; ++r) {
    const RankSync &s = sync.ranks[r];
    double at = validationTime(sync, r);
    os << llvm::formatv("<rect x=\"{0:F2}\" y=\"{1}\" width=\"2\" "
                        "height=\"{2}\" fill=\"#000\"><title>validate before "
                        "action {3} of the next iteration ({4} forward(s) "
                        "redone on a rollback)</title></rect>\n",
                        x(at) - 1, top + r * rowH - 2, rowH + 2,
                        s.validateBefore, s.forwardsBeforeValidation);
  }
}

void zb::sched::writeSVG(llvm::raw_ostream &os, const Problem &problem,
                         const Schedule &schedule, const SimResult &sim,
                         const OptimizerSyncTiming *sync) {
  const double width = 1400, rowH = 24, left = 70, top = 40, legendH = 30;
  int p = sim.timeline.size();
  double span = std::max(sync ? sync->second.makespan : sim.makespan, 1e-9);
  double scale = (width - left - 10) / span;
  double height = top + p * rowH + legendH + 10;
  // Colours in the spirit of the paper's figures: F blue, B teal, W green.
  auto fill = [&](const Action &a) -> const char * {
    bool second = problem.numChunks > 1 &&
                  a.stage >= problem.numRanks; // later chunks darker
    switch (a.kind) {
    case ActionKind::F:
      return second ? "#5b8fd6" : "#9ec5f4";
    case ActionKind::B:
      return second ? "#3aa8a0" : "#8fe0d9";
    case ActionKind::W:
      return second ? "#4f9a45" : "#a6dc9c";
    }
    return "#ccc";
  };
  os << llvm::formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" "
                      "width=\"{0}\" height=\"{1}\" font-family=\"sans-serif\" "
                      "font-size=\"10\">\n",
                      width, height);
  if (sync)
    os << "<defs><marker id=\"arrow\" viewBox=\"0 0 6 6\" refX=\"6\" refY=\"3\" "
        "markerWidth=\"5\" markerHeight=\"5\" orient=\"auto\"><path d=\"M0,0 "
        "L6,3 L0,6 z\"/></marker></defs>\n";
  std::string syncTitle;
  if (sync)
    syncTitle = llvm::formatv("; optimizer sync {0}: steady-state iteration "
                              "{1:F3} ms, bubble rate {2:F4}",
                              optimizerSyncName(sync->mode), sync->period,
                              sync->bubbleRate)
                    .str();
  os << llvm::formatv(
      "<text x=\"{0}\" y=\"20\" font-size=\"13\">{1}: p={2} "
      "m={3}{4}, bubble rate {5:F4}, cost {6:F3}, peak "
      "memory {7}{8}</text>\n",
      left, schedule.name, problem.numRanks, problem.numMicrobatches,
      problem.numChunks > 1 ? llvm::formatv(" V={0}", problem.numChunks).str()
                            : "",
      sim.bubbleRate, sim.cost,
      sim.peakMemory.empty()
          ? 0.0
          : *std::max_element(sim.peakMemory.begin(), sim.peakMemory.end()),
      syncTitle);
  auto boxes = [&](const SimResult &iteration, int r, double y,
                   const char *opacity) {
    for (const TimedAction &t : iteration.timeline[r]) {
      double x = left + t.start * scale, w = (t.end - t.start) * scale;
      os << llvm::formatv("<rect x=\"{0:F2}\" y=\"{1}\" width=\"{2:F2}\" "
                          "height=\"{3}\" fill=\"{4}\" stroke=\"#333\" "
                          "stroke-width=\"0.5\"{10}><title>{5}{6} stage {7} "
                          "[{8:F3}, {9:F3}]</title></rect>\n",
                          x, y + 1, w, rowH - 2, fill(t.action),
                          kindName(t.action.kind), t.action.microbatch,
                          t.action.stage, t.start, t.end, opacity);
      if (w >= 7)
        os << llvm::formatv("<text x=\"{0:F2}\" y=\"{1}\" "
                            "text-anchor=\"middle\">{2}</text>\n",
                            x + w / 2, y + rowH * 0.65, t.action.microbatch);
    }
  };
  for (int r = 0; r < p; ++r) {
    double y = top + r * rowH;
    os << llvm::formatv("<text x=\"5\" y=\"{0}\">rank {1}</text>\n",
                        y + rowH * 0.65, r);
    // Idle time: the grey background shows through.
    os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" "
                        "height=\"{3}\" fill=\"#e6e6e6\"/>\n",
                        left, y + 1, span * scale, rowH - 2);
    if (sync) {
      boxes(sync->first, r, y, "");
      boxes(sync->second, r, y, " fill-opacity=\"0.5\"");
    } else {
      boxes(sim, r, y, "");
    }
  }
  if (sync)
    writeSyncSVG(os, *sync, left, top, rowH, scale);
  double ly = top + p * rowH + 12;
  const char *names[] = {"F (forward)", "B (input gradient)",
                         "W (weight gradient)", "idle", "optimizer step"};
  const char *colours[] = {"#9ec5f4", "#8fe0d9", "#a6dc9c", "#e6e6e6",
                           "#f0a030"};
  for (int k = 0; k < (sync ? 5 : 4); ++k) {
    double x = left + k * 170;
    os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"14\" "
                        "height=\"12\" fill=\"{2}\" stroke=\"#333\" "
                        "stroke-width=\"0.5\"/><text x=\"{3}\" y=\"{4}\">{5}"
                        "</text>\n",
                        x, ly, colours[k], x + 18, ly + 10, names[k]);
  }
  if (sync && sync->mode == OptimizerSync::PostValidation)
    os << llvm::formatv("<text x=\"{0}\" y=\"{1}\">red: partial state, "
                        "purple: full state, black bar: validation; the next "
                        "iteration is pale</text>\n",
                        left + 5 * 170, ly + 10);
  os << "</svg>\n";
}
