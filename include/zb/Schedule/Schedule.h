//===- Schedule.h - Pipeline-parallel schedules ------------------*- C++
//-*-===//
//
// The scheduling core of zb: problem description, schedule builders
// (handcrafted, heuristic, ILP), an event-driven simulator and a verifier.
// No MLIR dependency; used by the compiler, zb-sched and the Python bindings.
//
// References (docs/references.md): Zero Bubble (Almost) Pipeline Parallelism
// (Qi et al., ICLR 2024, arXiv:2401.10241):
//   Section 2     handcrafted ZB-H1 / ZB-H2 and the 1F1B baseline,
//   Section 3.1   the automatic heuristic (ZB-1p / ZB-2p),
//   Section 5.3   the bubble rate and Table 5,
//   Appendix B    the memory model (F adds M_B, B adds M_W - M_B, W adds -M_W),
//   Appendix G    the ILP formulation,
// and the ZB-V note (Qi et al., arXiv:2405.15362).
//
// Units: every time is in milliseconds (any consistent unit works; the
// reference tables use integer microseconds), every memory quantity in bytes
// (or any consistent unit, e.g. the paper's activation units).
//
//===----------------------------------------------------------------------===//

#ifndef ZB_SCHEDULE_SCHEDULE_H
#define ZB_SCHEDULE_SCHEDULE_H

#include "zb/Support/Limits.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace zb::sched {

/// The three passes of one microbatch on one stage: forward (F), gradient
/// with respect to the stage input (B, the previous stage waits for it) and
/// gradient with respect to the parameters (W, nobody waits for it).
enum class ActionKind { F, B, W };

/// Returns "F", "B" or "W".
llvm::StringRef kindName(ActionKind kind);

/// One pass of one microbatch on one (global, virtual) stage.
struct Action {
  ActionKind kind;
  /// Global stage index 0..P*V-1 (for V = 1: the rank).
  int stage;
  /// Microbatch index 0..m-1.
  int microbatch;

  bool operator==(const Action &o) const {
    return kind == o.kind && stage == o.stage && microbatch == o.microbatch;
  }
  bool operator!=(const Action &o) const { return !(*this == o); }
};

/// A scheduling problem. Costs and memory are given per rank (the rank's
/// whole share of the model): a vector holds either one value (all ranks),
/// p values (one per rank; with V chunks per rank each chunk gets 1/V of the
/// rank's value) or p*V values (one per global stage, used as is).
/// costComm is a latency per hop between different ranks (never divided by V,
/// never occupying a rank); the value of the sending rank/stage is used.
struct Problem {
  /// p: pipeline ranks (devices).
  int numRanks = 0;
  /// m: microbatches per iteration.
  int numMicrobatches = 0;
  /// V: chunks (virtual stages) per rank; global stages = p*V.
  int numChunks = 1;
  /// T_F, T_B, T_W, T_comm in ms. costW/costComm may be empty (= 0).
  std::vector<double> costF, costB, costW, costComm;
  /// M_B (kept by F until B) and M_W (kept by B until W), in bytes.
  /// Empty = 0 (no memory model).
  std::vector<double> memB, memW;
  /// Activation memory limit per rank in the unit of memB; 0 = unlimited.
  double memoryLimit = 0;
  /// Per-rank limits (size p; an entry of 0 = unlimited on that rank), for
  /// models whose ranks differ (the embedding and LM-head ranks hold
  /// more). Empty: memoryLimit on every rank. See memoryLimitOf().
  std::vector<double> memoryLimits;
  /// Run-to-run variation of the pass durations: coefficient of variation
  /// (standard deviation / mean) of T_F, T_B, T_W per stage, as measured by
  /// `zb-run --profile`. Empty = unknown (deterministic). Only
  /// estimateJitter() reads it; the schedulers plan with the means.
  std::vector<double> cvF, cvB, cvW;
  /// alpha in [0, 1]: how much of an overlapped F&B pair (Schedule::fbPairs)
  /// hides. The pair of an F of cost T_F and a B of cost T_B (ms, each of its
  /// own stage) occupies its rank for
  ///   T_F&B = max(T_F, T_B) + (1 - alpha) min(T_F, T_B)
  /// (fbPairTime): 0 = no overlap, the passes run one after the other exactly
  /// as without the mark; 1 = the shorter pass hides completely behind the
  /// longer. DeepSeek's F&B (DeepSeek-V3 report Section 3.2.1: the forward
  /// of one chunk and the backward of another, computation overlapped with
  /// the other's all-to-all and pipeline communication); the value is an
  /// assumption about the hardware, not measured by zb. Default 0.
  double fbOverlap = 0;

