//===- CommunicationTest.cpp - Send/recv insertion and its verifier -------===//

#include "zb/Schedule/Registry.h"
#include "zb/Schedule/Schedule.h"

#include "ScheduleTestUtil.h"

#include "gtest/gtest.h"

#include <array>
#include <cstdio>
#include <map>
#include <random>

using namespace zb::sched;
using namespace zb::sched::testutil;

namespace {

Problem uniform(int p, int m, int chunks = 1) {
  Problem pr;
  pr.numRanks = p;
  pr.numMicrobatches = m;
  pr.numChunks = chunks;
  pr.costF = {1};
  pr.costB = {1};
  pr.costW = {1};
  pr.costComm = {0.1};
  pr.memB = {1};
  pr.memW = {0.5};
  return pr;
}

Schedule build(const Problem &problem, llvm::StringRef name) {
  auto s = buildSchedule(problem, name);
  if (!s) {
    ADD_FAILURE() << name.str() << ": " << llvm::toString(s.takeError());
    return Schedule();
  }
  return std::move(*s);
}

CommOptions options(SendSemantics sends, bool pair) {
  CommOptions o;
  o.sends = sends;
  o.oneChannelPerPeerPair = pair;
  return o;
}

TEST(Communication, ProgramPlacesSendsAndRecvs) {
  Problem pr = uniform(3, 3);
  Schedule s = build(pr, "1f1b");
  auto progs = communicationProgram(s);
  ASSERT_EQ(progs.size(), 3u);
  // Rank 1 starts with: recv F0 from 0, F0, send F0 to 2.
  ASSERT_GE(progs[1].size(), 3u);
  EXPECT_EQ(progs[1][0].kind, CommOp::Kind::Recv);
  EXPECT_EQ(progs[1][0].peer, 0);
  EXPECT_EQ(progs[1][0].action, (Action{ActionKind::F, 0, 0}));
  EXPECT_EQ(progs[1][1].kind, CommOp::Kind::Compute);
  EXPECT_EQ(progs[1][1].action, (Action{ActionKind::F, 1, 0}));
  EXPECT_EQ(progs[1][2].kind, CommOp::Kind::Send);
  EXPECT_EQ(progs[1][2].peer, 2);
  // Counts: every cross-rank edge once per microbatch and direction.
  int sends = 0, recvs = 0;
  for (const auto &prog : progs)
    for (const CommOp &op : prog) {
      sends += op.kind == CommOp::Kind::Send;
      recvs += op.kind == CommOp::Kind::Recv;
    }
  EXPECT_EQ(sends, 2 * 2 * 3);
  EXPECT_EQ(recvs, 2 * 2 * 3);
  // 1F1B fuses B and W: the gradient leaves after W.
  for (size_t k = 0; k + 1 < progs[2].size(); ++k)
    if (progs[2][k + 1].kind == CommOp::Kind::Send) {
      EXPECT_EQ(progs[2][k].action.kind, ActionKind::W);
    }
  // A single rank communicates with nobody.
  Problem one = uniform(1, 4);
  auto single = communicationProgram(build(one, "zb-h1"));
  for (const CommOp &op : single[0])
    EXPECT_EQ(op.kind, CommOp::Kind::Compute);
}

TEST(Communication, RejectsReorderedReceives) {
  // GPipe p=2: rank 1 runs F1 before F0. The compute-level verifier accepts
  // it (F1 only needs F(stage 0, 1), which rank 0 runs), but rank 0 sends the
  // activation of microbatch 0 first.
  Problem pr = uniform(2, 2);
  Schedule s = build(pr, "gpipe");
  auto &r1 = s.perRank[1];
  ASSERT_EQ(r1[0], (Action{ActionKind::F, 1, 0}));
  ASSERT_EQ(r1[1], (Action{ActionKind::F, 1, 1}));
  std::swap(r1[0], r1[1]);
  EXPECT_EQ(errorOf(verify(pr, s)), "");
  for (bool pair : {true, false}) {
    std::string err = errorOf(verifyCommunication(
        pr, s, options(SendSemantics::Buffered, pair)));
    EXPECT_NE(err.find("communication: rank 0 -> rank 1"), std::string::npos)
        << err;
    EXPECT_NE(err.find("message #0 is sent as the activation of F(stage 0, "
                       "microbatch 0) but received (by rank 1) as the "
                       "activation of F(stage 0, microbatch 1)"),
              std::string::npos)
        << err;
  }
}

TEST(Communication, RendezvousDeadlockIsNamed) {
  // 1F1B with plain blocking sends: rank 0 sends the activation of F1 while
  // rank 1 sends the gradient of B0 back: both wait.
  Problem pr = uniform(2, 4);
  Schedule s = build(pr, "1f1b");
  EXPECT_EQ(errorOf(verifyCommunication(pr, s)), "");
  std::string err = errorOf(
      verifyCommunication(pr, s, options(SendSemantics::Rendezvous, true)));
  EXPECT_EQ(err, "communication deadlock with rendezvous (blocking) sends: "
                 "rank 0 is blocked in send of the activation of F(stage 0, "
                 "microbatch 1) to rank 1; rank 1 is blocked in send of the "
                 "gradient of B(stage 1, microbatch 0) to rank 0; back to "
                 "rank 0 (cycle)");
  // GPipe never sends against the stream: it works with rendezvous sends.
  Schedule g = build(pr, "gpipe");
  EXPECT_EQ(errorOf(verifyCommunication(
                pr, g, options(SendSemantics::Rendezvous, true))),
            "");
}

/// Every schedule we build works with buffered sends and per-kind channels;
/// records which ones also work with rendezvous sends or one FIFO channel per
/// peer pair (the table is printed, the known facts are asserted).
TEST(Communication, EveryBuiltScheduleWorksWithBufferedSends) {
  std::mt19937 rng(7);
  std::map<std::string, std::array<int, 3>> stats; // built, rdv ok, pair ok
  for (int iter = 0; iter < 150; ++iter) {
    int p = 1 + rng() % 6, m = 1 + rng() % 12;
    for (llvm::StringRef name : scheduleNames()) {
      ScheduleKind kind = llvm::cantFail(parseScheduleKind(name));
      if (kind == ScheduleKind::Ilp)
        continue;
      bool twoChunks = defaultChunks(kind) == 2;
      Problem pr = uniform(p, m, twoChunks ? 2 : 1);
      pr.costF = {double(1 + rng() % 5)};
      pr.costB = {double(1 + rng() % 5)};
      pr.costW = {double(rng() % 4)};
      pr.memoryLimit = rng() % 2 ? 0 : (1 + rng() % 3) * p;
      auto s = buildSchedule(pr, name);
      if (!s) {
        llvm::consumeError(s.takeError());
        continue;
      }
      SCOPED_TRACE(name.str() + " p=" + std::to_string(p) +
                   " m=" + std::to_string(m));
      EXPECT_EQ(errorOf(verifyCommunication(
                    pr, *s, options(SendSemantics::Buffered, false))),
                "");
      auto &st = stats[name.str()];
      ++st[0];
      st[1] += !verifyCommunication(
          pr, *s, options(SendSemantics::Rendezvous, false));
      bool pairOk =
          !verifyCommunication(pr, *s, options(SendSemantics::Buffered, true));
      st[2] += pairOk;
      if (!twoChunks) { // V = 1: each directed pair carries one message kind
        EXPECT_TRUE(pairOk);
      }
    }
  }
  for (auto &[name, st] : stats)
    std::printf("  %-9s built %3d, rendezvous ok %3d, one channel per pair "
                "ok %3d\n",
                name.c_str(), st[0], st[1], st[2]);
  EXPECT_EQ(stats["gpipe"][1], stats["gpipe"][0]);
  EXPECT_LT(stats["1f1b"][1], stats["1f1b"][0]);
}

} // namespace

