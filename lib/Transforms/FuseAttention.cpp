//===- FuseAttention.cpp - zb-fuse-attention ------------------------------===//
//
// Attention as the exporters write it (torch.onnx.export of a Hugging Face
// model, of torch's scaled_dot_product_attention, of a hand-written GPT) is
// a chain of zb ops: batch_matmul(q, k^T), a scale, an additive mask, a
// causal mask, softmax, batch_matmul(P, v). This pass replaces each such
// chain by one zb.attention, whose gradient (zb.attention_grad) recomputes
// the probabilities from the saved log-sum-exp (FlashAttention, Dao 2023):
// the Tq x Tk tensors are then neither kept from F to B nor, once a fused
// kernel lowers the op, written to memory. The chain's shape is in
// Passes.td; matching is by use-def walking from each zb.softmax.
//
//===----------------------------------------------------------------------===//
#include "zb/Dialect/ZB/IR/ZBBuilder.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"
#include "zb/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <cmath>

namespace zb {
#define GEN_PASS_DEF_ZBFUSEATTENTION
#include "zb/Transforms/Passes.h.inc"
} // namespace zb

using namespace mlir;
using namespace zb;

namespace {

/// The value of a splat float constant, looking through casts, reshapes
/// and broadcasts of it (an exported `/ sqrt(d)` of a 0-d constant).
std::optional<double> splatValue(Value v) {
  Operation *def = v.getDefiningOp();
  while (def && isa<CastOp, ReshapeOp, BroadcastInDimOp>(def))
    def = def->getOperand(0).getDefiningOp();
  auto c = dyn_cast_or_null<ConstantOp>(def);
  if (!c)
    return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  if (!dense || !dense.isSplat() ||
      !isa<FloatType>(dense.getElementType()))
    return std::nullopt;
  return dense.getSplatValue<APFloat>().convertToDouble();
}

/// A fill that makes a masked score 0 after the softmax whatever the
/// others (exp(fill - max) underflows): -inf, or finfo.min of float32 and
/// bfloat16 (-3.4e38), or anything <= -1e9.
bool hidesKey(double fill) { return fill <= -1e9; }

/// The last two dimensions of a ranked tensor type.
std::pair<int64_t, int64_t> lastTwoDims(Type type) {
  auto t = cast<RankedTensorType>(type);
  return {t.getDimSize(t.getRank() - 2), t.getDimSize(t.getRank() - 1)};
}

/// The constant `mask` comes from when it is one viewed through float
/// casts, reshapes and broadcasts that keep its last two dimensions (those
/// of the scores, [tq, tk]), else null.
ConstantOp maskConstant(Value mask, std::pair<int64_t, int64_t> scores) {
  Value v = mask;
  while (Operation *def = v.getDefiningOp()) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || t.getRank() < 2 || lastTwoDims(t) != scores)
      return ConstantOp();
    if (auto c = dyn_cast<ConstantOp>(def))
      return c;
    if (auto bc = dyn_cast<BroadcastInDimOp>(def)) {
      ArrayRef<int64_t> dims = bc.getDims();
      int64_t r = bc.getType().getRank();
      if (dims.size() < 2 || dims[dims.size() - 2] != r - 2 ||
          dims.back() != r - 1)
        return ConstantOp();
    } else if (auto cast = dyn_cast<CastOp>(def)) {
      if (!isa<FloatType>(getElementTypeOrSelf(cast.getOperand().getType())))
        return ConstantOp();
    } else if (!isa<ReshapeOp>(def)) {
      return ConstantOp();
    }
    v = def->getOperand(0);
  }
  return ConstantOp();
}

/// True when the constant `c` [..., tq, tk] holds the causal mask in every
/// [tq, tk] slice: 0 where key <= query, a fill that hides the key
/// (hidesKey) after it. The exporters write the causal mask of a model
/// called without an attention mask (transformers' causal LMs) as such a
/// folded constant.
bool isCausalConstant(ConstantOp c) {
  auto [tq, tk] = lastTwoDims(c.getResult().getType());
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  if (!dense || dense.isSplat() || !isa<FloatType>(dense.getElementType()))
    return false;
  int64_t i = 0;
  for (const APFloat &x : dense.getValues<APFloat>()) {
    int64_t query = (i / tk) % tq, key = i % tk;
    ++i;
    double value = x.convertToDouble();
    if (key <= query ? value != 0.0 : !hidesKey(value))
      return false;
  }
  return true;
}

/// One attention found in the IR.
struct Match {
  SoftmaxOp softmax;
  BatchMatmulOp scores;  ///< q k^T
  BatchMatmulOp product; ///< P v
  Value query, key, value, mask;
  /// k^T [..., D, Tk] when the product does not transpose k itself.
  Value keyT;
  double scale = 1.0;
  bool causal = false;
  /// The chain's ops between `scores` and `product` (erased when fused).
  SmallVector<Operation *> chain;
};

