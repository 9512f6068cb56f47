//===- DualPipeTest.cpp - dualpipe against DeepSeek's DualPipe.step -------===//
//
// References independent of the builder (lib/Schedule/DualPipeV.cpp, which
// derives DualPipe from its DualPipeV order):
//  - DeepSeek's DualPipe.step (github.com/deepseek-ai/DualPipe,
//    dualpipe/dualpipe.py) transcribed here in its own terms: eight steps
//    of _forward_chunk(phase), _backward_chunk(phase, enable_zb),
//    _weight_chunk() and _forward_backward_chunk(phase0, phase1), with
//    "phase ^= is_in_second_half" choosing the direction and a counter per
//    direction choosing the microbatch; the overlapped pair runs as F then
//    the full backward (B, W), as zb's reader takes PyTorch's OVERLAP_F_B;
//  - DeepSeek's published table: DualPipe's bubble (PP/2 - 1)(F&B + B -
//    3W) and PP + 1 chunk activations per device, PP = p ranks (= stages);
//  - DualPipeV on p/2 ranks and m/2 microbatches simulated by the same
//    simulator: with T_comm = 0 the same stage span and memory (DualPipeV
//    is DualPipe "cut in half").
//
//===----------------------------------------------------------------------===//

#include "zb/Schedule/IO.h"
#include "zb/Schedule/Registry.h"
#include "zb/Schedule/Schedule.h"

#include "llvm/Support/raw_ostream.h"

#include "ScheduleTestUtil.h"

#include "gtest/gtest.h"

#include <deque>
#include <string>

using namespace zb::sched;
using namespace zb::sched::testutil;