//===----------------------------------------------------------------------===//
// checkMessages: the one checker under verifyCommunication and
// zb-lower-pipeline, on hand-written programs.
//===----------------------------------------------------------------------===//

namespace {
MessageOp sendOp(int peer, int64_t channel, int64_t bytes, int64_t id = -1) {
  return {MessageOp::Kind::Send, peer, channel, id, bytes};
}
MessageOp recvOp(int peer, int64_t channel, int64_t bytes, int64_t id = -1) {
  return {MessageOp::Kind::Recv, peer, channel, id, bytes};
}
} // namespace

TEST(CheckMessages, MatchedBytesPassInAnyTagOrder) {
  // Rank 0 sends tag 1 then tag 2; rank 1 receives tag 2 first: receives
  // match by tag, so this is fine with buffered sends.
  std::vector<std::vector<MessageOp>> prog{
      {sendOp(1, 1, 64), sendOp(1, 2, 32)},
      {recvOp(0, 2, 32), recvOp(0, 1, 64)}};
  EXPECT_FALSE(checkMessages(prog, SendSemantics::Buffered));
  // With rendezvous sends rank 0 blocks in its tag-1 send while rank 1 waits
  // in its tag-2 receive: a deadlock, reported as a cycle.
  std::optional<MessageConflict> c =
      checkMessages(prog, SendSemantics::Rendezvous);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, MessageConflict::Kind::Deadlock);
  ASSERT_EQ(c->waitFor.size(), 2u);
  EXPECT_EQ(c->waitFor[0], (std::pair<int, long>{0, 0}));
  EXPECT_EQ(c->waitFor[1], (std::pair<int, long>{1, 0}));
  EXPECT_TRUE(c->cycle);
  EXPECT_EQ(c->cycleBackTo, 0);
}

