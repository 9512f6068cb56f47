//===- IOTest.cpp - JSON / CSV round trips, trace, SVG --------------------===//

#include "zb/Schedule/IO.h"
#include "zb/Support/JSON.h"
#include "zb/Schedule/Registry.h"

#include "gtest/gtest.h"

#include <cstring>

using namespace zb::sched;

namespace {

Problem smallProblem() {
  Problem pr;
  pr.numRanks = 4;
  pr.numMicrobatches = 8;
  pr.costF = {1, 1, 1, 2};
  pr.costB = {1};
  pr.costW = {0.5};
  pr.costComm = {0.1};
  pr.memB = {3};
  pr.memW = {1};
  pr.memoryLimit = 20;
  return pr;
}

TEST(ScheduleIO, JSONRoundTrip) {
  Problem pr = smallProblem();
  auto s = buildSchedule(pr, "zb-h1");
  ASSERT_TRUE(static_cast<bool>(s));
  SimResult sim = simulate(pr, *s);
  std::string text;
  llvm::raw_string_ostream os(text);
  writeJSON(os, pr, *s, sim);
  Problem pr2;
  Schedule s2;
  ASSERT_FALSE(static_cast<bool>(readJSON(text, pr2, s2)));
  EXPECT_EQ(pr2.numRanks, 4);
  EXPECT_EQ(pr2.costF, pr.costF);
  EXPECT_EQ(pr2.memoryLimit, 20);
  EXPECT_EQ(s2.perRank.size(), s->perRank.size());
  for (size_t r = 0; r < s2.perRank.size(); ++r)
    EXPECT_EQ(s2.perRank[r], s->perRank[r]);
  EXPECT_FALSE(static_cast<bool>(verify(pr2, s2)));
  EXPECT_DOUBLE_EQ(simulate(pr2, s2).bubbleRate, sim.bubbleRate);
  // The statistics the issue asks for are in the document.
  EXPECT_NE(text.find("\"bubble_rate\""), std::string::npos);
  EXPECT_NE(text.find("\"peak_memory\""), std::string::npos);
  EXPECT_NE(text.find("\"makespan\""), std::string::npos);
}

TEST(ScheduleIO, CostConventionNames) {
  for (CostConvention c : {CostConvention::Makespan, CostConvention::StageSpan})
    EXPECT_EQ(parseCostConvention(costConventionName(c)), c);
  EXPECT_EQ(costConventionName(CostConvention::StageSpan), "stage_span");
  EXPECT_EQ(parseCostConvention("stage-span"), std::nullopt);
  // The JSON reader takes any other text for the stage span.
  Problem pr = smallProblem();
  Schedule s = llvm::cantFail(buildSchedule(pr, "zb-h1"));
  std::string text;
  llvm::raw_string_ostream os(text);
  writeJSON(os, pr, s, simulate(pr, s));
  EXPECT_NE(text.find("\"cost_convention\": \"makespan\""), std::string::npos)
      << text;
  Problem back;
  Schedule read;
  ASSERT_FALSE(static_cast<bool>(readJSON(text, back, read)));
  EXPECT_EQ(read.costConvention, CostConvention::Makespan);
  size_t at = text.find("\"makespan\",");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, std::strlen("\"makespan\","), "\"other\",");
  ASSERT_FALSE(static_cast<bool>(readJSON(text, back, read)));
  EXPECT_EQ(read.costConvention, CostConvention::StageSpan);
}

TEST(ScheduleIO, CSVRoundTripSplitAndFused) {
  Problem pr = smallProblem();
  for (llvm::StringRef name : {"zb-h1", "1f1b"}) {
    auto s = buildSchedule(pr, name);
    ASSERT_TRUE(static_cast<bool>(s));
    std::string text;
    llvm::raw_string_ostream os(text);
    writeCSV(os, *s);
    auto s2 = readCSV(text, 4);
    ASSERT_TRUE(static_cast<bool>(s2)) << llvm::toString(s2.takeError());
    EXPECT_EQ(s2->fusedBackward, s->fusedBackward);
    for (size_t r = 0; r < 4; ++r)
      EXPECT_EQ(s2->perRank[r], s->perRank[r]) << name.str();
    EXPECT_FALSE(static_cast<bool>(verify(pr, *s2)));
  }
}