namespace {

/// p ranks, m microbatches, two chunks per rank that are whole model
/// stages: T_F, T_B, T_W and M_B = 1 per chunk, M_W = 0, no latency.
Problem problem(int p, int m, double f = 1, double b = 1, double w = 1) {
  Problem pr;
  pr.numRanks = p;
  pr.numMicrobatches = m;
  pr.numChunks = 2;
  pr.costF = {f};
  pr.costB = {b};
  pr.costW = {w};
  pr.memB = {1};
  pr.memW = {0};
  return pr;
}

/// DeepSeek's DualPipe.step for rank `rank` of p and m microbatches, as the
/// list of passes it runs, in zb's global stages: direction 0 ("forward
/// direction") is stages 0..p-1 (stage s on rank s) for microbatches
/// 0..m/2-1, direction 1 ("reverse") stages p..2p-1 (model stage s, stage
/// p+s, on rank p-1-s) for m/2..m-1.
std::vector<Action> deepSeekOrder(int p, int m, int rank) {
  const int numHalfRanks = p / 2;
  const int halfRank = std::min(rank, p - 1 - rank);
  const int halfNumChunks = m / 2;
  const bool isInSecondHalf = rank >= numHalfRanks;
  const bool isMiddleRank = rank == numHalfRanks - 1 || rank == numHalfRanks;
  std::vector<Action> out;
  int nextF[2] = {0, 0}, nextB[2] = {0, 0};
  std::deque<Action> weightQueue; // WeightGradStore
  auto direction = [&](int phase) { return phase ^ int(isInSecondHalf); };
  auto stageOf = [&](int dir) {
    return dir == 0 ? rank : p + (p - 1 - rank);
  };
  auto microbatch = [&](int dir, int k) { return dir * halfNumChunks + k; };
  auto forwardChunk = [&](int phase) {
    int d = direction(phase);
    out.push_back({ActionKind::F, stageOf(d), microbatch(d, nextF[d]++)});
  };
  auto backwardChunk = [&](int phase, bool enableZb) {
    int d = direction(phase);
    Action b{ActionKind::B, stageOf(d), microbatch(d, nextB[d]++)};
    out.push_back(b);
    Action w{ActionKind::W, b.stage, b.microbatch};
    if (enableZb)
      weightQueue.push_back(w);
    else
      out.push_back(w);
  };
  auto weightChunk = [&] {
    out.push_back(weightQueue.front());
    weightQueue.pop_front();
  };
  auto forwardBackwardChunk = [&](int phase0, int phase1) {
    forwardChunk(phase0);
    backwardChunk(phase1, false);
  };
  // Step 1: nF0
  for (int i = 0; i < (numHalfRanks - halfRank - 1) * 2; ++i)
    forwardChunk(0);
  // Step 2: nF0F1
  for (int i = 0; i < halfRank + 1; ++i) {
    forwardChunk(0);
    forwardChunk(1);
  }
  // Step 3: nB1W1F1 (zero bubble)
  for (int i = 0; i < numHalfRanks - halfRank - 1; ++i) {
    backwardChunk(1, true);
    weightChunk();
    forwardChunk(1);
  }
  // Step 4: nF0B1F1B0 (the middle ranks' first pair is not overlapped, but
  // it runs in the same order)
  for (int i = 0; i < halfNumChunks - p + halfRank + 1; ++i) {
    (void)isMiddleRank;
    forwardBackwardChunk(0, 1);
    forwardBackwardChunk(1, 0);
  }
  // Step 5: nB1F1B0
  for (int i = 0; i < numHalfRanks - halfRank - 1; ++i) {
    backwardChunk(1, false);
    forwardBackwardChunk(1, 0);
  }
  // Step 6: nB1B0 (the second half of the chunks use zero bubble)
  const int step6 = halfRank + 1;
  bool enableZb = false;
  for (int i = 0; i < step6; ++i) {
    if (i == step6 / 2 && halfRank % 2 == 1)
      enableZb = true;
    backwardChunk(1, enableZb);
    if (i == step6 / 2 && halfRank % 2 == 0)
      enableZb = true;
    backwardChunk(0, enableZb);
  }
  // Step 7: nWB0
  for (int i = 0; i < numHalfRanks - halfRank - 1; ++i) {
    weightChunk();
    backwardChunk(0, true);
  }
  // Step 8: nW
  for (int i = 0; i < halfRank + 1; ++i)
    weightChunk();
  EXPECT_TRUE(weightQueue.empty());
  return out;
}

std::string show(const std::vector<Action> &list) {
  std::string s;
  for (const Action &a : list)
    s += (kindName(a.kind) + std::to_string(a.microbatch) + "." +
          std::to_string(a.stage) + " ")
             .str();
  return s;
}

/// zb's dualpipe is DeepSeek's DualPipe.step, pass for pass, on every rank.
TEST(DualPipe, SameOrderAsDeepSeek) {
  for (int p : {2, 4, 6, 8})
    for (int m : {2 * p, 2 * p + 2, 4 * p, 5 * p + (5 * p) % 2}) {
      SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(m));
      Schedule s = llvm::cantFail(buildSchedule(problem(p, m), "dualpipe"));
      ASSERT_EQ(s.perRank.size(), size_t(p));
      EXPECT_EQ(s.directions, 2);
      for (int r = 0; r < p; ++r)
        EXPECT_EQ(show(s.perRank[r]), show(deepSeekOrder(p, m, r)))
            << "rank " << r;
    }
}

/// The routes: microbatch i < m/2 passes through stages 0..p-1 on ranks
/// 0..p-1, microbatch i >= m/2 through stages p..2p-1 on ranks p-1..0;
/// stages s and p+s compute model stage s on mirrored ranks.
TEST(DualPipe, Routes) {
  const int p = 4, m = 8;
  Schedule s = llvm::cantFail(buildSchedule(problem(p, m), "dualpipe"));
  EXPECT_EQ(s.routeLength(), p);
  for (int st = 0; st < 2 * p; ++st) {
    EXPECT_EQ(s.modelStage(st), st % p);
    EXPECT_EQ(s.stageToRank[st], st < p ? st : 2 * p - 1 - st);
  }
  EXPECT_EQ(directionOfMicrobatch(3, m, 2), 0);
  EXPECT_EQ(directionOfMicrobatch(4, m, 2), 1);
  for (const auto &rank : s.perRank)
    for (const Action &a : rank)
      EXPECT_EQ(s.directionOfStage(a.stage),
                directionOfMicrobatch(a.microbatch, m, 2));
  // The first F of every up microbatch is on rank p-1, its loss on rank 0.
  Problem pr = problem(p, m);
  SimResult sim = simulate(pr, s);
  ASSERT_TRUE(sim.complete);
  for (const TimedAction &t : sim.timeline[p - 1])
    if (t.action.kind == ActionKind::F && t.action.microbatch >= m / 2) {
      EXPECT_EQ(t.action.stage, p);
    }
}