TEST(CheckMessages, MismatchedBytesNameBothOperations) {
  std::vector<std::vector<MessageOp>> prog{
      {sendOp(1, 7, 64), sendOp(1, 7, 48)},
      {recvOp(0, 7, 64), recvOp(0, 7, 40)}};
  std::optional<MessageConflict> c =
      checkMessages(prog, SendSemantics::Buffered);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, MessageConflict::Kind::Mismatch);
  EXPECT_EQ(c->position, 1u);
  EXPECT_EQ(c->channel, 7);
  EXPECT_EQ(c->sendRank, 0);
  EXPECT_EQ(c->sendIndex, 1);
  EXPECT_EQ(c->receiveRank, 1);
  EXPECT_EQ(c->receiveIndex, 1);
  // Ids are compared the same way; -1 (unknown) matches anything.
  prog[1][1].bytes = 48;
  EXPECT_FALSE(checkMessages(prog, SendSemantics::Buffered));
  prog[0][1].id = 3;
  prog[1][1].id = 4;
  c = checkMessages(prog, SendSemantics::Buffered);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, MessageConflict::Kind::Mismatch);
}

TEST(CheckMessages, UnmatchedSendsAndReceives) {
  std::optional<MessageConflict> c = checkMessages(
      {{sendOp(1, 0, 8), sendOp(1, 0, 8)}, {recvOp(0, 0, 8)}},
      SendSemantics::Buffered);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, MessageConflict::Kind::SendNotReceived);
  EXPECT_EQ(c->position, 1u);
  EXPECT_EQ(c->numSends, 2u);
  EXPECT_EQ(c->numReceives, 1u);
  c = checkMessages({{}, {recvOp(0, 5, 8)}}, SendSemantics::Buffered);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, MessageConflict::Kind::ReceiveNotSent);
  EXPECT_EQ(c->receiveRank, 1);
  EXPECT_EQ(c->source, 0);
  EXPECT_EQ(c->channel, 5);
}

TEST(CheckMessages, BufferedDeadlockAndLateSends) {
  // Each rank receives before it sends what the other waits for: a cycle.
  std::vector<std::vector<MessageOp>> prog{
      {recvOp(1, 0, 4), sendOp(1, 1, 4)},
      {recvOp(0, 1, 4), sendOp(0, 0, 4)},
      {}};
  std::optional<MessageConflict> c =
      checkMessages(prog, SendSemantics::Buffered);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, MessageConflict::Kind::Deadlock);
  ASSERT_EQ(c->waitFor.size(), 2u);
  EXPECT_EQ(c->waitFor[0], (std::pair<int, long>{0, 0}));
  EXPECT_EQ(c->waitFor[1], (std::pair<int, long>{1, 0}));
  EXPECT_TRUE(c->cycle);
  // A receive with no send at all is a matching error, not a deadlock.
  c = checkMessages({{recvOp(1, 0, 4)}, {}}, SendSemantics::Buffered);
  ASSERT_TRUE(c); // matching: a receive without a send
  EXPECT_EQ(c->kind, MessageConflict::Kind::ReceiveNotSent);
  // Rank 1's send waits for rank 2's message, which comes: no deadlock.
  std::vector<std::vector<MessageOp>> late{
      {recvOp(1, 0, 4)},
      {recvOp(2, 1, 4), sendOp(0, 0, 4)},
      {sendOp(1, 1, 4)}};
  EXPECT_FALSE(checkMessages(late, SendSemantics::Buffered));
}
