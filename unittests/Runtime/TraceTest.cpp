//===- TraceTest.cpp - Realized bubble and Chrome trace -------------------===//

#include "zbrt/Trace.h"
#include "zbrt/zbrt.h"

#include "../../runtime/lib/TraceLog.h"

#include "gtest/gtest.h"

#include <sstream>

using namespace zbrt;

namespace {

TraceEvent action(EventKind kind, int32_t rank, double begin, double end) {
  return TraceEvent{kind, rank, 0, 0, -1, -1, 0, begin, end};
}

TraceEvent message(EventKind kind, int32_t rank, int32_t peer, double begin,
                   double end) {
  return TraceEvent{kind, rank, -1, -1, peer, 7, 64, begin, end};
}

TEST(TraceBubble, SyntheticTrace) {
  std::vector<TraceEvent> events = {
      message(EventKind::Recv, 0, 1, -5, 0), // before the first action
      action(EventKind::Forward, 0, 0, 10),
      message(EventKind::Recv, 0, 1, 10, 15), // waiting: idle
      action(EventKind::BackwardInput, 0, 15, 25),
      action(EventKind::BackwardWeight, 0, 20, 30), // overlaps B: union
      message(EventKind::Send, 0, 1, 30, 31),
      action(EventKind::Forward, 0, 36, 40),
      action(EventKind::Forward, 1, 0, 100), // other rank: ignored
  };
  BubbleStats s = computeBubble(events, 0);
  EXPECT_EQ(s.numActions, 4);
  EXPECT_DOUBLE_EQ(s.firstBeginUs, 0);
  EXPECT_DOUBLE_EQ(s.lastEndUs, 40);
  EXPECT_DOUBLE_EQ(s.busyUs, 10 + 15 + 4);
  EXPECT_DOUBLE_EQ(s.bubbleRate, 1.0 - 29.0 / 40.0);

  std::vector<BubbleStats> all = computeBubblePerRank(events, 3);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_DOUBLE_EQ(all[1].bubbleRate, 0.0);
  EXPECT_EQ(all[1].numActions, 1);
  EXPECT_EQ(all[2].numActions, 0); // no actions: no bubble
  EXPECT_DOUBLE_EQ(all[2].bubbleRate, 0.0);
}

TraceEvent work(EventKind kind, int32_t rank, double begin, double end,
                double workFrom) {
  TraceEvent e = message(kind, rank, 1, begin, end);
  e.workFromUs = workFrom;
  return e;
}

TEST(TraceBubble, MessageWorkIsBusyWaitingIsIdle) {
  std::vector<TraceEvent> events = {
      work(EventKind::Recv, 0, -5, 0, -2), // before the first action: out
      action(EventKind::Forward, 0, 0, 10),
      work(EventKind::Recv, 0, 10, 18, 15), // waits 10..15, works 15..18
      action(EventKind::BackwardInput, 0, 18, 25),
      work(EventKind::Send, 0, 25, 27, 25), // all work
      action(EventKind::BackwardWeight, 0, 27, 30),
      message(EventKind::Recv, 0, 1, 30, 40), // the backend does not say
      action(EventKind::Forward, 0, 40, 44),
      work(EventKind::Send, 0, 44, 46, 44), // after the last action: out
  };
  // Span 0..44; busy F 10 + receive 3 + B 7 + send 2 + W 3 + F 4 = 29.
  BubbleStats s = computeBubble(events, 0);
  EXPECT_EQ(s.numActions, 4);
  EXPECT_DOUBLE_EQ(s.firstBeginUs, 0);
  EXPECT_DOUBLE_EQ(s.lastEndUs, 44);
  EXPECT_DOUBLE_EQ(s.busyUs, 29);
  EXPECT_DOUBLE_EQ(s.bubbleRate, 15.0 / 44.0);
}

TEST(TraceRecording, TheBackendsWorkBecomesTheMessagesWork) {
  traceBeginStep();
  using Clock = std::chrono::steady_clock;
  Clock::time_point work = Clock::now();
  double at = detail::traceUsAt(work);
  // traceUsAt is the trace's clock: a later time point is later by as much.
  EXPECT_NEAR(detail::traceUsAt(work + std::chrono::microseconds(250)) - at,
              250.0, 1e-6);
  detail::traceRecordMessage(message(EventKind::Recv, 0, 1, at - 2, at + 4),
                             work); // within: taken
  detail::traceRecordMessage(message(EventKind::Send, 0, 1, at + 4, at + 6),
                             Clock::time_point{}); // the backend does not say
  detail::traceRecordMessage(message(EventKind::Send, 0, 1, at + 6, at + 8),
                             work); // before the event: not taken
  const std::vector<TraceEvent> &events = traceEvents();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_DOUBLE_EQ(events[0].workFromUs, at);
  for (size_t i = 1; i < events.size(); ++i)
    EXPECT_LT(events[i].workFromUs, 0) << i;
  traceBeginStep();
}

TEST(TraceBubble, OpenEventsAreIgnored) {
  std::vector<TraceEvent> events = {action(EventKind::Forward, 0, 0, 10),
                                    action(EventKind::Forward, 0, 20, -1)};
  BubbleStats s = computeBubble(events, 0);
  EXPECT_EQ(s.numActions, 1);
  EXPECT_DOUBLE_EQ(s.bubbleRate, 0.0);
}

TEST(TraceRecording, ActionBeginEndRecordsIntervals) {
  traceBeginStep();
  zbrt_action_begin(0, 2, 5);
  zbrt_action_begin(2, 1, 4); // nested / interleaved pairs are tolerated
  zbrt_action_end(0, 2, 5);
  zbrt_action_end(2, 1, 4);
  const std::vector<TraceEvent> &events = traceEvents();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, EventKind::Forward);
  EXPECT_EQ(events[0].stage, 2);
  EXPECT_EQ(events[0].microbatch, 5);
  EXPECT_EQ(events[1].kind, EventKind::BackwardWeight);
  for (const TraceEvent &e : events) {
    EXPECT_GE(e.beginUs, 0);
    EXPECT_GE(e.endUs, e.beginUs);
  }
  traceBeginStep();
  EXPECT_TRUE(traceEvents().empty());
}

