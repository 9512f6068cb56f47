//===- Profile.cpp - profile.json: the one reader and the one writer ------===//
//
// Both walk the same tables of fields (kTimes, kCvs, kCounts), so that the
// names and the order of the fields exist once.
//
//===----------------------------------------------------------------------===//

#include "zb/Support/AtomicFile.h"
#include "zb/Formats/Profile.h"
#include "zb/Support/JSON.h"
#include "zb/Schedule/IO.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>

using namespace llvm;
using namespace zb::formats;

namespace {

/// Required times (ms, >= 0).
const std::pair<const char *, double ProfiledStage::*> kTimes[] = {
    {"t_f", &ProfiledStage::tF},
    {"t_b", &ProfiledStage::tB},
    {"t_w", &ProfiledStage::tW},
    {"t_comm", &ProfiledStage::tComm}};
/// Optional coefficients of variation (>= 0, finite).
const std::pair<const char *, std::optional<double> ProfiledStage::*> kCvs[] = {
    {"cv_f", &ProfiledStage::cvF},
    {"cv_b", &ProfiledStage::cvB},
    {"cv_w", &ProfiledStage::cvW}};
/// Optional pass counts (>= 0).
const std::pair<const char *, std::optional<int64_t> ProfiledStage::*>
    kCounts[] = {{"count_f", &ProfiledStage::countF},
                 {"count_b", &ProfiledStage::countB},
                 {"count_w", &ProfiledStage::countW}};

Error profileError(StringRef path, const Twine &message) {
  return createStringError(inconvertibleErrorCode(),
                           "profile '" + path + "': " + message);
}

/// The optional integer `key` of stage entry `i` (>= min) into `out`.
Error readInteger(StringRef path, const json::Object &s, size_t i,
                  StringRef key, int64_t min, int64_t &out) {
  const json::Value *v = s.get(key);
  if (!v)
    return Error::success();
  std::optional<int64_t> n = v->getAsInteger();
  if (!n || *n < min)
    return profileError(path, formatv("stage {0}: \"{1}\" is not an integer "
                                      ">= {2}",
                                      i, key, min));
  out = *n;
  return Error::success();
}

Expected<ProfiledStage> readStage(StringRef path, const json::Value &v,
                                  size_t i) {
  const json::Object *s = v.getAsObject();
  ProfiledStage st;
  st.stage = (int64_t)i;
  for (auto [key, member] : kTimes) {
    std::optional<double> t = s ? s->getNumber(key) : std::nullopt;
    if (!t || *t < 0)
      return profileError(
          path, formatv("stage {0}: missing or negative \"{1}\"", i, key));
    // JSON numbers such as 1e999 parse as infinity.
    if (!std::isfinite(*t) || *t > 1e15)
      return profileError(path, formatv("stage {0}: \"{1}\" = {2} ms is not "
                                        "a finite time (at most 1e15 ms)",
                                        i, key, *t));
    st.*member = *t;
  }
  for (auto [key, member] : kCvs) {
    if (!s->get(key))
      continue;
    std::optional<double> cv = s->getNumber(key);
    if (!cv)
      return profileError(
          path, formatv("stage {0}: \"{1}\" is not a number", i, key));
    if (*cv < 0 || !std::isfinite(*cv))
      return profileError(path, formatv("stage {0}: \"{1}\" = {2}; a "
                                        "coefficient of variation must be "
                                        ">= 0",
                                        i, key, *cv));
    st.*member = *cv;
  }
  if (Error e = readInteger(path, *s, i, "stage", 0, st.stage))
    return std::move(e);
  if (Error e = readInteger(path, *s, i, "rank", -1, st.rank))
    return std::move(e);
  for (auto [key, member] : kCounts) {
    int64_t n = -1;
    if (Error e = readInteger(path, *s, i, key, 0, n))
      return std::move(e);
    if (n >= 0)
      st.*member = n;
  }
  return st;
}

} // namespace

Expected<Profile> zb::formats::parseProfile(StringRef text, StringRef path) {
  if (Error e = zb::support::checkJSONNesting(text, path))
    return std::move(e);
  Expected<json::Value> json = json::parse(text);
  if (!json)
    return profileError(path, "invalid JSON: " + toString(json.takeError()));
  const json::Object *root = json->getAsObject();
  const json::Array *stages = root ? root->getArray("stages") : nullptr;
  if (!root || root->getString("format") != "zb-profile" || !stages)
    return profileError(path, "not a zb-run --profile file (expected "
                              "\"format\": \"zb-profile\" and \"stages\")");
  if (std::optional<int64_t> version = root->getInteger("version"))
    if (*version != 1)
      return profileError(path, formatv("unsupported version {0} (this "
                                        "reader reads version 1)",
                                        *version));
  Profile profile;
  if (std::optional<StringRef> plan = root->getString("plan"))
    profile.plan = plan->str();
  if (std::optional<int64_t> steps = root->getInteger("steps"))
    profile.steps = *steps;
  for (auto [i, v] : enumerate(*stages)) {
    Expected<ProfiledStage> st = readStage(path, v, i);
    if (!st)
      return st.takeError();
    profile.stages.push_back(*st);
  }
  // Entries may come in any order but must number the stages 0..N-1 once
  // each; consumers index them by position, so they are sorted by stage.
  std::vector<int64_t> entryOf(profile.stages.size(), -1);
  for (auto [i, st] : enumerate(profile.stages)) {
    if (st.stage >= (int64_t)profile.stages.size())
      return profileError(path, formatv("entry {0} is stage {1}, but the "
                                        "file has {2} stages (numbered 0 to "
                                        "{3})",
                                        i, st.stage, profile.stages.size(),
                                        profile.stages.size() - 1));
    if (entryOf[st.stage] >= 0)
      return profileError(path, formatv("entries {0} and {1} are both stage "
                                        "{2}",
                                        entryOf[st.stage], i, st.stage));
    entryOf[st.stage] = (int64_t)i;
  }
  llvm::sort(profile.stages, [](const ProfiledStage &a,
                                const ProfiledStage &b) {
    return a.stage < b.stage;
  });
  return profile;
}

Expected<Profile> zb::formats::readProfile(StringRef path) {
  auto buffer = MemoryBuffer::getFile(path);
  if (!buffer)
    return profileError(path, "cannot read: " + buffer.getError().message());
  return parseProfile((*buffer)->getBuffer(), path);
}

void zb::formats::writeProfile(raw_ostream &os, const Profile &profile) {
  json::OStream j(os, 2);
  j.object([&] {
    j.attribute("format", "zb-profile");
    j.attribute("version", 1);
    j.attribute("plan", profile.plan);
    j.attribute("steps", profile.steps);
    j.attributeArray("stages", [&] {
      for (const ProfiledStage &st : profile.stages)
        j.object([&] {
          j.attribute("stage", st.stage);
          j.attribute("rank", st.rank);
          for (auto [key, member] : kTimes)
            j.attribute(key, st.*member);
          for (auto [key, member] : kCvs)
            if (st.*member)
              j.attribute(key, *(st.*member));
          for (auto [key, member] : kCounts)
            if (st.*member)
              j.attribute(key, *(st.*member));
        });
    });
  });
  os << "\n";
}

Error zb::formats::writeProfile(const Profile &profile, StringRef path) {
  return zb::support::writeFileAtomically(path, [&](raw_ostream &os) {
    writeProfile(os, profile);
    return Error::success();
  });
}
