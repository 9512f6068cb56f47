//===- Checkpoint.cpp - zb-run checkpoints: the format --------------------===//
//
// See zb/Formats/Checkpoint.h.
//
//===----------------------------------------------------------------------===//

#include "zb/Formats/Checkpoint.h"

#include "zb/Support/Checksum.h"
#include "zb/Support/JSON.h"
#include "zb/Schedule/IO.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace zb::formats;

namespace {
Error fail(StringRef path, const Twine &message) {
  return createStringError(inconvertibleErrorCode(),
                           "checkpoint '" + path + "': " + message);
}
} // namespace

std::string zb::formats::planHash(const Plan &plan) {
  // Without "params_checksum": the hash names the plan a checkpoint's
  // parameters fit (their layout, the schedule, the programs), not its
  // initial values, and checkpoints written before plans carried the
  // checksum still resume a plan recompiled unchanged.
  json::Value doc = toJSON(plan);
  doc.getAsObject()->erase("params_checksum");
  // The parameters fit every data-parallel degree.
  doc.getAsObject()->erase("data_parallel");
  std::string text;
  raw_string_ostream os(text);
  os << doc;
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return formatv("{0:x-16}", h).str();
}

std::string zb::formats::checkpointDirName(int64_t step) {
  return formatv("step-{0:d8}", step).str();
}

std::string zb::formats::checkpointJSON(const CheckpointInfo &info) {
  json::Object o{{"format", "zb-checkpoint"},
                 {"version", 1},
                 {"step", info.step},
                 {"optimizer_step", info.optimizerStep},
                 {"optimizer", zb::optimizerName(info.optimizer)},
                 // As a string: JSON numbers are doubles, seeds are 64-bit.
                 {"seed", std::to_string(info.seed)},
                 {"num_ranks", info.numRanks},
                 {"plan_hash", info.planHash}};
  if (!info.checksums.empty()) {
    json::Object sums;
    for (const auto &[name, sum] : info.checksums)
      sums[name] = sum;
    o["checksums"] = std::move(sums);
  }
  if (info.training)
    o["training"] = toJSON(*info.training);
  return formatv("{0:2}\n", json::Value(std::move(o))).str();
}

Expected<CheckpointInfo> zb::formats::parseCheckpoint(StringRef text,
                                                   StringRef path) {
  if (Error e = zb::support::checkJSONNesting(text, ("checkpoint '" + path + "'").str()))
    return std::move(e);
  Expected<json::Value> doc = json::parse(text);
  if (!doc)
    return fail(path, "not JSON: " + toString(doc.takeError()));
  const json::Object *o = doc->getAsObject();
  if (!o || o->getString("format") != StringRef("zb-checkpoint"))
    return fail(path, "not a zb-run checkpoint (expected \"format\": "
                      "\"zb-checkpoint\")");
  if (o->getInteger("version") != 1)
    return fail(path, "\"version\" must be 1");
  CheckpointInfo info;
  auto integer = [&](StringRef key, int64_t lo, int64_t hi,
                     int64_t &out) -> Error {
    std::optional<int64_t> v = o->getInteger(key);
    if (!v || *v < lo || *v > hi)
      return fail(path, formatv("\"{0}\" must be an integer in [{1}, {2}]",
                                key, lo, hi));
    out = *v;
    return Error::success();
  };
  int64_t ranks = 0;
  if (Error e = integer("step", 1, INT64_MAX / 2, info.step))
    return std::move(e);
  if (Error e = integer("optimizer_step", 0, info.step, info.optimizerStep))
    return std::move(e);
  if (Error e = integer("num_ranks", 1, 4096, ranks))
    return std::move(e);
  info.numRanks = (int32_t)ranks;
  std::optional<StringRef> opt = o->getString("optimizer");
  Expected<zb::Optimizer> kind =
      opt ? zb::parseOptimizer(*opt)
          : Expected<zb::Optimizer>(createStringError("absent"));
  if (!kind) {
    consumeError(kind.takeError());
    return fail(path, "\"optimizer\" must be \"sgd\" or \"adamw\"");
  }
  info.optimizer = *kind;
  std::optional<StringRef> seed = o->getString("seed");
  if (!seed || seed->getAsInteger(10, info.seed))
    return fail(path, "\"seed\" must be a decimal string");
  std::optional<StringRef> hash = o->getString("plan_hash");
  if (!hash || hash->size() != 16)
    return fail(path, "\"plan_hash\" must be 16 hex digits");
  info.planHash = hash->str();
  if (const json::Value *sums = o->get("checksums")) {
    const json::Object *m = sums->getAsObject();
    if (!m)
      return fail(path, "\"checksums\" must be an object of file names to "
                        "16 hex digits");
    for (const auto &[name, sum] : *m) {
      std::optional<StringRef> s = sum.getAsString();
      StringRef file = name;
      if (!s || s->size() != 16 || file.empty() || file.contains('/') ||
          file.contains('\\') || file == "." || file == "..")
        return fail(path, "\"checksums\": entry '" + file +
                              "' must name a file of the directory and hold "
                              "16 hex digits");
      info.checksums[file.str()] = s->str();
    }
  }
  if (const json::Value *training = o->get("training")) {
    Expected<TrainingSettings> t =
        parseTrainingSettings(*training, ("checkpoint '" + path + "'").str());
    if (!t)
      return t.takeError();
    info.training = *t;
  }
  info.dir = sys::path::parent_path(path).str();
  return info;
}