/// Many (p, m) and costs: verified, buffered communication with
/// activation/gradient tags works (as DualPipeV's), the bubble
/// is within DeepSeek's formula with PP = p, the activation memory is
/// DeepSeek's PP + 1 chunks, and with T_comm = 0 the stage span and memory
/// are DualPipeV's on p/2 ranks and m/2 microbatches (per-rank costs
/// doubled there: its chunks are half a rank's share).
TEST(DualPipe, BubbleWithinDeepSeekFormulaAndEqualToDualPipeV) {
  struct Costs {
    double f, b, w;
  } costs[] = {{1, 1, 1}, {1, 2, 1}, {2, 2, 1}, {1, 2, 2}, {1, 1, 0},
               {3, 1, 2}};
  for (int p = 2; p <= 10; p += 2)
    for (int m : {2 * p, 2 * p + 2, 3 * p + (3 * p) % 2, 4 * p + 6})
      for (Costs c : costs) {
        SCOPED_TRACE("p=" + std::to_string(p) + " m=" + std::to_string(m) +
                     " costs " + std::to_string(c.f) + "," +
                     std::to_string(c.b) + "," + std::to_string(c.w));
        Problem pr = problem(p, m, c.f, c.b, c.w);
        auto s = buildSchedule(pr, "dualpipe");
        ASSERT_TRUE(static_cast<bool>(s)) << errorOf(s.takeError());
        EXPECT_EQ(errorOf(verify(pr, *s)), "");
        CommOptions tags;
        tags.oneChannelPerPeerPair = false;
        EXPECT_EQ(errorOf(verifyCommunication(pr, *s, tags)), "");
        SimResult sim = simulate(pr, *s);
        ASSERT_TRUE(sim.complete);
        double fullB = c.b + c.w;
        double formula = (p / 2 - 1) * ((c.f + fullB) + fullB - 3 * c.w);
        double bubble = sim.stageSpan - sim.idealTime;
        EXPECT_LE(bubble, formula + 1e-9);
        EXPECT_NEAR(sim.idealTime, m * (c.f + c.b + c.w), 1e-9);
        for (int r = 0; r < p; ++r)
          EXPECT_DOUBLE_EQ(sim.peakMemory[r], p + 1) << "rank " << r;

        Problem half = problem(p / 2, m / 2, 2 * c.f, 2 * c.b, 2 * c.w);
        half.memB = {2};
        SimResult v = simulate(
            half, llvm::cantFail(buildSchedule(half, "dualpipev")));
        EXPECT_NEAR(sim.stageSpan, v.stageSpan, 1e-9);
        EXPECT_NEAR(sim.makespan, v.makespan, 1e-9);
        for (int r = 0; r < p; ++r)
          EXPECT_DOUBLE_EQ(sim.peakMemory[r],
                           v.peakMemory[std::min(r, p - 1 - r)]);
      }
}

/// With unit costs and p = 4, m = 8 the bubble is 1 (rate 1/25), within the
/// formula's 2; a latency between ranks costs DualPipe more than DualPipeV
/// (its V's bottom is a hop between ranks p/2-1 and p/2).
TEST(DualPipe, UnitCostsAndLatency) {
  Problem pr = problem(4, 8);
  SimResult sim =
      simulate(pr, llvm::cantFail(buildSchedule(pr, "dualpipe")));
  EXPECT_DOUBLE_EQ(sim.stageSpan, 25);
  EXPECT_NEAR(sim.bubbleRate, 0.04, 1e-12);
  pr.costComm = {0.1};
  EXPECT_GT(
      simulate(pr, llvm::cantFail(buildSchedule(pr, "dualpipe"))).stageSpan,
      25);
}