  int numStages() const { return numRanks * numChunks; }
  /// The limit of rank \p rank (0 = unlimited).
  double memoryLimitOf(int rank) const {
    return memoryLimits.empty() ? memoryLimit : memoryLimits[rank];
  }
  /// True when some rank has a limit.
  bool hasMemoryLimit() const {
    for (int r = 0; r < numRanks; ++r)
      if (memoryLimitOf(r) > 0)
        return true;
    return false;
  }
};

/// How the paper measures the cost of a schedule (Section 5.3 and
/// docs/references.md, "Table 5").
enum class CostConvention {
  /// End time of the last action, measured from t = 0 (1F1B, 1F1B-I, ZB-H1).
  Makespan,
  /// Maximum over ranks of the span from the start of the rank's first action
  /// to the end of its last one (ZB-H2, ZB-1p, ZB-2p, ILP, ZB-V).
  StageSpan,
};

/// "makespan" or "stage_span": the convention's name in zb's schedule JSON
/// (the `cost_convention` field) and the Python bindings.
llvm::StringRef costConventionName(CostConvention convention);
/// The convention named `name`, or std::nullopt for any other text.
std::optional<CostConvention> parseCostConvention(llvm::StringRef name);

/// A schedule: for every rank the ordered list of actions it executes.
struct Schedule {
  std::string name;
  /// perRank[r] is rank r's execution order.
  std::vector<std::vector<Action>> perRank;
  /// stageToRank[s] is the rank that runs global stage s (size p*V).
  std::vector<int> stageToRank;
  /// The cost convention the paper uses for this schedule.
  CostConvention costConvention = CostConvention::Makespan;
  /// True for schedules that do not split the backward pass (GPipe, 1F1B,
  /// 1F1B-I): the W of a microbatch directly follows its B on the same rank
  /// and the gradient is sent to the previous stage only after W (B and W are
  /// one backward pass). False: the gradient is sent right after B.
  bool fusedBackward = false;
  /// Directions (routes) D: 1, or 2 for a bidirectional pipeline (DualPipe).
  /// Route d is the global stages d*L .. d*L+L-1 (L = routeLength()) and
  /// carries the microbatches i with directionOfMicrobatch(i, m, D) == d:
  /// microbatch i passes through those L stages only, F from the route's
  /// first to its last, B back. Stages s and s+L compute the same model stage
  /// (modelStage) with their own copy of its parameters; the copies'
  /// gradients are summed before the optimizer (DualPipe's "2x parameters").
  int directions = 1;
  /// Overlapped F&B pairs (DeepSeek's F&B, PyTorch ScheduleDualPipeV's
  /// OVERLAP_F_B: the forward of one microbatch and the backward of another
  /// issued together). fbPairs[r] lists, in increasing order, the indices i
  /// into perRank[r] for which perRank[r][i] (an F) and perRank[r][i + 1] (a
  /// B of a different microbatch, on a stage of rank r) are one pair; the F
  /// comes first, as PyTorch writes "(0F3;3B1)OVERLAP_F_B" and DeepSeek's
  /// _forward_backward_chunk issues them. No action belongs to two pairs.
  /// Empty (or all lists empty) = no pairs; otherwise one list per rank.
  /// The order in perRank is unchanged by a mark, so code that walks
  /// perRank (communication, the compiler's lowering, which runs the pair's
  /// passes one after the other) ignores it; simulate() costs a pair with
  /// Problem::fbOverlap. verify() checks every mark.
  std::vector<std::vector<int>> fbPairs;

  /// True when some rank has a pair.
  bool hasFBPairs() const {
    for (const auto &list : fbPairs)
      if (!list.empty())
        return true;
    return false;
  }
  /// The number of pairs over all ranks.
  size_t numFBPairs() const {
    size_t n = 0;
    for (const auto &list : fbPairs)
      n += list.size();
    return n;
  }

