//===- IO/JSON.cpp - The zb-schedule JSON document ------------------------===//
//
// toJSON, writeJSON, readJSON and readScheduleFile (zb/Schedule/IO.h
// describes the schema).
//
//===----------------------------------------------------------------------===//

#include "zb/Schedule/IO.h"
#include "zb/Support/JSON.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace zb::sched;
namespace json = llvm::json;

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
  // Only an overlapping problem names alpha (the documents of alpha = 0 are
  // as before it existed).
  if (problem.fbOverlap != 0)
    prob["fb_overlap"] = problem.fbOverlap;
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
  json::Object out{
      {"format", "zb-schedule"},
      {"version", 1},
      {"name", schedule.name},
      {"problem", std::move(prob)},
      {"stage_to_rank", std::move(stageToRank)},
      {"cost_convention", costConventionName(schedule.costConvention)},
      {"fused_backward", schedule.fusedBackward},
      {"cost", sim.cost},
      {"makespan", sim.makespan},
      {"stage_span", sim.stageSpan},
      {"ideal_time", sim.idealTime},
      {"bubble_rate", sim.bubbleRate},
      {"peak_memory", toArray(sim.peakMemory)},
      {"ranks", std::move(ranks)}};
  // Only bidirectional pipelines (DualPipe) name their directions.
  if (schedule.directions != 1)
    out["directions"] = schedule.directions;
  // Only schedules with overlapped F&B pairs list them, per rank.
  if (schedule.hasFBPairs()) {
    json::Array pairs;
    for (const std::vector<int> &list : schedule.fbPairs) {
      json::Array indices;
      for (int i : list)
        indices.push_back(i);
      pairs.push_back(std::move(indices));
    }
    out["fb_pairs"] = std::move(pairs);
  }
  return out;
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

llvm::Error zb::sched::readJSON(llvm::StringRef text, Problem &problem,
                                Schedule &schedule) {
  if (llvm::Error e = zb::support::checkJSONNesting(text, "schedule JSON"))
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
  // fb_overlap: alpha of the overlapped F&B pairs (validateProblem checks
  // its range).
  if (const json::Value *v = prob->get("fb_overlap")) {
    std::optional<double> a = v->getAsNumber();
    if (!a)
      return llvm::createStringError(
          "schedule JSON: problem.fb_overlap must be a number in [0, 1]");
    problem.fbOverlap = *a;
  }

  schedule = Schedule();
  // Only bidirectional pipelines (DualPipe) name their directions.
  if (root->get("directions")) {
    std::optional<int64_t> d = root->getInteger("directions");
    if (!d || (*d != 1 && *d != 2))
      return llvm::createStringError(
          "schedule JSON: \"directions\" must be 1 or 2 (DualPipe)");
    schedule.directions = static_cast<int>(*d);
  }
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
  // Any text but "makespan" reads as the stage span (as zb always read it).
  if (std::optional<llvm::StringRef> c = root->getString("cost_convention"))
    schedule.costConvention =
        parseCostConvention(*c).value_or(CostConvention::StageSpan);
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
  // fb_pairs: one array of action indices per rank (verify() checks what
  // they mark).
  if (const json::Value *v = root->get("fb_pairs")) {
    const json::Array *lists = v->getAsArray();
    auto bad = [&] {
      return llvm::createStringError(llvm::formatv(
          "schedule JSON: \"fb_pairs\" must be an array of {0} arrays (one "
          "per rank) of action indices in [0, {1}]",
          schedule.perRank.size(), kMaxStageMicrobatches * 3).str());
    };
    if (!lists || lists->size() != schedule.perRank.size())
      return bad();
    for (const json::Value &lv : *lists) {
      const json::Array *indices = lv.getAsArray();
      if (!indices)
        return bad();
      auto &pairs = schedule.fbPairs.emplace_back();
      for (const json::Value &x : *indices) {
        std::optional<int64_t> i = x.getAsInteger();
        if (!i || *i < 0 || *i > kMaxStageMicrobatches * 3)
          return bad();
        pairs.push_back(static_cast<int>(*i));
      }
    }
    if (!schedule.hasFBPairs())
      schedule.fbPairs.clear();
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

llvm::Expected<ScheduleFile> zb::sched::loadScheduleFile(llvm::StringRef path,
                                                         int numRanks) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return llvm::createStringError("cannot read: " +
                                   buffer.getError().message());
  llvm::StringRef text = (*buffer)->getBuffer();
  const bool json = looksLikeScheduleJSON(text);
  auto file = readScheduleFile(text, json, numRanks);
  if (file && !json)
    file->schedule.costConvention = CostConvention::StageSpan;
  return file;
}
