//===- LowerPipeline.cpp - zb-lower-pipeline: per-rank step functions -----===//
//
// Turns the verified schedule into one step function per rank. Every action
// becomes a call of the stage function with its inputs: received tensors
// (zb.recv), tensors produced earlier on the same rank, and the per-microbatch
// saved tensors and residuals (SSA values, stash buffers once bufferized).
// Weight gradients are summed in increasing microbatch order whatever the
// schedule's W order, so every schedule gives bit-identical gradients.
//
//===----------------------------------------------------------------------===//
#include "zb/Dialect/ZB/IR/ZBBuilder.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"
#include "zb/Transforms/CostModel.h"
#include "zb/Transforms/Passes.h"
#include "zb/Transforms/PipelineInfo.h"

#include "zbrt/Symbols.h"
#include "zbrt/zbrt.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <deque>
#include <map>
#include <set>
#include <tuple>

namespace zb {
#define GEN_PASS_DEF_ZBLOWERPIPELINE
#include "zb/Transforms/Passes.h.inc"
} // namespace zb

using namespace mlir;
using namespace zb;

namespace {

/// The channel of the optimizer state in the communication check (the
/// runtime sends it on a communicator of its own, so any tag that no zb.send
/// uses: zbrt_tag values are >= 0).
constexpr int64_t kFullStateTag = -1;

/// A point-to-point message as the deadlock check sees it.
struct Message {
  bool isSend;
  int64_t peer, tag, bytes;
  std::string what; // for diagnostics, e.g. "F1.3 activation"
};

/// Checks the lowered programs with lib/Schedule's one communication
/// checker (sched::checkMessages): every send is matched by a recv with the
/// same size, paired in order per rank pair and tag (zbrt_recv receives by
/// source and tag, MPI_Probe/MPI_Recv, so messages with different tags may
/// be received in another order than sent), and the program cannot deadlock
/// when sends are non-blocking and receives block (zbrt semantics). Returns
/// an error message naming the first conflict, or "" when the check passes.
std::string checkCommunication(const std::vector<std::vector<Message>> &prog) {
  std::vector<std::vector<sched::MessageOp>> ops(prog.size());
  for (auto [r, msgs] : llvm::enumerate(prog))
    for (const Message &m : msgs) {
      sched::MessageOp op;
      op.kind = m.isSend ? sched::MessageOp::Kind::Send
                         : sched::MessageOp::Kind::Recv;
      op.peer = static_cast<int>(m.peer);
      op.channel = m.tag;
      op.bytes = m.bytes;
      ops[r].push_back(op);
    }
  std::optional<sched::MessageConflict> c =
      sched::checkMessages(ops, sched::SendSemantics::Buffered);
  if (!c)
    return "";
  using K = sched::MessageConflict::Kind;
  switch (c->kind) {
  case K::ReceiveNotSent:
    return llvm::formatv("rank {0} receives '{1}' from rank {2}, which never "
                         "sends it",
                         c->destination,
                         prog[c->receiveRank][c->receiveIndex].what, c->source);
  case K::SendNotReceived:
    return llvm::formatv("rank {0} sends '{1}' to rank {2}, which never "
                         "receives it",
                         c->source, prog[c->sendRank][c->sendIndex].what,
                         c->destination);
  case K::Mismatch: {
    const Message &sent = prog[c->sendRank][c->sendIndex];
    const Message &received = prog[c->receiveRank][c->receiveIndex];
    return llvm::formatv("message #{0} from rank {1} to rank {2}: sent "
                         "'{3}' (tag {4}, {5} bytes) but received '{6}' "
                         "(tag {7}, {8} bytes)",
                         c->position, c->source, c->destination, sent.what,
                         sent.tag, sent.bytes, received.what, received.tag,
                         received.bytes);
  }
  case K::Deadlock: {
    auto [rank, index] = c->waitFor.front();
    const Message &m = prog[rank][index];
    return llvm::formatv("deadlock: rank {0} waits forever in '{1}' (recv "
                         "from rank {2})",
                         rank, m.what, m.peer);
  }
  }
  llvm_unreachable("unknown conflict");
}

/// Lowers the schedule of one rank to its step function `zb_rank<R>_step`.
/// The phases, in order: the rank's parameters and inputs (collect), the
/// signature and argument tensors (createStep), one call per action with its
/// operands gathered and its results routed (lowerAction), then the summed
/// gradients, tied-parameter exchange and loss written out (finish).
class RankLowering {
public:
  /// \p validateBefore: the action index before which the step validates
  /// the previous optimizer step (post-validation), -1 for none.
  RankLowering(ModuleOp module, const PipelineInfo &info,
               const sched::Schedule &schedule, int64_t numMicrobatches,
               int64_t rank, int64_t validateBefore,
               std::vector<Message> &msgs)
      : module(module), info(info), schedule(schedule),
        numMicrobatches(numMicrobatches), rank(rank),
        validateBefore(validateBefore), msgs(msgs), b(module.getContext()),
        loc(module.getLoc()) {}