  int numStages() const { return static_cast<int>(stageToRank.size()); }
  /// Stages of one route: p*V / D.
  int routeLength() const { return numStages() / directions; }
  /// The route of global stage \p stage (0 .. D-1).
  int directionOfStage(int stage) const { return stage / routeLength(); }
  /// The model stage global stage \p stage computes (0 .. L-1).
  int modelStage(int stage) const { return stage % routeLength(); }
  /// True for the first (last) stage of its route: F(s,i) takes the
  /// microbatch's input there (computes its loss there).
  bool routeStart(int stage) const { return modelStage(stage) == 0; }
  bool routeEnd(int stage) const {
    return modelStage(stage) == routeLength() - 1;
  }
};

/// The direction of microbatch \p microbatch of \p numMicrobatches under
/// \p directions routes: the first m/D microbatches take route 0, the next
/// m/D route 1 (the order data parallelism splits a batch in).
inline int directionOfMicrobatch(int microbatch, int numMicrobatches,
                                 int directions) {
  return static_cast<int>(static_cast<int64_t>(microbatch) * directions /
                          numMicrobatches);
}

/// The time (ms) an overlapped F&B pair occupies its rank: max(T_F, T_B) +
/// (1 - \p alpha) min(T_F, T_B) (Problem::fbOverlap). With alpha = 0 exactly
/// T_F + T_B.
inline double fbPairTime(double costF, double costB, double alpha) {
  return std::max(costF, costB) + (1 - alpha) * std::min(costF, costB);
}

/// One simulated action.
struct TimedAction {
  Action action;
  int rank;
  /// Start and end time (ms).
  double start, end;
};

/// Simulation options.
struct SimOptions {
  /// Reproduce the simulation the paper used for its 1F1B-I column: the
  /// dependency across the chunk boundary (last rank -> rank 0) is enforced
  /// only for the first microbatch of every group of p. The resulting timeline
  /// is NOT executable; use it only to compare with Table 5.
  bool paperInterleavedQuirk = false;
  /// When set, the duration (ms) of every action instead of the stage's
  /// T_F/T_B/T_W: replays measured durations (a trace) or samples random
  /// ones (estimateJitter). Memory still uses the costs; the ideal time and
  /// the bubble rates use these durations.
  std::function<double(const Action &)> duration;
  /// When not empty (size p): rank r starts no action before rankReady[r]
  /// (ms), e.g. the end of its previous iteration's optimizer step
  /// (simulateOptimizerSync). Times are then absolute; the spans and bubble
  /// rates still run from each rank's first action.
  std::vector<double> rankReady;
};

/// Result of simulating a schedule.
struct SimResult {
  /// End time of the last action (ms, from t = 0).
  double makespan = 0;
  /// Maximum over ranks of (end of last action - start of first action), ms.
  double stageSpan = 0;
  /// The cost in the schedule's own convention (makespan or stageSpan).
  double cost = 0;
  /// Ideal time: maximum over ranks of the rank's total compute, ms
  /// (= m (T_F + T_B + T_W) for uniform stages).
  double idealTime = 0;
  /// (cost - idealTime) / cost: the paper's bubble rate (Section 5.3).
  double bubbleRate = 0;
  /// Bubble rate under each convention.
  double makespanBubbleRate = 0, stageSpanBubbleRate = 0;
  /// Per rank: 1 - (the rank's busy time) / (end of its last action - start
  /// of its first action); the quantity zb-run measures per rank as the
  /// realized bubble rate (zbrt::computeBubble). 0 for a rank without
  /// actions. With uniform stages the busiest rank's value equals
  /// stageSpanBubbleRate only if that rank has the longest span.
  std::vector<double> rankBubbleRate;
  /// Peak activation memory per rank (unit of memB).
  std::vector<double> peakMemory;
  /// Per rank, the actions in execution order with their times.
  std::vector<std::vector<TimedAction>> timeline;
  /// False if the simulation could not finish (a dependency that is never
  /// satisfied: deadlock or missing action). Then the fields above are partial.
  bool complete = true;
};

/// The largest problems zb schedules (zb/Support/Limits.h, plan.json's
/// limits too): p ranks, V chunks per rank, m microbatches, and p * V * m
/// (the simulator keeps a few numbers per pass).
constexpr int kMaxRanks = (int)limits::kMaxRanks;
constexpr int kMaxChunks = (int)limits::kMaxChunks;
constexpr int kMaxMicrobatches = (int)limits::kMaxMicrobatches;
constexpr int64_t kMaxStageMicrobatches = limits::kMaxStageMicrobatches;

