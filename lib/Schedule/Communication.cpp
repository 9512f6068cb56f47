//===- Communication.cpp - Send/recv insertion and its verifier -----------===//
//
// Inserts point-to-point communication into a schedule (one send right after
// the producing pass, one receive right before the consuming pass) and checks
// it: per channel, the i-th send matches the i-th receive; the programs run to
// completion when sends are buffered, or when sends and receives rendezvous.
//
//===----------------------------------------------------------------------===//

#include "zb/Schedule/Schedule.h"

#include "llvm/Support/FormatVariadic.h"

#include <map>
#include <tuple>

using namespace zb::sched;

std::vector<std::vector<CommOp>>
zb::sched::communicationProgram(const Schedule &schedule) {
  const std::vector<int> &rankOf = schedule.stageToRank;
  int numStages = rankOf.size();
  std::vector<std::vector<CommOp>> programs(schedule.perRank.size());
  for (size_t r = 0; r < schedule.perRank.size(); ++r) {
    std::vector<CommOp> &prog = programs[r];
    for (const Action &a : schedule.perRank[r]) {
      int s = a.stage, i = a.microbatch;
      // Receive right before the consumer.
      if (a.kind == ActionKind::F && s > 0 && rankOf[s - 1] != (int)r)
        prog.push_back({CommOp::Kind::Recv, {ActionKind::F, s - 1, i},
                        rankOf[s - 1]});
      if (a.kind == ActionKind::B && s + 1 < numStages &&
          rankOf[s + 1] != (int)r)
        prog.push_back({CommOp::Kind::Recv, {ActionKind::B, s + 1, i},
                        rankOf[s + 1]});
      prog.push_back({CommOp::Kind::Compute, a, -1});
      // Send right after the producer.
      if (a.kind == ActionKind::F && s + 1 < numStages &&
          rankOf[s + 1] != (int)r)
        prog.push_back({CommOp::Kind::Send, a, rankOf[s + 1]});
      bool gradientReady = schedule.fusedBackward ? a.kind == ActionKind::W
                                                  : a.kind == ActionKind::B;
      if (gradientReady && s > 0 && rankOf[s - 1] != (int)r)
        prog.push_back(
            {CommOp::Kind::Send, {ActionKind::B, s, i}, rankOf[s - 1]});
    }
  }
  return programs;
}

static std::string message(const Action &a) {
  return llvm::formatv("the {0} of {1}(stage {2}, microbatch {3})",
                       a.kind == ActionKind::F ? "activation" : "gradient",
                       kindName(a.kind), a.stage, a.microbatch)
      .str();
}

/// "computing F(...)", "in send of ... to rank q", "in recv of ... from q".
static std::string describeOp(const CommOp &op) {
  if (op.kind == CommOp::Kind::Compute)
    return llvm::formatv("computing {0}(stage {1}, microbatch {2})",
                         kindName(op.action.kind), op.action.stage,
                         op.action.microbatch)
        .str();
  if (op.kind == CommOp::Kind::Send)
    return llvm::formatv("in send of {0} to rank {1}", message(op.action),
                         op.peer)
        .str();
  return llvm::formatv("in recv of {0} from rank {1}", message(op.action),
                       op.peer)
      .str();
}

namespace {
/// A FIFO channel: (source rank, destination rank, tag).
using Channel = std::tuple<int, int, int>;
} // namespace

static Channel channelOf(int src, int dst, const CommOp &op,
                         const CommOptions &options) {
  return {src, dst, options.oneChannelPerPeerPair ? 0 : op.isGradient()};
}

static std::string channelName(const Channel &c, const CommOptions &options) {
  auto [src, dst, tag] = c;
  if (options.oneChannelPerPeerPair)
    return llvm::formatv("rank {0} -> rank {1}", src, dst).str();
  return llvm::formatv("rank {0} -> rank {1} ({2})", src, dst,
                       tag ? "gradients" : "activations")
      .str();
}