class Matcher {
public:
  explicit Matcher(const llvm::DenseSet<Value> &fromParameters)
      : fromParameters(fromParameters) {}

  std::optional<Match> match(SoftmaxOp softmax) {
    Match m;
    m.softmax = softmax;
    RankedTensorType t = softmax.getType();
    if (static_cast<int64_t>(softmax.getAxis()) != t.getRank() - 1 ||
        t.getRank() < 3)
      return std::nullopt;
    // Below: P (maybe NaN-guarded, maybe cast) is the lhs of one
    // batch_matmul with v.
    Value p = softmax.getResult();
    if (SelectOp guard = nanGuard(p)) {
      m.chain.push_back(guard);
      m.chain.push_back(guard.getCond().getDefiningOp());
      p = guard.getResult();
    }
    if (!p.hasOneUse())
      return std::nullopt;
    Operation *user = *p.getUsers().begin();
    if (auto cast = dyn_cast<CastOp>(user)) {
      if (!cast.getResult().hasOneUse())
        return std::nullopt;
      m.chain.push_back(cast);
      p = cast.getResult();
      user = *p.getUsers().begin();
    }
    auto pv = dyn_cast<BatchMatmulOp>(user);
    if (!pv || pv.getLhs() != p || pv.getRhs() == p || pv.getTransposeLhs())
      return std::nullopt;
    m.product = pv;
    m.value = pv.getRhs();
    m.chain.push_back(softmax);
    // Above: the scores chain.
    if (!walkScores(m, softmax.getOperand(), /*seenScale=*/false,
                    /*seenMask=*/false, /*seenCausal=*/false,
                    /*seenCast=*/false))
      return std::nullopt;
    return m;
  }

private:
  const llvm::DenseSet<Value> &fromParameters;
  /// isCausalConstant of each constant seen (every layer's mask is a view
  /// of the same one: it is read once).
  llvm::DenseMap<Attribute, bool> causalConstants;

  bool isCausal(Value mask, std::pair<int64_t, int64_t> scores) {
    ConstantOp c = maskConstant(mask, scores);
    if (!c)
      return false;
    auto [it, inserted] = causalConstants.try_emplace(c.getValue(), false);
    if (inserted)
      it->second = isCausalConstant(c);
    return it->second;
  }

  /// torch's guard after the softmax of scaled_dot_product_attention,
  /// `where(isnan(P), 0, P)` (zb.select of zb.compare "ne" P, P), when P
  /// has no other use: the select.
  static SelectOp nanGuard(Value p) {
    CompareOp isNaN;
    SelectOp select;
    for (Operation *user : p.getUsers()) {
      if (auto c = dyn_cast<CompareOp>(user); c && (!isNaN || isNaN == c))
        isNaN = c;
      else if (auto sel = dyn_cast<SelectOp>(user); sel && !select)
        select = sel;
      else
        return SelectOp(); // another user
    }
    if (!isNaN || !select || isNaN.getPredicate() != "ne" ||
        isNaN.getLhs() != p || isNaN.getRhs() != p ||
        !isNaN.getResult().hasOneUse() ||
        select.getCond() != isNaN.getResult() ||
        select.getOnFalse() != p || select.getOnTrue() == p)
      return SelectOp();
    std::optional<double> zero = splatValue(select.getOnTrue());
    if (!zero || *zero != 0.0)
      return SelectOp();
    return select;
  }

