//===- OptimizerSync.cpp - Optimizer synchronisation in the schedule ------===//
//
// See zb/Schedule/OptimizerSync.h.
//
//===----------------------------------------------------------------------===//

#include "zb/Schedule/OptimizerSync.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace zb::sched;

llvm::StringRef zb::sched::optimizerSyncName(OptimizerSync mode) {
  switch (mode) {
  case OptimizerSync::None:
    return "none";
  case OptimizerSync::AllReduce:
    return "all-reduce";
  case OptimizerSync::PostValidation:
    return "post-validation";
  }
  return "?";
}

llvm::Expected<OptimizerSync> zb::sched::parseOptimizerSync(llvm::StringRef name) {
  for (OptimizerSync m : {OptimizerSync::None, OptimizerSync::AllReduce,
                          OptimizerSync::PostValidation})
    if (name == optimizerSyncName(m))
      return m;
  return llvm::createStringError(
      llvm::formatv("unknown optimizer sync '{0}' (expected none, all-reduce "
                    "or post-validation)",
                    name)
          .str());
}

/// The latency of a state message sent by rank \p rank: the T_comm of the
/// rank's first stage (the one it sends activations from), 0 if none.
static double latencyOf(const StageCosts &costs, const Schedule &schedule,
                        int rank) {
  for (size_t s = 0; s < schedule.stageToRank.size(); ++s)
    if (schedule.stageToRank[s] == rank && s < costs.comm.size())
      return costs.comm[s];
  return 0;
}

namespace {
/// The synchronisation after one iteration, given its passes' ends.
struct Boundary {
  std::vector<RankSync> ranks;
  std::vector<double> ready; ///< the next iteration's rankReady
};
} // namespace

static Boundary syncAfter(const std::vector<double> &passesEnd,
                          const std::vector<double> &latency,
                          const OptimizerSyncOptions &options) {
  int p = passesEnd.size();
  Boundary b;
  b.ranks.resize(p);
  for (int r = 0; r < p; ++r)
    b.ranks[r].passesEnd = passesEnd[r];
  switch (options.mode) {
  case OptimizerSync::None:
    for (RankSync &s : b.ranks)
      s.stepStart = s.passesEnd;
    break;
  case OptimizerSync::AllReduce: {
    // Recursive doubling: ceil(log2 p) rounds, each one message latency
    // (the slowest rank's, to stay an upper bound).
    double last = 0, lat = 0;
    for (int r = 0; r < p; ++r) {
      last = std::max(last, passesEnd[r]);
      lat = std::max(lat, latency[r]);
    }
    double rounds = p > 1 ? std::ceil(std::log2((double)p)) : 0;
    for (RankSync &s : b.ranks) {
      s.stateIn = p > 1 ? last + rounds * lat : -1;
      s.stepStart = std::max(s.passesEnd, s.stateIn);
    }
    break;
  }
  case OptimizerSync::PostValidation:
    for (int r = 0; r < p; ++r) {
      RankSync &s = b.ranks[r];
      s.stepStart = s.passesEnd;
      if (r > 0) {
        s.stateIn = b.ranks[r - 1].stateOut + latency[r - 1];
        s.stepStart = std::max(s.stepStart, s.stateIn);
      }
      if (r + 1 < p)
        s.stateOut = s.stepStart;
    }
    for (int r = 0; r < p; ++r)
      b.ranks[r].fullArrives =
          r + 1 == p ? b.ranks[r].stepStart
                     : b.ranks[p - 1].stepStart + latency[p - 1];
    break;
  }
  for (RankSync &s : b.ranks) {
    s.stepEnd = s.stepStart + options.costOptimizer;
    b.ready.push_back(s.stepEnd);
  }
  return b;
}

static std::vector<double> passesEnd(const SimResult &sim,
                                     const std::vector<double> &ready) {
  std::vector<double> end(sim.timeline.size());
  for (size_t r = 0; r < end.size(); ++r)
    end[r] = sim.timeline[r].empty() ? (ready.empty() ? 0 : ready[r])
                                     : sim.timeline[r].back().end;
  return end;
}