  LogicalResult lower() {
    collect();
    if (failed(createStep()))
      return failure();
    const auto &actions = schedule.perRank[rank];
    for (const sched::Action &a : actions)
      if (a.kind == sched::ActionKind::W)
        lastW[a.stage] = a.microbatch;
    for (auto [i, a] : llvm::enumerate(actions)) {
      if (static_cast<int64_t>(i) == validateBefore)
        validateOptimizer();
      if (failed(lowerAction(a)))
        return failure();
    }
    if (validateBefore == static_cast<int64_t>(actions.size()))
      validateOptimizer();
    if (failed(finish()))
      return failure();
    recordSends();
    return success();
  }

private:
  /// Keys of the per-microbatch values: (kind, value id, microbatch).
  enum ValueKind { Act = 0, Grad = 1, Saved = 2, Residual = 3 };
  /// A gradient B(s, mb) sends under a fused backward, held until W(s, mb).
  struct DeferredSend {
    Value value;
    int64_t to, tag;
    std::string what;
  };

  ModuleOp module;
  const PipelineInfo &info;
  const sched::Schedule &schedule;
  int64_t numMicrobatches, rank, validateBefore;
  std::vector<Message> &msgs;
  OpBuilder b;
  Location loc;

  // collect(): the rank's parameters and batch inputs; a tied parameter
  // (several stages) has a copy on every rank that runs one of its stages.
  SmallVector<int64_t> paramIdx, inputIdx;
  llvm::DenseMap<int64_t, SmallVector<int64_t>> stagesOfParam;
  // The gradient parts of each parameter, (zb.part, stage) in the order they
  // are added: one per stage holding it (part -1), or, for a parameter with
  // several contributions, one per contribution (see splitGradientParts).
  llvm::DenseMap<int64_t, SmallVector<std::pair<int64_t, int64_t>>> partsOf;
  int64_t numArgs = 0; // of the original function, for the exchange tags
  bool hasLoss = false;
  // createStep(): the entry block and the tensors of the arguments.
  Block *entry = nullptr;
  llvm::DenseMap<int64_t, Value> paramT, inputT;
  std::map<std::pair<int64_t, int64_t>, Value> slices;
  // lowerAction(): values per microbatch, in-order loss and weight-gradient
  // sums, deferred sends.
  std::map<std::tuple<int, int64_t, int64_t>, Value> env;
  std::map<int64_t, Value> pendingLoss;
  // The microbatches whose loss this rank computes (its route ends), in
  // the order they are summed, and the next one to add.
  SmallVector<int64_t> lossOrder;
  size_t nextLoss = 0;
  Value lossAcc;
  std::map<int64_t,
           std::map<int64_t, SmallVector<std::tuple<int64_t, int64_t, Value>>>>
      pendingGrads; // stage -> mb -> (param, part, grad)
  std::map<int64_t, int64_t> nextGrad;
  std::map<std::pair<int64_t, int64_t>, SmallVector<DeferredSend>> deferred;
  std::map<std::tuple<int64_t, int64_t, int64_t>, Value>
      gradAcc; // (param, stage, part)
  // Parameters whose gradient is already written (announceGradients).
  llvm::DenseSet<int64_t> written;
  // The microbatch of each stage's last W on this rank, and the (stage,
  // parameter) sums completed group by group inside that W (lowerLastW).
  std::map<int64_t, int64_t> lastW;
  std::set<std::pair<int64_t, int64_t>> finalInStage;