  /// Matches `s`, a value of the chain above the softmax, taking each step
  /// at most once; records the steps in `m` (undone on failure).
  bool walkScores(Match &m, Value s, bool seenScale, bool seenMask,
                  bool seenCausal, bool seenCast) {
    if (!s.hasOneUse())
      return false;
    Operation *def = s.getDefiningOp();
    if (!def)
      return false;
    Match saved = m;
    auto step = [&](Value next, bool scale, bool mask, bool causal,
                    bool cast) {
      m.chain.push_back(def);
      if (walkScores(m, next, scale, mask, causal, cast))
        return true;
      m = saved;
      return false;
    };
    if (auto bmm = dyn_cast<BatchMatmulOp>(def))
      return matchScores(m, bmm);
    if (auto cast = dyn_cast<CastOp>(def)) {
      if (seenCast || !isa<FloatType>(getElementTypeOrSelf(
                          cast.getOperand().getType())))
        return false;
      return step(cast.getOperand(), seenScale, seenMask, seenCausal, true);
    }
    if (auto causal = dyn_cast<CausalMaskOp>(def)) {
      if (seenCausal || !hidesKey(causal.getFillValue()))
        return false;
      m.causal = true;
      return step(causal.getOperand(), seenScale, seenMask, true, seenCast);
    }
    if (isa<MulOp, DivOp>(def) && !seenScale) {
      for (unsigned i = 0; i < 2; ++i) {
        if (isa<DivOp>(def) && i == 0)
          continue; // only S / c
        std::optional<double> c = splatValue(def->getOperand(i));
        if (!c || !(*c > 0.0) || !std::isfinite(*c))
          continue;
        double factor = isa<DivOp>(def) ? 1.0 / *c : *c;
        double before = m.scale;
        m.scale *= factor;
        if (step(def->getOperand(1 - i), true, seenMask, seenCausal,
                 seenCast))
          return true;
        m.scale = before;
      }
      return false;
    }
    if (isa<AddOp>(def) && !seenMask) {
      for (unsigned i = 0; i < 2; ++i) {
        Value mask = def->getOperand(i);
        if (fromParameters.contains(mask) || splatValue(mask))
          continue;
        // The causal mask as a constant: the causal flag (no mask to read).
        if (isCausal(mask, lastTwoDims(s.getType()))) {
          bool before = m.causal;
          m.causal = true;
          if (step(def->getOperand(1 - i), seenScale, true, true, seenCast))
            return true;
          m.causal = before;
          continue;
        }
        m.mask = mask;
        if (step(def->getOperand(1 - i), seenScale, true, seenCausal,
                 seenCast))
          return true;
        m.mask = Value();
      }
      return false;
    }
    return false;
  }

  /// The q k^T product: k transposed by the product or by a zb.transpose
  /// of the last two dimensions. A product of q * c and k^T * c (splat
  /// positive constants, no other use: torch.onnx's export of
  /// scaled_dot_product_attention multiplies both by sqrt(scale)) takes q
  /// and k^T, the constants joining the scale.
  bool matchScores(Match &m, BatchMatmulOp bmm) {
    if (bmm.getTransposeLhs())
      return false;
    m.scores = bmm;
    m.query = unscaled(m, bmm.getLhs());
    Value key = unscaled(m, bmm.getRhs());
    // [.., Tk, D] when transpose_rhs, else k^T [.., D, Tk]
    if (bmm.getTransposeRhs())
      m.key = key;
    else
      m.keyT = key;
    return true;
  }

  /// `x` before a multiplication by a positive splat constant that only
  /// the scores read (the factor joins m.scale, the zb.mul m.chain), else
  /// `x`.
  Value unscaled(Match &m, Value x) {
    auto mul = x.getDefiningOp<MulOp>();
    if (!mul || !x.hasOneUse())
      return x;
    for (unsigned i = 0; i < 2; ++i) {
      std::optional<double> c = splatValue(mul->getOperand(i));
      if (!c || !(*c > 0.0) || !std::isfinite(*c) ||
          splatValue(mul->getOperand(1 - i)))
        continue;
      m.scale *= *c;
      m.chain.push_back(mul);
      return mul->getOperand(1 - i);
    }
    return x;
  }
};

/// The permutation swapping the last two of `rank` dimensions.
SmallVector<int64_t> swapLastTwo(int64_t rank) {
  auto perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(perm[rank - 1], perm[rank - 2]);
  return perm;
}

/// `x` with its last two dimensions swapped: the operand of a zb.transpose
/// that swapped them, also inside reshapes of the leading dimensions
/// (torch.onnx's `reshape(transpose(reshape(k)))` of a 4-d k), else a new
/// zb.transpose.
Value transposedLastTwo(ZBBuilder &e, Value x) {
  auto t = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> perm = swapLastTwo(t.getRank());
  if (auto tr = x.getDefiningOp<TransposeOp>())
    if (tr.getPermutation() == ArrayRef<int64_t>(perm))
      return tr.getOperand();
  // reshape(transpose(reshape(k))), each reshape keeping the last two
  // dimensions: k when its shape is x's with the last two swapped.
  if (auto outer = x.getDefiningOp<ReshapeOp>()) {
    auto tr = outer.getOperand().getDefiningOp<TransposeOp>();
    if (tr && lastTwoDims(tr.getType()) == lastTwoDims(t) &&
        tr.getPermutation() ==
            ArrayRef<int64_t>(swapLastTwo(tr.getType().getRank())))
      if (auto inner = tr.getOperand().getDefiningOp<ReshapeOp>()) {
        auto k = cast<RankedTensorType>(inner.getOperand().getType());
        SmallVector<int64_t> want(t.getShape());
        std::swap(want[want.size() - 1], want[want.size() - 2]);
        if (k.getShape() == ArrayRef<int64_t>(want) &&
            lastTwoDims(inner.getType()) == lastTwoDims(k))
          return inner.getOperand();
      }
  }
  return e.transpose(x, perm);
}