llvm::Expected<OptimizerSyncTiming>
zb::sched::simulateOptimizerSync(const Problem &problem,
                                 const Schedule &schedule,
                                 const OptimizerSyncOptions &options) {
  if (options.iterations < 2)
    return llvm::createStringError(
        llvm::formatv("optimizer sync: iterations must be >= 2, got {0}",
                      options.iterations)
            .str());
  if (!(options.costOptimizer >= 0) || !std::isfinite(options.costOptimizer))
    return llvm::createStringError(
        llvm::formatv("optimizer sync: the optimizer step's cost must be a "
                      "finite number >= 0 ms, got {0}",
                      options.costOptimizer)
            .str());
  int p = schedule.perRank.size();
  StageCosts costs = resolveStageCosts(problem, schedule);
  std::vector<double> latency(p);
  for (int r = 0; r < p; ++r)
    latency[r] = latencyOf(costs, schedule, r);

  OptimizerSyncTiming timing;
  timing.mode = options.mode;
  SimOptions sim;
  double firstEnd = 0, lastEnd = 0;
  for (int k = 0; k < options.iterations; ++k) {
    SimResult result = simulate(problem, schedule, sim);
    if (!result.complete)
      return llvm::createStringError(
          "optimizer sync: the schedule cannot be simulated (a dependency is "
          "never satisfied); run verify() first");
    std::vector<double> end = passesEnd(result, sim.rankReady);
    Boundary b = syncAfter(end, latency, options);
    double iterationEnd = 0;
    for (double e : end)
      iterationEnd = std::max(iterationEnd, e);
    if (k == 0) {
      firstEnd = iterationEnd;
      timing.ranks = b.ranks;
      timing.idealTime = result.idealTime + options.costOptimizer;
      timing.first = std::move(result);
    } else if (k == 1) {
      timing.second = std::move(result);
    }
    lastEnd = iterationEnd;
    sim.rankReady = b.ready;
  }
  timing.period = (lastEnd - firstEnd) / (options.iterations - 1);
  timing.bubbleRate =
      timing.period > 0 ? 1.0 - timing.idealTime / timing.period : 0.0;
  // Summed pass times: below 1e-12 is rounding, reported as 0.
  if (timing.bubbleRate < 1e-12)
    timing.bubbleRate = 0;

  // Where each rank validates in the second iteration.
  if (options.mode == OptimizerSync::PostValidation)
    for (int r = 0; r < p; ++r) {
      RankSync &s = timing.ranks[r];
      const auto &line = timing.second.timeline[r];
      size_t i = 0;
      // The last rank holds the full state before its step: it validates at
      // once (before its first pass).
      if (r + 1 < p)
        while (i < line.size() && line[i].start < s.fullArrives)
          ++i;
      s.validateBefore = i;
      for (size_t j = 0; j < i; ++j)
        s.forwardsBeforeValidation += line[j].action.kind == ActionKind::F;
    }
  return timing;
}

double zb::sched::validationTime(const OptimizerSyncTiming &timing,
                                 int rank) {
  const RankSync &s = timing.ranks[rank];
  if (rank + 1 == static_cast<int>(timing.ranks.size()))
    return s.stepStart;
  const auto &line = timing.second.timeline[rank];
  if (s.validateBefore < line.size())
    return line[s.validateBefore].start;
  return line.empty() ? s.stepEnd : line.back().end;
}

//===----------------------------------------------------------------------===//
// verifyOptimizerSync
//===----------------------------------------------------------------------===//

namespace {
/// Message channels of the check (MPI tags in the runtime): activations and
/// gradients on their own channels as zbrt tags them (zbrt_tag), the state
/// messages on theirs.
enum Channel : int64_t {
  Passes = 0,
  Gradients = 1,
  Partial = 2,
  Full = 3,
  Reduce = 4
};

struct Program {
  std::vector<MessageOp> ops;
  /// What each op is, for the error message.
  std::vector<std::string> what;
  void add(MessageOp::Kind kind, int peer, int64_t channel, int64_t id,
           std::string text) {
    MessageOp m;
    m.kind = kind;
    m.peer = peer;
    m.channel = channel;
    m.id = id;
    ops.push_back(m);
    what.push_back(std::move(text));
  }
};
} // namespace

static std::string describeAction(const Action &a, int iteration) {
  return llvm::formatv("{0}{1} of stage {2} (iteration {3})", kindName(a.kind),
                       a.microbatch, a.stage, iteration)
      .str();
}

/// Appends one iteration of rank \p r's program; for PostValidation's
/// second iteration, the full-state receive before the compute of action
/// \p validateBefore (before the receives that feed it).
static void appendIteration(Program &prog, const std::vector<CommOp> &ops,
                            const std::vector<Action> &actions, int iteration,
                            std::optional<std::pair<size_t, int>> validate) {
  auto id = [&](const Action &a) {
    return ((int64_t)iteration << 56) | ((int64_t)a.kind << 48) |
           ((int64_t)a.stage << 24) | a.microbatch;
  };
  size_t insertAt = ops.size();
  if (validate && validate->first < actions.size()) {
    const Action &target = actions[validate->first];
    for (size_t i = 0; i < ops.size(); ++i)
      if (ops[i].kind == CommOp::Kind::Compute && ops[i].action == target) {
        insertAt = i;
        while (insertAt > 0 && ops[insertAt - 1].kind == CommOp::Kind::Recv)
          --insertAt;
        break;
      }
  }
  auto addValidate = [&] {
    prog.add(MessageOp::Kind::Recv, validate->second, Full, iteration - 1,
             llvm::formatv("the validation's receive of the full state of "
                           "iteration {0}",
                           iteration - 1)
                 .str());
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    if (validate && i == insertAt)
      addValidate();
    const CommOp &op = ops[i];
    std::string what = describeAction(op.action, iteration);
    switch (op.kind) {
    case CommOp::Kind::Compute:
      prog.add(MessageOp::Kind::Compute, -1, Passes, -1, what);
      break;
    case CommOp::Kind::Send:
      prog.add(MessageOp::Kind::Send, op.peer,
               op.isGradient() ? Gradients : Passes, id(op.action),
               "the send of " + what);
      break;
    case CommOp::Kind::Recv:
      prog.add(MessageOp::Kind::Recv, op.peer,
               op.isGradient() ? Gradients : Passes, id(op.action),
               "the receive of " + what);
      break;
    }
  }
  if (validate && insertAt == ops.size())
    addValidate();
}