/// Checks the problem: sizes of the cost vectors (1, p or p*V), non-negative
/// costs and memory, 1 <= p <= kMaxRanks, 1 <= m <= kMaxMicrobatches,
/// 1 <= V <= kMaxChunks, p * V * m <= kMaxStageMicrobatches. Returns an
/// error naming the field.
llvm::Error validateProblem(const Problem &problem);

/// The least activation memory any schedule of \p problem with \p stageToRank
/// needs: the peak per rank when one microbatch at a time runs all its F, then
/// B immediately followed by W (Appendix B's model). Returns the worst rank's
/// peak (unit of memB) and sets *\p worstRank to that rank when not null.
/// With \p directions routes (DualPipe) the worst of the routes.
double minimumMemory(const Problem &problem, llvm::ArrayRef<int> stageToRank,
                     int *worstRank, int directions = 1);
/// The same peak for one rank.
double minimumMemoryOfRank(const Problem &problem,
                           llvm::ArrayRef<int> stageToRank, int rank,
                           int directions = 1);

/// Event-driven simulation (one serial compute stream per rank, T_comm as a
/// latency between ranks, every action as early as its dependencies and the
/// rank's order allow). Dependencies: F(s,i) after F(s-1,i); B(s,i) after
/// F(s,i) and B(s+1,i) (after W(s+1,i) for fusedBackward); W(s,i) after
/// B(s,i). Memory: F adds M_B, B adds M_W - M_B, W subtracts M_W (Appendix B,
/// counted at the start of the action).
///
/// Overlapped F&B pairs (Schedule::fbPairs) with Problem::fbOverlap alpha >
/// 0: the pair starts when its rank is free and the inputs of BOTH passes
/// are ready, and both passes end at start + fbPairTime(T_F, T_B, alpha)
/// (both TimedActions span the pair; the rank's busy time counts the pair
/// once). This is the conservative choice: neither output (F's activation,
/// B's gradient) is available before the pair ends. Memory: F's activation
/// is allocated at the pair's start, B's freed at its end (F before B in
/// perRank, so the peak is the one without the mark). With alpha = 0 the
/// pair is costed as its two passes one after the other, exactly the
/// timeline without the mark (F's output at F's own end); hence a pair's
/// F output moves from start + T_F to the pair's end as alpha leaves 0, and
/// the timeline is monotone (never later as alpha grows) only on
/// 0 < alpha <= 1. A mark that verify() would reject (index out of range,
/// not F then B of different microbatches) is ignored.
SimResult simulate(const Problem &problem, const Schedule &schedule,
                   const SimOptions &options = {});

/// Expected behaviour of a schedule when pass durations vary from pass to
/// pass (what a real machine does): Monte Carlo over `samples` simulations in
/// which every action's duration is its stage's mean cost times an
/// independent log-normal factor of mean 1 and coefficient of variation
/// Problem::cvF/cvB/cvW (sigma^2 = ln(1 + cv^2), mu = -sigma^2 / 2); T_comm
/// stays fixed. The per-rank bubble of each sample is SimResult's
/// rankBubbleRate. Deterministic for a given seed (std::mt19937_64).
struct JitterEstimate {
  int samples = 0;
  /// Mean over samples of SimResult::rankBubbleRate, per rank.
  std::vector<double> rankBubbleRate;
  /// Mean over samples of the bubble rate in the schedule's convention and
  /// of the makespan (ms).
  double bubbleRate = 0, makespan = 0;
};
/// Errors: samples < 1, cv vectors neither empty nor one value per stage,
/// a negative cv, or a schedule that cannot be simulated.
llvm::Expected<JitterEstimate> estimateJitter(const Problem &problem,
                                              const Schedule &schedule,
                                              int samples = 400,
                                              uint64_t seed = 1);