/// The mask as zb.attention takes it: a zb.broadcast_in_dim of a smaller
/// tensor is replaced by that tensor reshaped to the scores' rank (1 in the
/// broadcast dimensions).
Value compactMask(ZBBuilder &e, Value mask) {
  auto bc = mask.getDefiningOp<BroadcastInDimOp>();
  if (!bc)
    return mask;
  RankedTensorType src = bc.getOperand().getType();
  RankedTensorType dst = bc.getType();
  SmallVector<int64_t> shape(dst.getRank(), 1);
  for (auto [i, d] : llvm::enumerate(bc.getDims()))
    shape[d] = src.getDimSize(i);
  return e.reshape(bc.getOperand(), shape);
}

struct ZBFuseAttentionPass
    : public zb::impl::ZBFuseAttentionBase<ZBFuseAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(function);
    if (!func) {
      module.emitError("zb-fuse-attention: no function named '")
          << function << "'";
      return signalPassFailure();
    }
    if (func.isExternal())
      return;
    llvm::DenseSet<Value> fromParameters = parameterDependent(func);
    Matcher matcher(fromParameters);
    SmallVector<SoftmaxOp> softmaxes;
    func.walk([&](SoftmaxOp op) { softmaxes.push_back(op); });
    bool fusedAny = false;
    for (SoftmaxOp softmax : softmaxes)
      if (std::optional<Match> m = matcher.match(softmax))
        fusedAny |= fuse(*m);
    if (fusedAny)
      eraseDeadViews(func);
  }

  /// Values computed (transitively) from a zb.param argument.
  static llvm::DenseSet<Value> parameterDependent(func::FuncOp func) {
    llvm::DenseSet<Value> set;
    for (BlockArgument arg : func.getArguments())
      if (func.getArgAttr(arg.getArgNumber(), kParamAttr))
        set.insert(arg);
    func.walk([&](Operation *op) {
      if (llvm::any_of(op->getOperands(),
                       [&](Value v) { return set.contains(v); }))
        for (Value r : op->getResults())
          set.insert(r);
    });
    return set;
  }

  /// Replaces the chain of `m` by one zb.attention; false (nothing changed)
  /// for operands of different element types.
  bool fuse(Match &m) {
    Type elem = getElementTypeOrSelf(m.query.getType());
    RankedTensorType resultType = m.product.getType();
    Value keyOperand = m.key ? m.key : m.keyT;
    if (getElementTypeOrSelf(keyOperand.getType()) != elem ||
        getElementTypeOrSelf(m.value.getType()) != elem ||
        resultType.getElementType() != elem)
      return false; // mixed types: left to the unfused ops
    OpBuilder b(m.product);
    ZBBuilder e(b, m.softmax.getLoc());
    Value query = m.query;
    Value key = m.key ? m.key : transposedLastTwo(e, m.keyT);
    Value value = m.value;
    if (m.product.getTransposeRhs())
      value = transposedLastTwo(e, value);
    Value mask = m.mask ? compactMask(e, m.mask) : Value();
    RankedTensorType probs = m.softmax.getType();
    auto lseType =
        RankedTensorType::get(probs.getShape().drop_back(), probs.getElementType());
    auto fused = AttentionOp::create(
        b, m.softmax.getLoc(), resultType, lseType, query, key, value, mask,
        b.getF64FloatAttr(m.scale), m.causal ? b.getUnitAttr() : UnitAttr());
    m.product.getResult().replaceAllUsesWith(fused.getResult());
    // The chain: the product, the guard, the cast after the softmax, the
    // softmax, the steps upwards, q k^T (only used by each other).
    SmallVector<Operation *> dead{m.product};
    dead.append(m.chain.begin(), m.chain.end());
    dead.push_back(m.scores);
    for (Operation *op : dead)
      op->dropAllReferences();
    for (Operation *op : dead)
      op->erase();
    ++numFused;
    if (remarks)
      fused.emitRemark("fused attention: ")
          << (m.causal ? "causal, " : "") << (mask ? "masked, " : "")
          << "scale " << m.scale;
    return true;
  }

  /// Erases the views and constants left without a use (the broadcast of a
  /// mask, a transpose of k), users before producers.
  static void eraseDeadViews(func::FuncOp func) {
    for (Block &block : func.getBody())
      for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
        if (op.use_empty() && isa<BroadcastInDimOp, TransposeOp, ReshapeOp,
                                  ConstantOp, CastOp>(op))
          op.erase();
  }
};

} // namespace