llvm::Error zb::sched::verifyOptimizerSync(const Problem &problem,
                                           const Schedule &schedule,
                                           const OptimizerSyncTiming &timing) {
  (void)problem;
  int p = schedule.perRank.size();
  if (timing.ranks.size() != static_cast<size_t>(p))
    return llvm::createStringError(
        llvm::formatv("optimizer sync: timing of {0} ranks for a schedule of "
                      "{1}",
                      timing.ranks.size(), p)
            .str());
  std::vector<std::vector<CommOp>> comm = communicationProgram(schedule);
  std::vector<Program> progs(p);
  for (int r = 0; r < p; ++r) {
    Program &prog = progs[r];
    appendIteration(prog, comm[r], schedule.perRank[r], 1, std::nullopt);
    switch (timing.mode) {
    case OptimizerSync::None:
      prog.add(MessageOp::Kind::Compute, -1, Passes, -1, "the optimizer step");
      break;
    case OptimizerSync::AllReduce:
      for (int q = 0; q < p; ++q)
        if (q != r)
          prog.add(MessageOp::Kind::Send, q, Reduce, 1,
                   "the all-reduce's send");
      for (int q = 0; q < p; ++q)
        if (q != r)
          prog.add(MessageOp::Kind::Recv, q, Reduce, 1,
                   "the all-reduce's receive");
      prog.add(MessageOp::Kind::Compute, -1, Passes, -1, "the optimizer step");
      break;
    case OptimizerSync::PostValidation:
      if (r > 0)
        prog.add(MessageOp::Kind::Recv, r - 1, Partial, 1,
                 "the receive of the partial state");
      if (r + 1 < p)
        prog.add(MessageOp::Kind::Send, r + 1, Partial, 1,
                 "the send of the partial state");
      prog.add(MessageOp::Kind::Compute, -1, Passes, -1,
               "the eager optimizer step");
      if (r + 1 == p)
        for (int q = 0; q + 1 < p; ++q)
          prog.add(MessageOp::Kind::Send, q, Full, 1,
                   "the send of the full state");
      break;
    }
    std::optional<std::pair<size_t, int>> validate;
    if (timing.mode == OptimizerSync::PostValidation && r + 1 < p)
      validate = std::make_pair(timing.ranks[r].validateBefore, p - 1);
    appendIteration(prog, comm[r], schedule.perRank[r], 2, validate);
  }
  std::vector<std::vector<MessageOp>> messages;
  for (const Program &prog : progs)
    messages.push_back(prog.ops);
  std::optional<MessageConflict> c =
      checkMessages(messages, SendSemantics::Buffered);
  if (!c)
    return llvm::Error::success();
  using K = MessageConflict::Kind;
  auto at = [&](int rank, long index) -> std::string {
    if (rank < 0 || index < 0)
      return "nothing";
    return progs[rank].what[index];
  };
  std::string text;
  switch (c->kind) {
  case K::SendNotReceived:
    text = llvm::formatv("rank {0} -> rank {1}: {2} has no matching receive",
                         c->source, c->destination,
                         at(c->sendRank, c->sendIndex));
    break;
  case K::ReceiveNotSent:
    text = llvm::formatv("rank {0} -> rank {1}: {2} has no matching send",
                         c->source, c->destination,
                         at(c->receiveRank, c->receiveIndex));
    break;
  case K::Mismatch:
    text = llvm::formatv("rank {0} -> rank {1}: {2} is received as {3}",
                         c->source, c->destination,
                         at(c->sendRank, c->sendIndex),
                         at(c->receiveRank, c->receiveIndex));
    break;
  case K::Deadlock:
    text = "deadlock: ";
    for (auto [rank, index] : c->waitFor)
      text += index < 0 ? llvm::formatv("rank {0} has finished; ", rank).str()
                        : llvm::formatv("rank {0} waits in {1}; ", rank,
                                        at(rank, index))
                              .str();
    if (c->cycle)
      text += llvm::formatv("back to rank {0}", c->cycleBackTo).str();
    break;
  }
  return llvm::createStringError(
      llvm::formatv("optimizer sync ({0}): {1}", optimizerSyncName(timing.mode),
                    text)
          .str());
}