/// Checks a schedule: structure (p ranks, stageToRank, actions on their
/// stage's rank), counts (every F, B, W of every stage and microbatch exactly
/// once), per-rank order (B after F and W after B of the same stage and
/// microbatch; a fused W right after its B), deadlock freedom of the
/// cross-rank dependencies (F(s-1,i) -> F(s,i), B(s+1,i) -> B(s,i)), and the
/// memory limit. The error names the first violation. Overlapped F&B pairs
/// (Schedule::fbPairs): one list per rank, indices increasing and in range,
/// perRank[r][i] an F and perRank[r][i + 1] a B of a different microbatch,
/// no action in two pairs ("fb pair: rank r index i: ..."); deadlock
/// freedom is checked with the pairs (a pair waits for both passes'
/// inputs) when Problem::fbOverlap > 0.
llvm::Error verify(const Problem &problem, const Schedule &schedule);

//===----------------------------------------------------------------------===//
// Communication
//===----------------------------------------------------------------------===//

/// One operation of a rank's program after communication insertion.
struct CommOp {
  enum class Kind { Compute, Send, Recv };
  Kind kind;
  /// Compute: the action. Send/Recv: the action that produces the message
  /// (F(s,i) for the activation of stage s, B(s,i) for the gradient that
  /// B(s,i) sends to stage s-1).
  Action action;
  /// Send/Recv: the other rank (-1 for Compute).
  int peer = -1;
  /// True for a gradient (backward) message, false for an activation.
  bool isGradient() const { return action.kind != ActionKind::F; }
};

/// Derives every rank's program with point-to-point communication inserted:
/// when stages s and s+1 are on different ranks, the activation of F(s,i) is
/// sent right after F(s,i) and received right before F(s+1,i); the gradient
/// of B(s,i) is sent right after B(s,i) (after W(s,i) for fusedBackward) and
/// received right before B(s-1,i). Assumes a structurally valid schedule.
std::vector<std::vector<CommOp>> communicationProgram(const Schedule &schedule);

/// How point-to-point operations block (verifyCommunication).
enum class SendSemantics {
  /// Sends return at once (buffered / isend); receives block until the
  /// message has been sent.
  Buffered,
  /// Sends and receives both block until the peer reaches the matching
  /// operation (rendezvous, e.g. large MPI_Send or NCCL without grouping).
  Rendezvous,
};

struct CommOptions {
  SendSemantics sends = SendSemantics::Buffered;
  /// True: all messages from one rank to another form one FIFO channel (same
  /// tag), so the receiver must post its receives in the sender's order.
  /// False: activations and gradients use separate channels (tags), and only
  /// the order within each channel must match.
  bool oneChannelPerPeerPair = true;
};

/// One operation of a rank's program as the message checker sees it: a send
/// or receive of a message on a channel, or local work. Both the scheduler
/// (communicationProgram) and zb-lower-pipeline (the zb.send / zb.recv of
/// the lowered IR) describe their programs this way and call
/// checkMessages, the one communication checker.
struct MessageOp {
  enum class Kind { Compute, Send, Recv };
  Kind kind = Kind::Compute;
  /// Send/Recv: the other rank.
  int peer = -1;
  /// Messages match in order per (source rank, destination rank, channel):
  /// the MPI tag, or 0/1 for activations/gradients (CommOptions).
  int64_t channel = 0;
  /// What the message is: the k-th send and the k-th receive of a channel
  /// must carry the same id (e.g. an encoded Action); -1 = not checked.
  int64_t id = -1;
  /// Payload in bytes; both sides must agree; -1 = not checked.
  int64_t bytes = -1;
};

/// The first conflict checkMessages found, for the caller to word.
struct MessageConflict {
  enum class Kind {
    SendNotReceived, ///< the k-th send of a channel has no k-th receive
    ReceiveNotSent,  ///< the k-th receive of a channel has no k-th send
    Mismatch,        ///< the k-th send and receive differ in id or bytes
    Deadlock,        ///< no rank can make progress
  };
  Kind kind;
  /// SendNotReceived / ReceiveNotSent / Mismatch: the channel and the
  /// position k of the message in it; the operations as (rank, index into
  /// that rank's program), -1 where there is none.
  int source = -1, destination = -1;
  int64_t channel = 0;
  size_t position = 0;
  int sendRank = -1, receiveRank = -1;
  long sendIndex = -1, receiveIndex = -1;
  /// How many sends / receives the channel has.
  size_t numSends = 0, numReceives = 0;
  /// Deadlock: the wait-for chain from the first blocked rank, as (rank,
  /// index of the operation it is blocked in; -1 = finished); `cycle` when
  /// the chain returns to rank `cycleBackTo`, already in it.
  std::vector<std::pair<int, long>> waitFor;
  bool cycle = false;
  int cycleBackTo = -1;
};