TEST(TraceChrome, OneTrackPerRank) {
  std::vector<TraceEvent> events = {
      TraceEvent{EventKind::Forward, 0, 0, 3, -1, -1, 0, 1.5, 4.0},
      TraceEvent{EventKind::Send, 0, -1, -1, 1, 6, 256, 4.0, 4.25},
      TraceEvent{EventKind::Recv, 1, -1, -1, 0, 6, 256, 0.0, 4.5, 4.0},
      TraceEvent{EventKind::BackwardInput, 1, 1, 3, -1, -1, 0, 5.0, 9.0},
  };
  std::ostringstream os;
  writeChromeTrace(os, events, 2, 7);
  std::string json = os.str();
  EXPECT_NE(json.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(json.find("\"zb step 7\""), std::string::npos);
  EXPECT_NE(json.find("{\"name\": \"rank 0\"}"), std::string::npos);
  EXPECT_NE(json.find("{\"name\": \"rank 1\"}"), std::string::npos);
  EXPECT_NE(json.find("\"name\": \"F s0 mb3\", \"cat\": \"F\", \"ph\": "
                      "\"X\", \"pid\": 0, \"tid\": 0, \"ts\": 1.500, "
                      "\"dur\": 2.500"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"send ->1\""), std::string::npos);
  EXPECT_NE(json.find("\"recv <-0\""), std::string::npos);
  EXPECT_NE(json.find("\"B s1 mb3\""), std::string::npos);
  EXPECT_NE(json.find("\"bytes\": 256"), std::string::npos);
  // The receive's own work (from 4.0 to its end), not the send's (unknown).
  EXPECT_NE(json.find("\"bytes\": 256, \"work_us\": 0.500}"), std::string::npos)
      << json;
  EXPECT_EQ(json.find("work_us"), json.rfind("work_us"));
}

} // namespace
