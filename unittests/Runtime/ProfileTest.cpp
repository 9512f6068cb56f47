//===- ProfileTest.cpp - profile.json: the one reader and the one writer --===//
//
// zb/Formats/Profile.h: written then read equal (with and without the optional
// fields), the field order zb-compile-output.test relies on, and the
// messages of applyProfile (test/Transforms/zb-schedule.mlir,
// test/Tools/zb-compile-output.test) produced by the reader.
//
//===----------------------------------------------------------------------===//

#include "zb/Formats/Profile.h"

#include "gtest/gtest.h"

#include <unistd.h>

#include <cstdio>
#include <string>

using namespace zb::formats;

namespace {

Profile sampleProfile() {
  Profile p;
  p.plan = "out/plan.json";
  p.steps = 5;
  ProfiledStage s0;
  s0.stage = 0;
  s0.rank = 0;
  s0.tF = 0.25;
  s0.tB = 0.5;
  s0.tW = 0.125;
  s0.tComm = 0.015625;
  s0.cvF = 0.125;
  s0.cvB = 0.25;
  s0.cvW = 0.375;
  s0.countF = 16;
  s0.countB = 16;
  s0.countW = 15;
  ProfiledStage s1; // a profile written before cv_x and count_x existed
  s1.stage = 1;
  s1.rank = -1;
  s1.tF = 1.0 / 3;
  s1.tB = 2.5;
  s1.tW = 0;
  s1.tComm = 0;
  p.stages = {s0, s1};
  return p;
}

std::string written(const Profile &p) {
  std::string text;
  llvm::raw_string_ostream os(text);
  writeProfile(os, p);
  return text;
}

std::string errorOf(llvm::StringRef text) {
  llvm::Expected<Profile> p = parseProfile(text, "p.json");
  return p ? std::string("<no error>") : llvm::toString(p.takeError());
}

TEST(Profile, WriteThenReadIsEqual) {
  Profile a = sampleProfile();
  llvm::Expected<Profile> b = parseProfile(written(a), "p.json");
  ASSERT_TRUE(!!b) << llvm::toString(b.takeError());
  EXPECT_EQ(b->plan, a.plan);
  EXPECT_EQ(b->steps, a.steps);
  ASSERT_EQ(b->stages.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    const ProfiledStage &x = a.stages[i], &y = b->stages[i];
    EXPECT_EQ(x.stage, y.stage);
    EXPECT_EQ(x.rank, y.rank);
    EXPECT_EQ(x.tF, y.tF);
    EXPECT_EQ(x.tB, y.tB);
    EXPECT_EQ(x.tW, y.tW);
    EXPECT_EQ(x.tComm, y.tComm);
    EXPECT_EQ(x.cvF, y.cvF);
    EXPECT_EQ(x.cvB, y.cvB);
    EXPECT_EQ(x.cvW, y.cvW);
    EXPECT_EQ(x.countF, y.countF);
    EXPECT_EQ(x.countB, y.countB);
    EXPECT_EQ(x.countW, y.countW);
  }
}

TEST(Profile, WritesFieldsInTheDocumentedOrder) {
  std::string text = written(sampleProfile());
  size_t at = 0;
  for (const char *key :
       {"\"format\": \"zb-profile\"", "\"version\": 1",
        "\"plan\": ", "\"steps\": 5", "\"stage\": 0", "\"rank\": 0",
        "\"t_f\": 0.25", "\"t_b\": 0.5", "\"t_w\": 0.125",
        "\"t_comm\": 0.015625", "\"cv_f\": 0.125", "\"cv_b\": 0.25",
        "\"cv_w\": 0.375", "\"count_f\": 16", "\"count_b\": 16",
        "\"count_w\": 15", "\"stage\": 1", "\"rank\": -1"}) {
    size_t next = text.find(key, at);
    ASSERT_NE(next, std::string::npos) << key << " after " << at << "\n"
                                       << text;
    at = next;
  }
  // The second stage has no cv_x / count_x: none written after it.
  EXPECT_EQ(text.find("cv_", at), std::string::npos) << text;
  EXPECT_EQ(text.back(), '\n');
}

TEST(Profile, AcceptsTheMinimalHandWrittenForm) {
  llvm::Expected<Profile> p = parseProfile(
      R"({"format": "zb-profile", "stages": [
            {"t_f": 2.0, "t_b": 2, "t_w": 1.0, "t_comm": 0.0}]})",
      "p.json");
  ASSERT_TRUE(!!p) << llvm::toString(p.takeError());
  ASSERT_EQ(p->stages.size(), 1u);
  EXPECT_EQ(p->stages[0].stage, 0);
  EXPECT_EQ(p->stages[0].rank, -1);
  EXPECT_EQ(p->stages[0].tB, 2.0);
  EXPECT_FALSE(p->stages[0].cvF.has_value());
  EXPECT_FALSE(p->stages[0].countW.has_value());
}

