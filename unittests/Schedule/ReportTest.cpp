//===- ReportTest.cpp - zb-sched's library: flags, reports ---------------===//

#include "zb/Schedule/Report.h"
#include "zb/Schedule/Registry.h"

#include "llvm/Support/JSON.h"

#include "gtest/gtest.h"

using namespace zb::sched;

namespace {

std::string errorText(llvm::Error e) { return llvm::toString(std::move(e)); }

TEST(Report, ProblemFromFlags) {
  ProblemFlags flags;
  flags.stages = 4;
  flags.microbatches = 8;
  flags.costF = "1,2,2,1";
  flags.memB = "1";
  flags.memoryLimit = "1.5p";
  auto p = parseProblem(flags, 1);
  ASSERT_TRUE(static_cast<bool>(p)) << errorText(p.takeError());
  EXPECT_EQ(p->numRanks, 4);
  EXPECT_EQ(p->costF, (std::vector<double>{1, 2, 2, 1}));
  EXPECT_EQ(p->costComm, (std::vector<double>{0}));
  EXPECT_DOUBLE_EQ(p->memoryLimit, 6); // 1.5 * p * M_B
  EXPECT_TRUE(p->memoryLimits.empty());

  flags.memoryLimit = "2p,1.5p,1p,4";
  p = parseProblem(flags, 1);
  ASSERT_TRUE(static_cast<bool>(p)) << errorText(p.takeError());
  EXPECT_EQ(p->memoryLimits, (std::vector<double>{8, 6, 4, 4}));
}

TEST(Report, ProblemErrorsNameTheFlag) {
  ProblemFlags flags;
  flags.costB = "x";
  auto p = parseProblem(flags, 1);
  ASSERT_FALSE(static_cast<bool>(p));
  EXPECT_EQ(errorText(p.takeError()), "--cost-b: 'x' is not a number");

  flags = ProblemFlags();
  flags.memoryLimit = "2p";
  p = parseProblem(flags, 1);
  ASSERT_FALSE(static_cast<bool>(p));
  EXPECT_EQ(errorText(p.takeError()), "--memory-limit 2p needs --mem-b (M_B)");

  flags.memoryLimit = "twop";
  p = parseProblem(flags, 1);
  ASSERT_FALSE(static_cast<bool>(p));
  EXPECT_NE(errorText(p.takeError()).find("is not a number or a multiple of p"),
            std::string::npos);
}

TEST(Report, ChunksAndNames) {
  ProblemFlags flags;
  EXPECT_EQ(flags.chunksFor(ScheduleKind::ZBV), 2);
  EXPECT_EQ(flags.chunksFor(ScheduleKind::ZBH1), 1);
  flags.virtualStages = 3;
  EXPECT_EQ(flags.chunksFor(ScheduleKind::ZBH1), 3);

  EXPECT_EQ(parseReportFormat("csv-comm"), ReportFormat::CSVComm);
  EXPECT_EQ(parseReportFormat("xml"), std::nullopt);

  auto comm = parseCommOptions("rendezvous", "pair");
  ASSERT_TRUE(static_cast<bool>(comm));
  EXPECT_EQ(comm->sends, SendSemantics::Rendezvous);
  EXPECT_TRUE(comm->oneChannelPerPeerPair);
  auto bad = parseCommOptions("maybe", "tag");
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_EQ(errorText(bad.takeError()),
            "--comm-sends must be buffered or rendezvous and --comm-channels "
            "tag or pair, got 'maybe' and 'tag'");
}

TEST(Report, CommunicationNeeds) {
  ProblemFlags flags;
  auto p = parseProblem(flags, 1);
  ASSERT_TRUE(static_cast<bool>(p));
  auto s = buildSchedule(*p, "1f1b");
  ASSERT_TRUE(static_cast<bool>(s));
  CommReport r = checkCommunication(*p, *s, CommOptions());
  EXPECT_TRUE(r.required.empty());
  EXPECT_TRUE(r.bufferedTag.empty());
  EXPECT_EQ(commNeeds(CommReport{"", "", "", "", ""}), "rendezvous");
  EXPECT_EQ(commNeeds(CommReport{"", "", "x", "x", "x"}), "buffered+tags");
  EXPECT_EQ(commNeeds(CommReport{"", "x", "x", "x", "x"}), "none");
}

TEST(Report, JSONReportHasTheChecks) {
  ReportOptions options;
  options.scheduleName = "zb-h1";
  options.format = ReportFormat::JSON;
  options.optimizerSync = "post-validation";
  options.optimizerCost = 0.5;
  std::string text;
  llvm::raw_string_ostream os(text);
  ASSERT_FALSE(static_cast<bool>(writeScheduleReport(os, options)));
  auto v = llvm::json::parse(text);
  ASSERT_TRUE(static_cast<bool>(v)) << errorText(v.takeError());
  const llvm::json::Object *root = v->getAsObject();
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->getString("name"), "zb-h1");
  const llvm::json::Object *comm = root->getObject("communication");
  ASSERT_NE(comm, nullptr);
  EXPECT_TRUE(comm->getString("needs").has_value());
  const llvm::json::Object *sync = root->getObject("optimizer_sync");
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->getString("mode"), "post-validation");
  EXPECT_EQ(sync->getNumber("optimizer_cost_ms"), 0.5);
  EXPECT_EQ(root->getObject("ilp"), nullptr); // not an ILP run
}

TEST(Report, ErrorsWriteNothing) {
  ReportOptions options;
  options.inputFile = "/nonexistent/zb-schedule.json";
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::Error e = writeScheduleReport(os, options);
  ASSERT_TRUE(static_cast<bool>(e));
  EXPECT_EQ(errorText(std::move(e)).rfind("cannot read '/nonexistent/", 0), 0u);
  EXPECT_TRUE(text.empty());

  options = ReportOptions();
  options.optimizerSync = "sometimes";
  e = writeScheduleReport(os, options);
  ASSERT_TRUE(static_cast<bool>(e));
  llvm::consumeError(std::move(e));
  EXPECT_TRUE(text.empty());
}

TEST(Report, ComparisonHasEverySchedule) {
  ReportOptions options;
  options.problem.stages = 2;
  options.problem.microbatches = 4;
  options.build.timeLimitSeconds = 5;
  std::string text;
  llvm::raw_string_ostream os(text);
  ASSERT_FALSE(static_cast<bool>(writeComparison(os, options)));
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(text).trim().split(lines, '\n');
  ASSERT_EQ(lines.size(), 1 + scheduleNames().size());
  EXPECT_TRUE(lines[0].starts_with("schedule"));
  for (size_t i = 0; i < scheduleNames().size(); ++i)
    EXPECT_TRUE(lines[i + 1].starts_with(scheduleNames()[i])) << lines[i + 1].str();
}

} // namespace
