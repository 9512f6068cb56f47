//===- HeadViews.cpp - attention operands as views of token-major tensors -===//
//
// See zb/Transforms/HeadViews.h.
//
//===----------------------------------------------------------------------===//
#include "zb/Transforms/HeadViews.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"

using namespace mlir;

namespace zb {

/// A static rank-4 tensor type.
static RankedTensorType staticRank4(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.getRank() == 4 && t.hasStaticShape() ? t : RankedTensorType();
}

static bool swapsHeadsAndTokens(TransposeOp t) {
  return llvm::equal(t.getPermutation(), ArrayRef<int64_t>{0, 2, 1, 3});
}

std::optional<HeadView> matchHeadView(Value operand) {
  auto transpose = operand.getDefiningOp<TransposeOp>();
  if (!transpose || !swapsHeadsAndTokens(transpose) || !staticRank4(operand))
    return std::nullopt;
  auto reshape = transpose.getOperand().getDefiningOp<ReshapeOp>();
  RankedTensorType heads = staticRank4(transpose.getOperand());
  if (!reshape || !heads)
    return std::nullopt;
  Value s = reshape.getOperand();
  auto st = dyn_cast<RankedTensorType>(s.getType());
  int64_t hd = heads.getDimSize(2) * heads.getDimSize(3);
  if (!st || !st.hasStaticShape() || st.getRank() < 1 ||
      st.getDimSize(st.getRank() - 1) != hd)
    return std::nullopt;
  HeadView view;
  view.source = s;
  int64_t last = st.getRank() - 1;
  if (auto slice = s.getDefiningOp<SliceOp>()) {
    auto xt = cast<RankedTensorType>(slice.getOperand().getType());
    bool lastOnly = llvm::all_of(slice.getStrides(),
                                 [](int64_t s) { return s == 1; });
    for (int64_t d = 0; lastOnly && d < last; ++d)
      lastOnly = slice.getStart()[d] == 0 &&
                 slice.getLimit()[d] == xt.getDimSize(d);
    if (lastOnly && xt.hasStaticShape()) {
      view.source = slice.getOperand();
      view.offset = slice.getStart()[last];
      view.ops.push_back(slice);
    }
  } else if (auto split = s.getDefiningOp<SplitOp>()) {
    auto xt = cast<RankedTensorType>(split.getOperand().getType());
    if (static_cast<int64_t>(split.getAxis()) == last && xt.hasStaticShape()) {
      view.source = split.getOperand();
      for (Value r : split.getResults()) {
        if (r == s)
          break;
        view.offset += cast<RankedTensorType>(r.getType()).getDimSize(last);
      }
      view.ops.push_back(split);
    }
  }
  view.ops.push_back(reshape);
  view.ops.push_back(transpose);
  return view;
}

Value mergedHeadsThrough(Value result, Operation *user) {
  auto transpose = dyn_cast_or_null<TransposeOp>(user);
  RankedTensorType rt = staticRank4(result);
  if (!transpose || !rt || transpose.getOperand() != result ||
      !swapsHeadsAndTokens(transpose) || !transpose->hasOneUse())
    return Value();
  auto reshape = dyn_cast<ReshapeOp>(*transpose->user_begin());
  if (!reshape)
    return Value();
  auto zt = dyn_cast<RankedTensorType>(reshape.getType());
  if (!zt || !zt.hasStaticShape() || zt.getRank() < 1 ||
      zt.getDimSize(zt.getRank() - 1) != rt.getDimSize(1) * rt.getDimSize(3))
    return Value();
  return reshape.getResult();
}

Value matchMergedHeads(Value result) {
  if (!result.hasOneUse())
    return Value();
  return mergedHeadsThrough(result, *result.user_begin());
}

} // namespace zb