Expected<std::string> zb::formats::fileChecksum(StringRef path) {
  auto buffer = MemoryBuffer::getFile(path, /*IsText=*/false,
                                      /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fail(path, "cannot read: " + buffer.getError().message());
  return zb::support::xxh3Hex((*buffer)->getBuffer());
}

Error zb::formats::verifyCheckpointFiles(const CheckpointInfo &info) {
  for (const auto &[name, want] : info.checksums) {
    SmallString<256> file(info.dir);
    sys::path::append(file, name);
    Expected<std::string> got = fileChecksum(file);
    if (!got)
      return got.takeError();
    if (*got != want)
      return fail(file, formatv("damaged: its checksum is {0}, checkpoint.json "
                                "records {1} (the file changed after it was "
                                "written; resume from another checkpoint)",
                                *got, want));
  }
  return Error::success();
}

static Expected<CheckpointInfo> readCheckpointDir(StringRef dir) {
  SmallString<256> file(dir);
  sys::path::append(file, "checkpoint.json");
  auto buffer = MemoryBuffer::getFile(file);
  if (!buffer)
    return fail(file, "cannot read: " + buffer.getError().message());
  return parseCheckpoint((*buffer)->getBuffer(), file);
}

Expected<CheckpointInfo> zb::formats::findCheckpoint(StringRef path) {
  if (!sys::fs::is_directory(path))
    return fail(path, "no such directory");
  SmallString<256> direct(path);
  sys::path::append(direct, "checkpoint.json");
  if (sys::fs::exists(direct))
    return readCheckpointDir(path);
  // The newest complete step-<S> (temporary directories end in .tmp.<pid>).
  std::string best;
  std::error_code ec;
  for (sys::fs::directory_iterator it(path, ec), end; it != end && !ec;
       it.increment(ec)) {
    StringRef name = sys::path::filename(it->path());
    int64_t step = 0;
    if (!name.starts_with("step-") || name.size() != 13 ||
        name.drop_front(5).getAsInteger(10, step))
      continue;
    if (name.str() > sys::path::filename(best))
      best = it->path();
  }
  if (best.empty())
    return fail(path, "holds no complete checkpoint (step-<S> directory)");
  return readCheckpointDir(best);
}

Error zb::formats::checkResumable(const CheckpointInfo &info, const Plan &plan,
                               uint64_t seed) {
  const std::string where = info.dir + "/checkpoint.json";
  if (info.planHash != planHash(plan))
    return fail(where, formatv("was written for another plan (plan hash {0}, "
                               "{1} has {2})",
                               info.planHash, plan.path, planHash(plan)));
  if (info.numRanks != plan.numRanks)
    return fail(where, formatv("has {0} ranks, {1} has {2}", info.numRanks,
                               plan.path, plan.numRanks));
  if (info.optimizer != plan.optimizer.kind)
    return fail(where, formatv("optimizer {0}, but the plan's is {1}",
                               zb::optimizerName(info.optimizer),
                               zb::optimizerName(plan.optimizer.kind)));
  if (seed != 0 && seed != info.seed)
    return fail(where, formatv("--seed {0} differs from the checkpoint's "
                               "seed {1} (leave --seed out to continue its "
                               "batches)",
                               seed, info.seed));
  return Error::success();
}