/// The one communication checker (used by verifyCommunication and by
/// zb-lower-pipeline): per channel the k-th send matches the k-th receive
/// (same id and bytes where given), and the programs run to completion when
/// sends are buffered (receives block until the message was sent) or, with
/// SendSemantics::Rendezvous, when both sides block until the peer reaches
/// the matching operation. Returns the first conflict, or std::nullopt.
std::optional<MessageConflict>
checkMessages(const std::vector<std::vector<MessageOp>> &programs,
              SendSemantics sends);

/// Checks the communication of a schedule (after verify() succeeded): every
/// send is matched by a receive of the same message at the same position of
/// its channel (see CommOptions), and the programs of communicationProgram()
/// run to completion under the blocking semantics of \p options (no
/// deadlock). The error names the first conflicting send/recv: ranks, peer,
/// action and microbatch.
llvm::Error verifyCommunication(const Problem &problem,
                                const Schedule &schedule,
                                const CommOptions &options = {});

/// A lower bound on the stage span (CostConvention::StageSpan) of every
/// V = 1 schedule of \p problem whose rank j holds at most limits[j]
/// activation memory (empty or <= 0: unlimited), whatever the order of the
/// passes on each stage. See Bounds.cpp for the argument. Used to state how
/// far a schedule can be from optimal. Assumes every pass occupies its rank
/// alone (no overlapped F&B pairs costed with Problem::fbOverlap > 0).
double stageSpanLowerBound(const Problem &problem,
                           llvm::ArrayRef<double> limits);

/// Per-global-stage view of a problem for a given stage-to-rank mapping.
struct StageCosts {
  std::vector<double> f, b, w, comm, memB, memW;

  /// Relative tolerance of every memory-limit comparison in lib/Schedule: a
  /// value fits a limit L when value <= L + kFitTolerance * max(1, |L|), so
  /// that a limit of exactly k M_B admits k F passes despite rounding.
  static constexpr double kFitTolerance = 1e-9;

  /// Time of one \p kind pass on global stage \p stage: T_F, T_B or T_W (ms).
  double cost(ActionKind kind, int stage) const {
    return kind == ActionKind::F   ? f[stage]
           : kind == ActionKind::B ? b[stage]
                                   : w[stage];
  }
  /// Activation memory (bytes or the problem's unit) that one \p kind pass on
  /// global stage \p stage adds to its rank: F +M_B, B +M_W-M_B, W -M_W.
  double memoryDelta(ActionKind kind, int stage) const {
    return kind == ActionKind::F   ? memB[stage]
           : kind == ActionKind::B ? memW[stage] - memB[stage]
                                   : -memW[stage];
  }
  /// True when memory \p value fits \p limit (with kFitTolerance).
  static bool fits(double value, double limit) {
    return value <= limit + kFitTolerance * std::max(1.0, std::fabs(limit));
  }
  /// True when every rank's \p peak fits its entry of \p limits.
  static bool allFit(llvm::ArrayRef<double> peak,
                     llvm::ArrayRef<double> limits) {
    for (size_t r = 0; r < peak.size(); ++r)
      if (!fits(peak[r], limits[r]))
        return false;
    return true;
  }
};
/// Resolves the per-rank (or per-stage) vectors of \p problem to one value per
/// global stage; chunks of a rank get 1/V of the rank's value, or D/V of it
/// under \p directions routes (DualPipe: each of a rank's two chunks is a
/// whole model stage, the rank's share).
StageCosts resolveStageCosts(const Problem &problem,
                             llvm::ArrayRef<int> stageToRank,
                             int directions = 1);
/// The same for \p schedule's mapping and directions.
StageCosts resolveStageCosts(const Problem &problem, const Schedule &schedule);

/// The stage-to-rank mapping of interleaved schedules (stage s on rank s % p).
std::vector<int> interleavedStageToRank(int numRanks, int numChunks);
/// The V-shape mapping of ZB-V (V = 2): stage s on rank s for s < p, on rank
/// 2p-1-s otherwise.
std::vector<int> vShapeStageToRank(int numRanks);

} // namespace zb::sched

#endif // ZB_SCHEDULE_SCHEDULE_H