  int64_t rankOf(int64_t stage) const { return schedule.stageToRank[stage]; }
  int64_t lastStage() const { return info.numStages - 1; }
  /// Microbatches of one route (DualPipe: half of them) and the first and
  /// one-past-last microbatch of stage `s`'s route.
  int64_t perRoute() const { return numMicrobatches / schedule.directions; }
  int64_t firstMicrobatch(int64_t s) const {
    return schedule.directionOfStage(static_cast<int>(s)) * perRoute();
  }
  int64_t endMicrobatch(int64_t s) const {
    return firstMicrobatch(s) + perRoute();
  }
  /// The next microbatch whose weight gradients stage `s` adds.
  int64_t &nextGradOf(int64_t s) {
    return nextGrad.try_emplace(s, firstMicrobatch(s)).first->second;
  }
  /// True when stage `s`'s sums of parameter `p`'s gradient parts cover
  /// all microbatches of the step.
  bool finalIn(int64_t s, int64_t p) {
    return nextGradOf(s) == endMicrobatch(s) || finalInStage.count({s, p});
  }
  /// The stage the activation (gradient) of stage `s` goes to, or -1 at the
  /// end (start) of its route.
  int64_t nextOnRoute(int64_t s, bool isAct) const {
    if (isAct)
      return schedule.routeEnd(static_cast<int>(s)) ? -1 : s + 1;
    return schedule.routeStart(static_cast<int>(s)) ? -1 : s - 1;
  }
  func::FuncOp lookup(StringRef name) {
    return module.lookupSymbol<func::FuncOp>(name);
  }
  static StringRef role(DictionaryAttr attrs) {
    auto r = attrs ? attrs.getAs<RoleAttr>(kRoleAttr) : nullptr;
    return r ? stringifyRole(r.getValue()) : StringRef();
  }
  static int64_t key(DictionaryAttr attrs) {
    if (auto v = attrs.getAs<IntegerAttr>("zb.value"))
      return v.getInt();
    if (auto v = attrs.getAs<IntegerAttr>("zb.index"))
      return v.getInt();
    return -1;
  }
  RankedTensorType typeOf(int64_t index) const {
    for (const ModelValueInfo &v : info.params)
      if (v.index == index)
        return v.type;
    for (const ModelValueInfo &v : info.inputs)
      if (v.index == index)
        return v.type;
    return {};
  }
  Value addInOrder(Value acc, Value v) {
    return acc ? AddOp::create(b, loc, v.getType(), acc, v).getResult() : v;
  }
  /// A zb.send, recorded for the communication check. Booleans (masks
  /// computed on one stage and read on the next) travel as i32 0/1.
  void send(Value v, int64_t to, int64_t tag, std::string what) {
    auto t = llvm::cast<RankedTensorType>(v.getType());
    if (t.getElementType().isInteger(1))
      v = ZBBuilder(b, loc).cast(v, b.getI32Type());
    SendOp::create(b, loc, v, to, tag);
    msgs.push_back({true, to, tag, tensorBytes(v.getType()), std::move(what)});
  }
  /// A zb.recv, recorded for the communication check.
  Value recv(Type ty, int64_t from, int64_t tag, std::string what) {
    auto t = llvm::cast<RankedTensorType>(ty);
    if (t.getElementType().isInteger(1)) {
      Value i = recv(t.clone(b.getI32Type()), from, tag, std::move(what));
      ZBBuilder e(b, loc);
      Value f = e.cast(i, b.getF32Type());
      return e.compare("ne", f, e.splat(f, 0.0));
    }
    msgs.push_back({false, from, tag, tensorBytes(ty), std::move(what)});
    return RecvOp::create(b, loc, ty, from, tag);
  }
  void mark(StringRef fname, int kind, int64_t stage, int64_t mb) {
    Value k = arith::ConstantIntOp::create(b, loc, kind, 32);
    Value s = arith::ConstantIntOp::create(b, loc, stage, 32);
    Value m = arith::ConstantIntOp::create(b, loc, mb, 32);
    func::CallOp::create(b, loc, fname, TypeRange{}, ValueRange{k, s, m});
  }
  /// Post-validation: the call that waits for the previous step's fully
  /// reduced optimizer state and validates (zbrt_validate_optimizer). For
  /// the communication check it receives that state from the last rank,
  /// which sent it at the end of the previous step: modelled as a send at
  /// the start of the last rank's program (kFullStateTag, 16 bytes).
  void validateOptimizer() {
    declare(zbrt::symbols::ValidateOptimizer, {});
    func::CallOp::create(b, loc, zbrt::symbols::ValidateOptimizer,
                         TypeRange{}, ValueRange{});
    int64_t last = static_cast<int64_t>(schedule.perRank.size()) - 1;
    if (rank != last)
      msgs.push_back({false, last, kFullStateTag, 16,
                      "the previous step's full optimizer state"});
  }
  /// The step's zbrt_send messages in program order, as checked (plan.json
  /// ranks[r].sends: every channel's order, which the CUDA runtime's NCCL
  /// transport needs). The full-state messages (kFullStateTag) go elsewhere.
  void recordSends() {
    SmallVector<Attribute> sends;
    for (const Message &m : msgs)
      if (m.isSend && m.tag >= 0)
        sends.push_back(b.getDenseI64ArrayAttr({m.peer, m.tag, m.bytes}));
    entry->getParentOp()->setAttr(kChannelOrderAttr, b.getArrayAttr(sends));
  }
  void declare(StringRef fname, TypeRange args) {
    if (module.lookupSymbol<func::FuncOp>(fname))
      return;
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(module.getBody());
    auto f = func::FuncOp::create(b, loc, fname, b.getFunctionType(args, {}));
    f.setPrivate();
  }
  InFlightDiagnostic missingGradient(int64_t p, int64_t s) {
    return module.emitError("rank ")
           << rank << " never computes the gradient of parameter #" << p
           << " in stage " << s;
  }
  static std::string tiedWhat(int64_t p, int64_t s) {
    return llvm::formatv("tied gradient of parameter #{0} from stage {1}", p, s)
        .str();
  }
  /// The tag of the j-th gradient part of `param` that `stage` sends.
  int64_t tiedTag(int64_t param, int64_t stage, int64_t j) const {
    return zbrt_tag(0, stage, numMicrobatches + param + j * numArgs);
  }

