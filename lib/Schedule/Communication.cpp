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
  std::vector<std::vector<CommOp>> programs(schedule.perRank.size());
  for (size_t r = 0; r < schedule.perRank.size(); ++r) {
    std::vector<CommOp> &prog = programs[r];
    for (const Action &a : schedule.perRank[r]) {
      int s = a.stage, i = a.microbatch;
      // Neighbours on the microbatch's route (DualPipe: two routes).
      bool hasPrev = !schedule.routeStart(s), hasNext = !schedule.routeEnd(s);
      // Receive right before the consumer.
      if (a.kind == ActionKind::F && hasPrev && rankOf[s - 1] != (int)r)
        prog.push_back({CommOp::Kind::Recv, {ActionKind::F, s - 1, i},
                        rankOf[s - 1]});
      if (a.kind == ActionKind::B && hasNext && rankOf[s + 1] != (int)r)
        prog.push_back({CommOp::Kind::Recv, {ActionKind::B, s + 1, i},
                        rankOf[s + 1]});
      prog.push_back({CommOp::Kind::Compute, a, -1});
      // Send right after the producer.
      if (a.kind == ActionKind::F && hasNext && rankOf[s + 1] != (int)r)
        prog.push_back({CommOp::Kind::Send, a, rankOf[s + 1]});
      bool gradientReady = schedule.fusedBackward ? a.kind == ActionKind::W
                                                  : a.kind == ActionKind::B;
      if (gradientReady && hasPrev && rankOf[s - 1] != (int)r)
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

//===----------------------------------------------------------------------===//
// checkMessages: the one checker
//===----------------------------------------------------------------------===//

namespace {
/// A FIFO channel: (source rank, destination rank, channel).
using Channel = std::tuple<int, int, int64_t>;
/// An operation of a program: (rank, index).
using OpRef = std::pair<int, long>;

/// Matching: per channel, the k-th send and the k-th receive carry the same
/// id and bytes.
std::optional<MessageConflict>
matchChannels(const std::vector<std::vector<MessageOp>> &programs) {
  std::map<Channel, std::vector<OpRef>> sends, recvs;
  for (int r = 0; r < (int)programs.size(); ++r)
    for (long i = 0; i < (long)programs[r].size(); ++i) {
      const MessageOp &op = programs[r][i];
      if (op.kind == MessageOp::Kind::Send)
        sends[{r, op.peer, op.channel}].push_back({r, i});
      else if (op.kind == MessageOp::Kind::Recv)
        recvs[{op.peer, r, op.channel}].push_back({r, i});
    }
  for (auto &[channel, list] : recvs)
    sends[channel]; // a channel with receives only is checked below
  for (auto &[channel, sent] : sends) {
    const std::vector<OpRef> &received = recvs[channel];
    auto [src, dst, tag] = channel;
    for (size_t k = 0; k < std::max(sent.size(), received.size()); ++k) {
      MessageConflict c;
      c.source = src;
      c.destination = dst;
      c.channel = tag;
      c.position = k;
      c.numSends = sent.size();
      c.numReceives = received.size();
      if (k < sent.size())
        std::tie(c.sendRank, c.sendIndex) = sent[k];
      if (k < received.size())
        std::tie(c.receiveRank, c.receiveIndex) = received[k];
      if (k >= received.size()) {
        c.kind = MessageConflict::Kind::SendNotReceived;
        return c;
      }
      if (k >= sent.size()) {
        c.kind = MessageConflict::Kind::ReceiveNotSent;
        return c;
      }
      const MessageOp &s = programs[src][sent[k].second];
      const MessageOp &r = programs[dst][received[k].second];
      if ((s.id >= 0 && r.id >= 0 && s.id != r.id) ||
          (s.bytes >= 0 && r.bytes >= 0 && s.bytes != r.bytes)) {
        c.kind = MessageConflict::Kind::Mismatch;
        return c;
      }
    }
  }
  return std::nullopt;
}

/// Progress: runs the programs under the blocking semantics; returns the
/// wait-for chain of the first blocked rank when they cannot finish.
std::optional<MessageConflict>
runToCompletion(const std::vector<std::vector<MessageOp>> &programs,
                SendSemantics sends) {
  int p = programs.size();
  std::vector<size_t> pc(p, 0);
  std::map<Channel, size_t> inFlight; // buffered messages per channel
  auto current = [&](int r) -> const MessageOp * {
    return pc[r] < programs[r].size() ? &programs[r][pc[r]] : nullptr;
  };
  bool rendezvous = sends == SendSemantics::Rendezvous;
  auto step = [&](int r, const MessageOp &op) {
    if (op.kind == MessageOp::Kind::Compute)
      return ++pc[r], true;
    if (!rendezvous && op.kind == MessageOp::Kind::Send)
      return ++inFlight[{r, op.peer, op.channel}], ++pc[r], true;
    if (!rendezvous) {
      size_t &n = inFlight[{op.peer, r, op.channel}];
      if (n == 0)
        return false;
      return --n, ++pc[r], true;
    }
    // Rendezvous: both sides must be at the matching operation.
    const MessageOp *peer = current(op.peer);
    if (!peer || peer->peer != r || peer->channel != op.channel ||
        peer->id != op.id || peer->kind == op.kind ||
        peer->kind == MessageOp::Kind::Compute)
      return false;
    return ++pc[r], ++pc[op.peer], true;
  };
  bool progress = true;
  while (progress) {
    progress = false;
    for (int r = 0; r < p; ++r)
      while (const MessageOp *op = current(r)) {
        if (!step(r, *op))
          break;
        progress = true;
      }
  }
  for (int r = 0; r < p; ++r) {
    if (!current(r))
      continue;
    MessageConflict c;
    c.kind = MessageConflict::Kind::Deadlock;
    std::vector<char> seen(p, 0);
    for (int at = r;;) {
      if (!current(at)) {
        c.waitFor.push_back({at, -1});
        break;
      }
      if (seen[at]) {
        c.cycle = true;
        c.cycleBackTo = at;
        break;
      }
      seen[at] = 1;
      c.waitFor.push_back({at, (long)pc[at]});
      at = current(at)->peer;
    }
    return c;
  }
  return std::nullopt;
}
} // namespace

std::optional<MessageConflict>
zb::sched::checkMessages(const std::vector<std::vector<MessageOp>> &programs,
                         SendSemantics sends) {
  if (std::optional<MessageConflict> c = matchChannels(programs))
    return c;
  return runToCompletion(programs, sends);
}

//===----------------------------------------------------------------------===//
// verifyCommunication: a schedule's messages, worded for the scheduler
//===----------------------------------------------------------------------===//

static int64_t channelOf(const CommOp &op, const CommOptions &options) {
  return options.oneChannelPerPeerPair ? 0 : op.isGradient();
}

static std::string channelName(int src, int dst, int64_t tag,
                               const CommOptions &options) {
  if (options.oneChannelPerPeerPair)
    return llvm::formatv("rank {0} -> rank {1}", src, dst).str();
  return llvm::formatv("rank {0} -> rank {1} ({2})", src, dst,
                       tag ? "gradients" : "activations")
      .str();
}

/// An action as a message id (unique per kind, stage and microbatch).
static int64_t actionId(const Action &a) {
  return ((int64_t)a.kind << 48) | ((int64_t)a.stage << 24) | a.microbatch;
}

static std::string describeConflict(
    const MessageConflict &c,
    const std::vector<std::vector<CommOp>> &programs,
    const CommOptions &options, bool rendezvous) {
  using K = MessageConflict::Kind;
  auto actionAt = [&](int rank, long index) {
    return programs[rank][index].action;
  };
  std::string channel =
      channelName(c.source, c.destination, c.channel, options);
  switch (c.kind) {
  case K::SendNotReceived:
    return llvm::formatv("communication: {0}: rank {1} sends {2} as message "
                         "#{3}, but rank {4} posts only {5} receives",
                         channel, c.source,
                         message(actionAt(c.sendRank, c.sendIndex)),
                         c.position, c.destination, c.numReceives);
  case K::ReceiveNotSent:
    return llvm::formatv("communication: {0}: rank {1} receives {2} as "
                         "message #{3}, but rank {4} sends only {3} messages",
                         channel, c.destination,
                         message(actionAt(c.receiveRank, c.receiveIndex)),
                         c.position, c.source);
  case K::Mismatch:
    return llvm::formatv(
        "communication: {0}: message #{1} is sent as {2} but received (by "
        "rank {3}) as {4}; the receiver must post its receives in the "
        "sender's order",
        channel, c.position, message(actionAt(c.sendRank, c.sendIndex)),
        c.destination, message(actionAt(c.receiveRank, c.receiveIndex)));
  case K::Deadlock: {
    std::string text =
        llvm::formatv("communication deadlock with {0}: ",
                      rendezvous ? "rendezvous (blocking) sends"
                                 : "buffered sends and blocking receives")
            .str();
    for (auto [rank, index] : c.waitFor)
      text += index < 0
                  ? llvm::formatv("rank {0} has finished", rank).str()
                  : llvm::formatv("rank {0} is blocked {1}; ", rank,
                                  describeOp(programs[rank][index]))
                        .str();
    if (c.cycle)
      text += llvm::formatv("back to rank {0} (cycle)", c.cycleBackTo).str();
    return text;
  }
  }
  llvm_unreachable("unknown conflict");
}

llvm::Error zb::sched::verifyCommunication(const Problem &problem,
                                           const Schedule &schedule,
                                           const CommOptions &options) {
  (void)problem;
  std::vector<std::vector<CommOp>> programs = communicationProgram(schedule);
  std::vector<std::vector<MessageOp>> messages(programs.size());
  for (size_t r = 0; r < programs.size(); ++r)
    for (const CommOp &op : programs[r]) {
      MessageOp m;
      m.kind = op.kind == CommOp::Kind::Send   ? MessageOp::Kind::Send
               : op.kind == CommOp::Kind::Recv ? MessageOp::Kind::Recv
                                               : MessageOp::Kind::Compute;
      m.peer = op.peer;
      m.channel = channelOf(op, options);
      m.id = actionId(op.action);
      messages[r].push_back(m);
    }
  std::optional<MessageConflict> conflict =
      checkMessages(messages, options.sends);
  if (!conflict)
    return llvm::Error::success();
  return llvm::createStringError(describeConflict(
      *conflict, programs, options,
      options.sends == SendSemantics::Rendezvous));
}