TEST(Profile, ErrorsNameFileStageAndField) {
  const std::string head = R"({"format": "zb-profile", "stages": [)";
  const std::string ok = R"({"t_f": 1, "t_b": 1, "t_w": 1, "t_comm": 0})";
  EXPECT_EQ(errorOf(head + ok + R"(, {"t_f": 1, "t_w": 1, "t_comm": 0}]})"),
            "profile 'p.json': stage 1: missing or negative \"t_b\"");
  EXPECT_EQ(errorOf(head + R"({"t_f": 1, "t_b": 1, "t_w": 1, "t_comm": -2}]})"),
            "profile 'p.json': stage 0: missing or negative \"t_comm\"");
  EXPECT_EQ(errorOf(head + R"(7]})"),
            "profile 'p.json': stage 0: missing or negative \"t_f\"");
  EXPECT_EQ(errorOf(head +
                    R"({"t_f": 1, "t_b": 1, "t_w": 1, "t_comm": 0,
                        "cv_b": -0.5}]})"),
            "profile 'p.json': stage 0: \"cv_b\" = -0.50; a coefficient of "
            "variation must be >= 0");
  EXPECT_EQ(errorOf(head +
                    R"({"t_f": 1, "t_b": 1, "t_w": 1, "t_comm": 0,
                        "cv_w": "high"}]})"),
            "profile 'p.json': stage 0: \"cv_w\" is not a number");
  EXPECT_EQ(errorOf(head +
                    R"({"t_f": 1, "t_b": 1, "t_w": 1, "t_comm": 0,
                        "count_f": 1.5}]})"),
            "profile 'p.json': stage 0: \"count_f\" is not an integer >= 0");
  const std::string notProfile =
      "profile 'p.json': not a zb-run --profile file (expected \"format\": "
      "\"zb-profile\" and \"stages\")";
  EXPECT_EQ(errorOf(R"({"format": "zb-schedule", "stages": []})"), notProfile);
  EXPECT_EQ(errorOf(R"({"format": "zb-profile"})"), notProfile);
  EXPECT_EQ(errorOf("[]"), notProfile);
  EXPECT_EQ(
      errorOf(R"({"format": "zb-profile", "version": 2, "stages": []})"),
      "profile 'p.json': unsupported version 2 (this reader reads version "
      "1)");
  EXPECT_EQ(errorOf("{").rfind("profile 'p.json': invalid JSON: ", 0), 0u);
}

TEST(Profile, EntriesAreAppliedByStageNumberNotPosition) {
  // A profile listing stage 1 first is stage 1's costs at index 1 (they were
  // applied by position, to the wrong stages).
  llvm::Expected<Profile> p = parseProfile(
      R"({"format": "zb-profile", "stages": [
            {"stage": 1, "t_f": 3, "t_b": 6, "t_w": 2, "t_comm": 0.5},
            {"stage": 0, "t_f": 1, "t_b": 2, "t_w": 1, "t_comm": 0.5}]})",
      "p.json");
  ASSERT_TRUE(!!p) << llvm::toString(p.takeError());
  ASSERT_EQ(p->stages.size(), 2u);
  EXPECT_EQ(p->stages[0].stage, 0);
  EXPECT_EQ(p->stages[0].tF, 1.0);
  EXPECT_EQ(p->stages[1].stage, 1);
  EXPECT_EQ(p->stages[1].tF, 3.0);
  const std::string head = R"({"format": "zb-profile", "stages": [)";
  const std::string s0 =
      R"({"stage": 0, "t_f": 1, "t_b": 1, "t_w": 1, "t_comm": 0})";
  EXPECT_EQ(errorOf(head + s0 +
                    R"(, {"stage": 7, "t_f": 1, "t_b": 1, "t_w": 1,
                          "t_comm": 0}]})"),
            "profile 'p.json': entry 1 is stage 7, but the file has 2 stages "
            "(numbered 0 to 1)");
  EXPECT_EQ(errorOf(head + s0 + ", " + s0 + "]}"),
            "profile 'p.json': entries 0 and 1 are both stage 0");
}

TEST(Profile, FileErrors) {
  std::string path = ::testing::TempDir() + "/zb-profiletest-" +
                     std::to_string(getpid()) + "-missing.json";
  llvm::Expected<Profile> p = readProfile(path);
  ASSERT_FALSE(!!p);
  EXPECT_EQ(llvm::toString(p.takeError()),
            "profile '" + path + "': cannot read: No such file or directory");
  llvm::Error e = writeProfile(sampleProfile(), "/nonexistent-dir/p.json");
  ASSERT_TRUE(!!e);
  EXPECT_EQ(llvm::toString(std::move(e))
                .rfind("cannot write '/nonexistent-dir/p.json': ", 0),
            0u);
}

TEST(Profile, FileRoundTrip) {
  std::string path = ::testing::TempDir() + "/zb-profiletest-" +
                     std::to_string(getpid()) + ".json";
  ASSERT_FALSE(!!writeProfile(sampleProfile(), path));
  llvm::Expected<Profile> p = readProfile(path);
  ASSERT_TRUE(!!p) << llvm::toString(p.takeError());
  EXPECT_EQ(written(*p), written(sampleProfile()));
  std::remove(path.c_str());
}

} // namespace