  void collect();
  LogicalResult createStep();
  Value sliceOf(int64_t input, int64_t mb);
  LogicalResult gatherOperands(const sched::Action &a, func::FuncOp callee,
                               SmallVectorImpl<Value> &operands);
  LogicalResult routeResults(const sched::Action &a, func::FuncOp callee,
                             func::CallOp call);
  LogicalResult lowerAction(const sched::Action &a);
  LogicalResult weightGroups(func::FuncOp w,
                             SmallVectorImpl<func::FuncOp> &groups);
  LogicalResult lowerLastW(const sched::Action &a,
                           ArrayRef<func::FuncOp> groups);
  void completeW(const sched::Action &a);
  Value sumOfParts(int64_t p);
  void writeGradient(int64_t p, Value g);
  void announceGradients();
  LogicalResult exchangeTiedGradients();
  LogicalResult finish();
};

static std::string actionName(const sched::Action &a, StringRef what) {
  return llvm::formatv("{0}{1}.{2} {3}", sched::kindName(a.kind), a.stage,
                       a.microbatch, what)
      .str();
}

void RankLowering::collect() {
  auto onRank = [&](ArrayRef<int64_t> stages) {
    return llvm::any_of(stages, [&](int64_t s) { return rankOf(s) == rank; });
  };
  for (const ModelValueInfo &p : info.params) {
    stagesOfParam[p.index] = p.stages;
    numArgs = std::max(numArgs, p.index + 1);
    if (onRank(p.stages))
      paramIdx.push_back(p.index);
    SmallVector<std::pair<int64_t, int64_t>> &parts = partsOf[p.index];
    for (int64_t s : p.stages) {
      func::FuncOp w = lookup(info.stages[s].backwardWeight);
      for (unsigned i = 0; w && i < w.getNumResults(); ++i) {
        DictionaryAttr attrs = w.getResultAttrDict(i);
        if (role(attrs) != "param_grad" || key(attrs) != p.index)
          continue;
        auto part = attrs.getAs<IntegerAttr>("zb.part");
        parts.push_back({part ? part.getInt() : -1, s});
      }
    }
    // Contribution order; stage order for per-stage sums (a stable sort).
    llvm::stable_sort(parts, [](auto &x, auto &y) { return x.first < y.first; });
  }
  for (const ModelValueInfo &in : info.inputs)
    numArgs = std::max(numArgs, in.index + 1);
  for (const ModelValueInfo &in : info.inputs)
    if (onRank(in.stages))
      inputIdx.push_back(in.index);
  for (int64_t s = 0; s < info.numStages; ++s)
    if (schedule.routeEnd(static_cast<int>(s)) && rankOf(s) == rank)
      for (int64_t mb = firstMicrobatch(s); mb < endMicrobatch(s); ++mb)
        lossOrder.push_back(mb);
  llvm::sort(lossOrder);
  hasLoss = !lossOrder.empty();
}

/// The step function: params, grads, inputs ([M] + microbatch shape), loss;
/// the trace markers' declarations and tensors of the arguments.
LogicalResult RankLowering::createStep() {
  MLIRContext *ctx = module.getContext();
  SmallVector<Type> argTypes;
  SmallVector<Attribute> argRoles;
  auto memrefOf = [](RankedTensorType t) {
    return MemRefType::get(t.getShape(), t.getElementType());
  };
  for (RankArgKind kind : {RankArgKind::param, RankArgKind::grad})
    for (int64_t p : paramIdx) {
      argTypes.push_back(memrefOf(typeOf(p)));
      argRoles.push_back(RankArgAttr::get(ctx, kind, p));
    }
  for (int64_t i : inputIdx) {
    RankedTensorType t = typeOf(i);
    SmallVector<int64_t> shape{numMicrobatches};
    shape.append(t.getShape().begin(), t.getShape().end());
    argTypes.push_back(MemRefType::get(shape, t.getElementType()));
    argRoles.push_back(RankArgAttr::get(ctx, RankArgKind::input, i));
  }
  if (hasLoss) {
    auto fwd = lookup(info.stages[lastStage()].forward);
    RankedTensorType lossTy;
    for (unsigned i = 0; i < fwd.getNumResults(); ++i)
      if (role(fwd.getResultAttrDict(i)) == "loss")
        lossTy = llvm::cast<RankedTensorType>(fwd.getResultTypes()[i]);
    if (!lossTy)
      return fwd.emitError("last stage's forward function returns no loss");
    argTypes.push_back(MemRefType::get({}, lossTy.getElementType()));
    argRoles.push_back(RankArgAttr::get(ctx, RankArgKind::loss, -1));
  }

  b.setInsertionPointToEnd(module.getBody());
  std::string name = llvm::formatv("zb_rank{0}_step", rank);
  auto step =
      func::FuncOp::create(b, loc, name, b.getFunctionType(argTypes, {}));
  step->setAttr(kStepRankAttr, b.getI64IntegerAttr(rank));
  step->setAttr(kRankArgsAttr, b.getArrayAttr(argRoles));
  step->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  entry = step.addEntryBlock();
  b.setInsertionPointToStart(entry);

  // Runtime trace markers.
  auto i32 = b.getI32Type();
  declare(zbrt::symbols::ActionBegin, {i32, i32, i32});
  declare(zbrt::symbols::ActionEnd, {i32, i32, i32});

  // Tensors of the arguments (grads are outputs).
  unsigned argNo = 0;
  for (int64_t p : paramIdx)
    paramT[p] = bufferization::ToTensorOp::create(
        b, loc, typeOf(p), entry->getArgument(argNo++), /*restrict=*/true);
  argNo += paramIdx.size();
  for (int64_t i : inputIdx) {
    Value m = entry->getArgument(argNo++);
    auto mt = llvm::cast<MemRefType>(m.getType());
    inputT[i] = bufferization::ToTensorOp::create(
        b, loc, RankedTensorType::get(mt.getShape(), mt.getElementType()), m,
        /*restrict=*/true);
  }
  return success();
}

/// Microbatch `mb` of batch input `input` (one extract_slice, reused).
Value RankLowering::sliceOf(int64_t input, int64_t mb) {
  auto it = slices.find({input, mb});
  if (it != slices.end())
    return it->second;
  RankedTensorType t = typeOf(input);
  SmallVector<OpFoldResult> offsets{b.getIndexAttr(mb)};
  SmallVector<OpFoldResult> sizes{b.getIndexAttr(1)};
  SmallVector<OpFoldResult> strides{b.getIndexAttr(1)};
  for (int64_t d : t.getShape()) {
    offsets.push_back(b.getIndexAttr(0));
    sizes.push_back(b.getIndexAttr(d));
    strides.push_back(b.getIndexAttr(1));
  }
  Value v = tensor::ExtractSliceOp::create(b, loc, t, inputT[input], offsets,
                                           sizes, strides);
  slices[{input, mb}] = v;
  return v;
}

/// The operands of the call of action `a`: parameters, microbatch slices,
/// tensors of this rank's earlier actions, received tensors.
LogicalResult RankLowering::gatherOperands(const sched::Action &a,
                                           func::FuncOp callee,
                                           SmallVectorImpl<Value> &operands) {
  int64_t s = a.stage, mb = a.microbatch;
  for (unsigned i = 0; i < callee.getNumArguments(); ++i) {
    DictionaryAttr attrs = callee.getArgAttrDict(i);
    StringRef r = role(attrs);
    int64_t k = key(attrs);
    Type ty = callee.getArgumentTypes()[i];
    Value v;
    if (r == "param") {
      v = paramT.lookup(k);
    } else if (r == "batch") {
      v = sliceOf(k, mb);
    } else if (r == "act" || r == "grad") {
      bool isAct = r == "act";
      int kind = isAct ? Act : Grad;
      auto it = env.find({kind, k, mb});
      if (it != env.end()) {
        v = it->second;
      } else {
        int64_t from = nextOnRoute(s, !isAct);
        if (from < 0)
          return callee.emitError("argument #")
                 << i << " expects a tensor from the stage "
                 << (isAct ? "before " : "after ") << s
                 << " on microbatch " << mb << "'s route, which has none";
        if (rankOf(from) == rank)
          return module.emitError("schedule runs ")
                 << actionName(a, "")
                 << " before the action producing its input";
        v = recv(ty, rankOf(from), zbrt_tag(isAct ? 0 : 1, from, mb),
                 actionName(a, isAct ? "activation" : "gradient"));
        env[{kind, k, mb}] = v;
      }
    } else if (r == "saved" || r == "residual") {
      auto it = env.find({r == "saved" ? Saved : Residual, k, mb});
      if (it == env.end())
        return module.emitError("schedule runs ")
               << actionName(a, "") << " before the action producing its " << r
               << " tensors";
      v = it->second;
    }
    if (!v)
      return callee.emitError("argument #")
             << i << " has an unknown role '" << r << "'";
    operands.push_back(v);
  }
  return success();
}

/// Where each result of action `a` goes: the next/previous stage (kept or
/// sent), the stash (saved, residual), the loss or weight-gradient sums.
LogicalResult RankLowering::routeResults(const sched::Action &a,
                                         func::FuncOp callee,
                                         func::CallOp call) {
  int64_t s = a.stage, mb = a.microbatch;
  for (unsigned i = 0; i < callee.getNumResults(); ++i) {
    DictionaryAttr attrs = callee.getResultAttrDict(i);
    StringRef r = role(attrs);
    int64_t k = key(attrs);
    Value v = call.getResult(i);
    if (r == "act" || r == "grad") {
      bool isAct = r == "act";
      int64_t to = nextOnRoute(s, isAct);
      if (to < 0)
        return callee.emitError("result #")
               << i << " goes to the stage " << (isAct ? "after " : "before ")
               << s << " on microbatch " << mb
               << "'s route, which has none";
      if (rankOf(to) == rank) {
        env[{isAct ? Act : Grad, k, mb}] = v;
        continue;
      }
      int64_t tag = zbrt_tag(isAct ? 0 : 1, s, mb);
      std::string what = actionName(a, isAct ? "activation" : "gradient");
      // Fused backward (1F1B, GPipe, 1F1B-I: B and W are one backward
      // pass): the gradient is sent only after W(s, mb), as a framework
      // without the B/W split sends it after the whole backward.
      if (!isAct && schedule.fusedBackward)
        deferred[{s, mb}].push_back({v, rankOf(to), tag, what});
      else
        send(v, rankOf(to), tag, what);
    } else if (r == "saved") {
      env[{Saved, k, mb}] = v;
    } else if (r == "residual") {
      env[{Residual, k, mb}] = v;
    } else if (r == "loss") {
      pendingLoss[mb] = v;
      while (nextLoss < lossOrder.size() &&
             pendingLoss.count(lossOrder[nextLoss])) {
        lossAcc = addInOrder(lossAcc, pendingLoss[lossOrder[nextLoss]]);
        pendingLoss.erase(lossOrder[nextLoss++]);
      }
    } else if (r == "param_grad") {
      auto part = attrs.getAs<IntegerAttr>("zb.part");
      pendingGrads[s][mb].push_back({k, part ? part.getInt() : -1, v});
    } else {
      return callee.emitError("result #")
             << i << " has an unknown role '" << r << "'";
    }
  }
  return success();
}

LogicalResult RankLowering::lowerAction(const sched::Action &a) {
  const StageInfo &st = info.stages[a.stage];
  func::FuncOp callee;
  int kindCode = 0;
  switch (a.kind) {
  case sched::ActionKind::F:
    callee = lookup(st.forward);
    kindCode = 0;
    break;
  case sched::ActionKind::B:
    callee = lookup(st.backwardInput);
    kindCode = 1;
    break;
  case sched::ActionKind::W:
    callee = lookup(st.backwardWeight);
    kindCode = 2;
    break;
  }
  if (!callee)
    return module.emitError("stage function of action ")
           << actionName(a, "") << " not found";
  if (a.kind == sched::ActionKind::W) {
    auto last = lastW.find(a.stage);
    SmallVector<func::FuncOp> groups;
    if (last != lastW.end() && last->second == a.microbatch) {
      if (failed(weightGroups(callee, groups)))
        return failure();
      if (groups.size() > 1)
        return lowerLastW(a, groups);
    }
  }
  SmallVector<Value> operands;
  if (failed(gatherOperands(a, callee, operands)))
    return failure();
  mark(zbrt::symbols::ActionBegin, kindCode, a.stage, a.microbatch);
  auto call = func::CallOp::create(b, loc, callee, operands);
  mark(zbrt::symbols::ActionEnd, kindCode, a.stage, a.microbatch);
  if (failed(routeResults(a, callee, call)))
    return failure();
  if (a.kind == sched::ActionKind::W)
    completeW(a);
  return success();
}

/// The functions of the groups of `w`'s gradients (zb.weight_clusters,
/// zb-cluster-weight-gradients), empty when `w` is not split.
LogicalResult RankLowering::weightGroups(func::FuncOp w,
                                         SmallVectorImpl<func::FuncOp> &groups) {
  auto names = w->getAttrOfType<ArrayAttr>(kWeightClustersAttr);
  if (!names)
    return success();
  for (auto name : names.getAsRange<FlatSymbolRefAttr>()) {
    func::FuncOp g = lookup(name.getValue());
    if (!g)
      return w.emitError("zb.weight_clusters names @")
             << name.getValue() << ", which the module does not define";
    groups.push_back(g);
  }
  return success();
}

/// The stage's last W of the step on this rank, split by parameter (the
/// Zero Bubble paper, Appendix A): the groups of the W function one by one,
/// each followed by its gradients' sums over the step's microbatches (in
/// microbatch order, as completeW adds them) and the announcement of the
/// gradients now final, so that their all-reduce across data-parallel
/// pipelines overlaps the rest of this W. One trace event for the whole W.
LogicalResult RankLowering::lowerLastW(const sched::Action &a,
                                       ArrayRef<func::FuncOp> groups) {
  int64_t s = a.stage;
  int64_t first = nextGradOf(s);
  mark(zbrt::symbols::ActionBegin, 2, s, a.microbatch);
  for (func::FuncOp g : groups) {
    SmallVector<Value> operands;
    if (failed(gatherOperands(a, g, operands)))
      return failure();
    auto call = func::CallOp::create(b, loc, g, operands);
    if (failed(routeResults(a, g, call)))
      return failure();
    for (unsigned i = 0; i < g.getNumResults(); ++i) {
      DictionaryAttr attrs = g.getResultAttrDict(i);
      int64_t p = key(attrs);
      auto partAttr = attrs.getAs<IntegerAttr>("zb.part");
      int64_t part = partAttr ? partAttr.getInt() : -1;
      Value &acc = gradAcc[{p, s, part}];
      for (int64_t mb = first; mb < endMicrobatch(s); ++mb) {
        Value v;
        for (auto [q, qPart, grad] : pendingGrads[s][mb])
          if (q == p && qPart == part)
            v = grad;
        if (!v)
          return module.emitError("rank ")
                 << rank << ": the last W of stage " << s << " (microbatch "
                 << a.microbatch << ") runs before W of microbatch " << mb;
        acc = addInOrder(acc, v);
      }
      finalInStage.insert({s, p});
    }
    announceGradients();
  }
  mark(zbrt::symbols::ActionEnd, 2, s, a.microbatch);
  for (int64_t mb = first; mb < endMicrobatch(s); ++mb)
    pendingGrads[s].erase(mb);
  nextGradOf(s) = endMicrobatch(s);
  completeW(a);
  return success();
}

/// After W(s, mb): the deferred gradient sends of B(s, mb), then the weight
/// gradients of the microbatches now complete, summed in microbatch order.
void RankLowering::completeW(const sched::Action &a) {
  int64_t s = a.stage;
  auto it = deferred.find({s, a.microbatch});
  if (it != deferred.end()) {
    for (const DeferredSend &d : it->second)
      send(d.value, d.to, d.tag, d.what);
    deferred.erase(it);
  }
  int64_t &next = nextGradOf(s);
  auto &pending = pendingGrads[s];
  while (pending.count(next)) {
    for (auto [p, part, g] : pending[next])
      gradAcc[{p, s, part}] = addInOrder(gradAcc[{p, s, part}], g);
    pending.erase(next++);
  }
  if (next == endMicrobatch(s))
    announceGradients();
}

/// The gradient of `p` on this rank from its parts in order (the copies of
/// a tied parameter get the same sum on every rank): null when a part is
/// missing or on another rank.
Value RankLowering::sumOfParts(int64_t p) {
  Value g;
  for (auto [part, s] : partsOf[p]) {
    Value v = rankOf(s) == rank ? gradAcc[{p, s, part}] : Value();
    if (!v)
      return Value();
    g = addInOrder(g, v);
  }
  return g;
}

/// Writes the final gradient `g` of `p` into its grad argument.
void RankLowering::writeGradient(int64_t p, Value g) {
  auto it = llvm::find(paramIdx, p);
  bufferization::MaterializeInDestinationOp::create(
      b, loc, TypeRange{}, g,
      entry->getArgument(paramIdx.size() + (it - paramIdx.begin())),
      /*restrict=*/true, /*writable=*/true);
  written.insert(p);
}

/// The Zero Bubble paper's Appendix A: every parameter held by this rank
/// alone whose stages have summed all microbatches gets its gradient
/// written now, followed by zbrt_gradients_ready(k, n) for each run of
/// consecutive gradient arguments k .. k+n-1 (positions among the step's
/// gradient arguments) that became final here, so that the all-reduce of
/// that bucket across data-parallel pipelines starts while this rank's
/// later passes still run (e.g. a V schedule's other chunk). Tied
/// parameters with copies on other ranks wait for the exchange at the end
/// of the step.
void RankLowering::announceGradients() {
  SmallVector<int64_t> ready; // gradient argument positions, increasing
  for (auto [k, p] : llvm::enumerate(paramIdx)) {
    if (written.contains(p) ||
        llvm::any_of(stagesOfParam[p],
                     [&](int64_t s) {
                       return rankOf(s) != rank || !finalIn(s, p);
                     }))
      continue;
    Value g = sumOfParts(p);
    if (!g)
      continue;
    writeGradient(p, g);
    ready.push_back(static_cast<int64_t>(k));
  }
  for (size_t i = 0; i < ready.size();) {
    size_t j = i + 1;
    while (j < ready.size() && ready[j] == ready[j - 1] + 1)
      ++j;
    declare(zbrt::symbols::GradientsReady, {b.getI32Type(), b.getI32Type()});
    Value first = arith::ConstantIntOp::create(b, loc, ready[i], 32);
    Value count =
        arith::ConstantIntOp::create(b, loc, static_cast<int64_t>(j - i), 32);
    func::CallOp::create(b, loc, zbrt::symbols::GradientsReady, TypeRange{},
                         ValueRange{first, count});
    i = j;
  }
}

/// Gradient parts (partsOf): every rank holding a copy of a parameter
/// sends the parts of its stages (each summed over the step's microbatches)
/// to the other holders, then all holders add the parts in order (a tied
/// parameter's per-stage sums in increasing stage order; the contributions
/// of a parameter with several uses in contribution order, also on one
/// rank), so the copies get bit-identical gradients (and optimizer
/// updates) whatever the partition. Sends do not block (zbrt), so sending
/// everything before receiving cannot deadlock; the order (parameter,
/// part) is the same on both sides. The sums are written into the grad
/// arguments.
LogicalResult RankLowering::exchangeTiedGradients() {
  // The j-th part of `param` computed by `stage` (for its tag).
  auto indexInStage = [&](int64_t p, size_t k) {
    int64_t j = 0;
    for (size_t l = 0; l < k; ++l)
      j += partsOf[p][l].second == partsOf[p][k].second;
    return j;
  };
  for (int64_t p : paramIdx) {
    const SmallVector<int64_t> &stages = stagesOfParam[p];
    for (auto [k, ps] : llvm::enumerate(partsOf[p])) {
      auto [part, s] = ps;
      if (rankOf(s) != rank)
        continue;
      Value g = gradAcc[{p, s, part}];
      if (!g)
        return missingGradient(p, s);
      SmallVector<int64_t> peers;
      for (int64_t t : stages)
        if (rankOf(t) != rank && !llvm::is_contained(peers, rankOf(t)))
          peers.push_back(rankOf(t));
      for (int64_t q : peers)
        send(g, q, tiedTag(p, s, indexInStage(p, k)), tiedWhat(p, s));
    }
  }
  for (int64_t p : paramIdx) {
    if (written.contains(p))
      continue;
    Value g;
    for (auto [k, ps] : llvm::enumerate(partsOf[p])) {
      auto [part, s] = ps;
      Value v = gradAcc[{p, s, part}];
      if (rankOf(s) != rank)
        v = recv(typeOf(p), rankOf(s), tiedTag(p, s, indexInStage(p, k)),
                 tiedWhat(p, s));
      if (!v)
        return missingGradient(p, s);
      g = addInOrder(g, v);
    }
    if (!g)
      return missingGradient(p, stagesOfParam[p].front());
    writeGradient(p, g);
  }
  return success();
}

/// The step's tail: every microbatch complete, gradients and loss written.
LogicalResult RankLowering::finish() {
  if (!deferred.empty())
    return module.emitError("rank ")
           << rank << ": a fused-backward schedule has B(stage "
           << deferred.begin()->first.first << ", microbatch "
           << deferred.begin()->first.second << ") without its W";
  if (!pendingLoss.empty() ||
      llvm::any_of(pendingGrads, [](auto &kv) { return !kv.second.empty(); }))
    return module.emitError("rank ")
           << rank
           << ": the schedule misses microbatches (loss or weight "
              "gradients could not be summed in order)";
  if (failed(exchangeTiedGradients()))
    return failure();
  if (hasLoss) {
    if (!lossAcc)
      return module.emitError("rank ") << rank << " computes no loss";
    bufferization::MaterializeInDestinationOp::create(
        b, loc, TypeRange{}, lossAcc, entry->getArguments().back(),
        /*restrict=*/true, /*writable=*/true);
  }
  func::ReturnOp::create(b, loc);
  return success();
}

struct ZBLowerPipelinePass
    : public zb::impl::ZBLowerPipelineBase<ZBLowerPipelinePass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<PipelineInfo> info = PipelineInfo::read(module);
    if (failed(info))
      return signalPassFailure();
    int64_t microbatches = 0;
    FailureOr<sched::Schedule> schedule = readSchedule(module, &microbatches);
    if (failed(schedule))
      return signalPassFailure();
    // DualPipe: every model stage once per direction (global stage d*L+s
    // runs model stage s; a parameter's copies are tied).
    if (schedule->directions > 1)
      *info = info->withRoutes(schedule->directions);
    if (static_cast<int64_t>(schedule->stageToRank.size()) != info->numStages) {
      module.emitError("zb.schedule has ")
          << schedule->stageToRank.size() << " stages, zb.pipeline has "
          << info->numStages;
      return signalPassFailure();
    }
    std::vector<std::vector<Message>> messages(schedule->perRank.size());
    SmallVector<int64_t> validate = readValidatePositions(module);
    int64_t numRanks = static_cast<int64_t>(schedule->perRank.size());
    // The last rank's full-state sends of the previous step (see
    // RankLowering::validateOptimizer).
    if (!validate.empty())
      for (int64_t r = 0; r + 1 < numRanks; ++r)
        messages[numRanks - 1].push_back(
            {true, r, kFullStateTag, 16,
             "the previous step's full optimizer state"});
    for (int64_t r = 0; r < numRanks; ++r) {
      RankLowering lowering(module, *info, *schedule, microbatches, r,
                            validate.empty() ? -1 : validate[r],
                            messages[r]);
      if (failed(lowering.lower()))
        return signalPassFailure();
    }
    std::string err = checkCommunication(messages);
    if (!err.empty()) {
      module.emitError("zb-lower-pipeline: communication check failed: ")
          << err;
      return signalPassFailure();
    }
  }
};
} // namespace