/// The CSV with PyTorch's communication actions (zb-sched --format
/// csv-comm) reads back to the same schedule, for split, fused and V-shape
/// schedules, and holds one SEND and one RECV per cross-rank message.
TEST(ScheduleIO, CSVWithCommunicationRoundTrip) {
  for (llvm::StringRef name : {"zb-h1", "1f1b", "zb-v"}) {
    Problem pr = smallProblem();
    if (name == "zb-v")
      pr.numChunks = 2;
    auto s = buildSchedule(pr, name);
    ASSERT_TRUE(static_cast<bool>(s)) << llvm::toString(s.takeError());
    std::string text;
    llvm::raw_string_ostream os(text);
    writeCSV(os, *s, /*withCommunication=*/true);
    auto s2 = readCSV(text, 4);
    ASSERT_TRUE(static_cast<bool>(s2)) << llvm::toString(s2.takeError());
    EXPECT_EQ(s2->fusedBackward, s->fusedBackward);
    EXPECT_EQ(s2->stageToRank, s->stageToRank) << name.str();
    for (size_t r = 0; r < 4; ++r)
      EXPECT_EQ(s2->perRank[r], s->perRank[r]) << name.str();
    size_t sends = llvm::StringRef(text).count("SEND_"),
           recvs = llvm::StringRef(text).count("RECV_"), messages = 0;
    for (const auto &ops : communicationProgram(*s))
      for (const CommOp &op : ops)
        messages += op.kind == CommOp::Kind::Send;
    EXPECT_EQ(sends, messages) << name.str();
    EXPECT_EQ(recvs, messages) << name.str();
  }
}

TEST(ScheduleIO, CSVActionNames) {
  Problem pr = smallProblem();
  auto s = buildSchedule(pr, "zb-h1");
  ASSERT_TRUE(static_cast<bool>(s));
  std::string text;
  llvm::raw_string_ostream os(text);
  writeCSV(os, *s);
  // Rank 3 (last stage) starts with F0 then B0 (I) of stage 3.
  EXPECT_NE(text.find("3F0,3I0,3F1"), std::string::npos) << text;
  EXPECT_NE(text.find("3W0"), std::string::npos);
}

TEST(ScheduleIO, CSVErrors) {
  EXPECT_NE(llvm::toString(readCSV("0F0,0X1\n").takeError()).find("'0X1'"),
            std::string::npos);
  EXPECT_NE(llvm::toString(readCSV("0F0,F\n").takeError()).find("cannot parse"),
            std::string::npos);
}

/// PyTorch's communication and FSDP actions are no-ops here, OVERLAP_F_B
/// runs its sub-actions in order, and a full B mixes with I/W: the same
/// compute order as the compute-only CSV.
TEST(ScheduleIO, CSVWithPyTorchCommunicationActions) {
  const char *computeOnly = "0F0,0F1,0I0,0W0,0B1\n"
                            "1F0,1I0,1F1,1W0,1B1\n";
  const char *withComms =
      "0UNSHARD,0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0I0,0W0,0RECV_B1,0B1,"
      "0REDUCE_GRAD,0RESHARD\n"
      "1UNSHARD,1RECV_F0,(1F0;1I0)OVERLAP_F_B,1SEND_B0,1RECV_F1,1F1,1W0,"
      "1B1,1SEND_B1,1REDUCE_GRAD\n";
  auto a = readCSV(computeOnly), b = readCSV(withComms);
  ASSERT_TRUE(static_cast<bool>(a)) << llvm::toString(a.takeError());
  ASSERT_TRUE(static_cast<bool>(b)) << llvm::toString(b.takeError());
  EXPECT_EQ(a->perRank, b->perRank);
  EXPECT_EQ(a->stageToRank, b->stageToRank);
  // Mixed B and I/W: not a fused-backward schedule.
  EXPECT_FALSE(b->fusedBackward);
  Problem pr;
  pr.numRanks = 2;
  pr.numMicrobatches = 2;
  pr.costF = pr.costB = pr.costW = {1};
  EXPECT_FALSE(static_cast<bool>(verify(pr, *b)));
  // Unknown multi-letter types are still named.
  EXPECT_NE(llvm::toString(readCSV("0F0,0WAIT_X1\n").takeError())
                .find("'0WAIT_X1' has type 'WAIT_X'"),
            std::string::npos);
}