/// The verifier holds a schedule to its routes.
TEST(DualPipe, VerifierChecksRoutes) {
  Problem pr = problem(2, 4);
  Schedule s = llvm::cantFail(buildSchedule(pr, "dualpipe"));
  // Microbatch 0 goes down: its F on stage 3 (the up route) is off route.
  Schedule off = s;
  for (Action &a : off.perRank[0])
    if (a.kind == ActionKind::F && a.stage == 0 && a.microbatch == 0)
      a.stage = 3;
  EXPECT_EQ(errorOf(verify(pr, off)),
            "rank 0 position 0: F(stage 3, microbatch 0) is off its route "
            "(microbatch 0 takes direction 0: stages 0..1)");
  // One direction only, but the stages of both: F(stage 2, microbatch 0)
  // would have to follow stage 1's, and the up microbatches run nowhere.
  Schedule oneWay = s;
  oneWay.directions = 1;
  EXPECT_NE(errorOf(verify(pr, oneWay)), "");
  Schedule three = s;
  three.directions = 3;
  EXPECT_EQ(errorOf(verify(pr, three)),
            "schedule 'dualpipe' has 3 directions; a bidirectional pipeline "
            "has 2, an even number of stages (got 4) and of microbatches "
            "(got 4)");
}

/// The schedule JSON keeps the directions: written and read back, the same
/// schedule verifies and simulates alike.
TEST(DualPipe, JSONRoundTrip) {
  Problem pr = problem(4, 10, 1, 2, 1);
  Schedule s = llvm::cantFail(buildSchedule(pr, "dualpipe"));
  std::string text;
  llvm::raw_string_ostream os(text);
  writeJSON(os, pr, s, simulate(pr, s));
  os.flush();
  EXPECT_NE(text.find("\"directions\": 2"), std::string::npos);
  Problem back;
  Schedule read;
  ASSERT_EQ(errorOf(readJSON(text, back, read)), "");
  EXPECT_EQ(read.directions, 2);
  EXPECT_EQ(errorOf(verify(back, read)), "");
  EXPECT_DOUBLE_EQ(simulate(back, read).stageSpan, simulate(pr, s).stageSpan);
  // Anything but 1 or 2 is refused.
  std::string bad = text;
  bad.replace(bad.find("\"directions\": 2"), 15, "\"directions\": 4");
  EXPECT_EQ(errorOf(readJSON(bad, back, read)),
            "schedule JSON: \"directions\" must be 1 or 2 (DualPipe)");
}

/// Odd p, odd m, m < 2p and V != 2 are refused, naming the parameter.
TEST(DualPipe, Errors) {
  EXPECT_EQ(errorOf(buildSchedule(problem(3, 8), "dualpipe").takeError()),
            "dualpipe needs an even number of ranks (its two directions "
            "meet in the middle), got p=3");
  for (int m : {6, 9})
    EXPECT_EQ(errorOf(buildSchedule(problem(4, m), "dualpipe").takeError()),
              "dualpipe needs an even number of microbatches, at least 2p=8 "
              "(half of them in each direction), got m=" +
                  std::to_string(m));
  Problem pr = problem(4, 8);
  pr.numChunks = 1;
  EXPECT_EQ(errorOf(buildSchedule(pr, "dualpipe").takeError()),
            "dualpipe needs exactly V=2 virtual stages per rank, got V=1");
  // Its memory is fixed at p + 1 chunk activations: a lower limit is
  // refused naming the rank and the memory it needs.
  pr = problem(4, 8);
  pr.memoryLimit = 4;
  std::string msg = errorOf(buildSchedule(pr, "dualpipe").takeError());
  EXPECT_NE(msg.find("dualpipe needs 5.00 activation memory on rank 0, above "
                     "its memory limit 4.00"),
            std::string::npos)
      << msg;
}

} // namespace