llvm::Error zb::sched::verifyCommunication(const Problem &problem,
                                           const Schedule &schedule,
                                           const CommOptions &options) {
  (void)problem;
  int p = schedule.perRank.size();
  std::vector<std::vector<CommOp>> programs = communicationProgram(schedule);

  // 1. Matching: per channel, the k-th send and the k-th receive carry the
  // same message.
  std::map<Channel, std::vector<Action>> sends, recvs;
  for (int r = 0; r < p; ++r)
    for (const CommOp &op : programs[r]) {
      if (op.kind == CommOp::Kind::Send)
        sends[channelOf(r, op.peer, op, options)].push_back(op.action);
      else if (op.kind == CommOp::Kind::Recv)
        recvs[channelOf(op.peer, r, op, options)].push_back(op.action);
    }
  for (auto &[channel, list] : sends) {
    const std::vector<Action> &other = recvs[channel];
    auto [src, dst, tag] = channel;
    for (size_t k = 0; k < list.size(); ++k) {
      if (k >= other.size())
        return llvm::createStringError(
            llvm::formatv("communication: {0}: rank {1} sends {2} as message "
                          "#{3}, but rank {4} posts only {5} receives",
                          channelName(channel, options), src,
                          message(list[k]), k, dst, other.size())
                .str());
      if (list[k] != other[k])
        return llvm::createStringError(
            llvm::formatv("communication: {0}: message #{1} is sent as {2} "
                          "but received (by rank {3}) as {4}; the receiver "
                          "must post its receives in the sender's order",
                          channelName(channel, options), k, message(list[k]),
                          dst, message(other[k]))
                .str());
    }
  }
  for (auto &[channel, list] : recvs) {
    size_t sent = sends.count(channel) ? sends[channel].size() : 0;
    if (list.size() > sent) {
      auto [src, dst, tag] = channel;
      return llvm::createStringError(
          llvm::formatv("communication: {0}: rank {1} receives {2} as message "
                        "#{3}, but rank {4} sends only {3} messages",
                        channelName(channel, options), dst,
                        message(list[sent]), sent, src)
              .str());
    }
  }

  // 2. Blocking semantics.
  std::vector<size_t> pc(p, 0);
  std::map<Channel, size_t> inFlight; // buffered messages per channel
  auto current = [&](int r) -> const CommOp * {
    return pc[r] < programs[r].size() ? &programs[r][pc[r]] : nullptr;
  };
  bool rendezvous = options.sends == SendSemantics::Rendezvous;
  while (true) {
    bool progress = false, done = true;
    for (int r = 0; r < p; ++r) {
      while (const CommOp *op = current(r)) {
        if (op->kind == CommOp::Kind::Compute) {
          ++pc[r];
        } else if (op->kind == CommOp::Kind::Send && !rendezvous) {
          ++inFlight[channelOf(r, op->peer, *op, options)];
          ++pc[r];
        } else if (op->kind == CommOp::Kind::Recv && !rendezvous) {
          size_t &n = inFlight[channelOf(op->peer, r, *op, options)];
          if (n == 0)
            break;
          --n;
          ++pc[r];
        } else {
          // Rendezvous: both sides must be at the matching operation.
          const CommOp *peer = current(op->peer);
          bool match =
              peer && peer->peer == r && peer->action == op->action &&
              peer->kind != op->kind && peer->kind != CommOp::Kind::Compute;
          if (!match)
            break;
          ++pc[r];
          ++pc[op->peer];
        }
        progress = true;
      }
      done &= current(r) == nullptr;
    }
    if (done)
      return llvm::Error::success();
    if (!progress)
      break;
  }
  // Report the wait-for chain from the first blocked rank until it closes a
  // cycle (or reaches a rank that has finished).
  for (int r = 0; r < p; ++r) {
    if (!current(r))
      continue;
    std::string text = llvm::formatv("communication deadlock with {0}: ",
                                     rendezvous
                                         ? "rendezvous (blocking) sends"
                                         : "buffered sends and blocking "
                                           "receives")
                           .str();
    std::vector<char> seen(p, 0);
    int at = r;
    while (true) {
      const CommOp *op = current(at);
      if (!op) {
        text += llvm::formatv("rank {0} has finished", at).str();
        break;
      }
      if (seen[at]) {
        text += llvm::formatv("back to rank {0} (cycle)", at).str();
        break;
      }
      seen[at] = 1;
      text += llvm::formatv("rank {0} is blocked {1}; ", at, describeOp(*op))
                  .str();
      at = op->peer;
    }
    return llvm::createStringError(text);
  }
  return llvm::createStringError("communication deadlock");
}