/// torch 2.15's lowered CSVs: the waits on sends and on the gradient
/// reduction are no-ops, empty cells (PyTorch's None) are skipped, and a
/// parenthesised group other than OVERLAP_F_B is refused naming the cell.
TEST(ScheduleIO, CSVWithPyTorch215Actions) {
  auto a = readCSV("0F0,,0I0,0W0\n,1F0,1I0,1W0\n");
  auto b = readCSV("0UNSHARD,0F0,0SEND_F0,0RECV_B0,0I0,0WAIT_SEND_F0,0W0,"
                   "0REDUCE_GRAD,0WAIT_REDUCE_GRAD,0RESHARD\n"
                   "1UNSHARD,1RECV_F0,1F0,1I0,1SEND_B0,1W0,1REDUCE_GRAD,"
                   "1WAIT_REDUCE_GRAD,1RESHARD,1WAIT_SEND_B0\n");
  ASSERT_TRUE(static_cast<bool>(a)) << llvm::toString(a.takeError());
  ASSERT_TRUE(static_cast<bool>(b)) << llvm::toString(b.takeError());
  EXPECT_EQ(a->perRank, b->perRank);
  EXPECT_EQ(a->perRank[0].size(), 3u);
  EXPECT_NE(llvm::toString(readCSV("(0F1;0I0)OVERLAP_X\n").takeError())
                .find("CSV row 0: action '(0F1;0I0)OVERLAP_X' groups actions "
                      "under 'OVERLAP_X'"),
            std::string::npos);
}

/// Deeply nested JSON is refused before llvm::json::parse recurses into it;
/// brackets inside strings do not count; 64 levels are fine.
TEST(ScheduleIO, JSONNestingCap) {
  std::string deep(100000, '[');
  deep += std::string(100000, ']');
  llvm::Error e = zb::support::checkJSONNesting(deep, "x.json");
  EXPECT_NE(llvm::toString(std::move(e)).find("x.json: JSON nests deeper "
                                              "than 64 levels (at byte 64)"),
            std::string::npos);
  std::string ok = std::string(64, '[') + std::string(64, ']');
  EXPECT_FALSE(static_cast<bool>(zb::support::checkJSONNesting(ok, "ok")));
  std::string strings = "{\"a\": \"" + std::string(1000, '[') +
                        "\\\"\", \"b\": [1]}";
  EXPECT_FALSE(static_cast<bool>(zb::support::checkJSONNesting(strings, "s")));
  Problem p;
  Schedule s;
  EXPECT_NE(llvm::toString(readJSON(deep, p, s)).find("nests deeper"),
            std::string::npos);
}

TEST(ScheduleIO, CSVImportedScheduleIsChecked) {
  // A PyTorch-style GPipe for 2 ranks, 2 microbatches, with rank 1 wrongly
  // running I1 before F1.
  Problem pr;
  pr.numRanks = 2;
  pr.numMicrobatches = 2;
  pr.costF = pr.costB = pr.costW = {1};
  auto good = readCSV("0F0,0F1,0I0,0W0,0I1,0W1\n1F0,1F1,1I0,1W0,1I1,1W1\n");
  ASSERT_TRUE(static_cast<bool>(good));
  EXPECT_FALSE(static_cast<bool>(verify(pr, *good)));
  auto bad = readCSV("0F0,0F1,0I0,0W0,0I1,0W1\n1F0,1I1,1F1,1I0,1W0,1W1\n");
  ASSERT_TRUE(static_cast<bool>(bad));
  llvm::Error e = verify(pr, *bad);
  EXPECT_NE(
      llvm::toString(std::move(e)).find("before F(stage 1, microbatch 1)"),
      std::string::npos);
}

TEST(ScheduleIO, TraceAndSVG) {
  Problem pr = smallProblem();
  auto s = buildSchedule(pr, "zb-2p");
  ASSERT_TRUE(static_cast<bool>(s));
  SimResult sim = simulate(pr, *s);
  std::string trace, svg;
  llvm::raw_string_ostream tos(trace), sos(svg);
  writeTrace(tos, *s, sim);
  auto parsed = llvm::json::parse(trace);
  ASSERT_TRUE(static_cast<bool>(parsed));
  const llvm::json::Array *events =
      parsed->getAsObject()->getArray("traceEvents");
  ASSERT_TRUE(events);
  // 3 actions x 4 stages x 8 microbatches + 4 thread names.
  EXPECT_EQ(events->size(), 3u * 4 * 8 + 4);
  writeSVG(sos, pr, *s, sim);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  // One box per action, each with a tooltip.
  size_t boxes = 0;
  for (size_t pos = 0; (pos = svg.find("<title>", pos)) != std::string::npos;
       ++pos)
    ++boxes;
  EXPECT_EQ(boxes, 3u * 4 * 8);
}

} // namespace
