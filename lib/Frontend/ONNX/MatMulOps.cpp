//===- MatMulOps.cpp - ONNX Gemm and MatMul ----------------------------===//
//
// Gemm (alpha, beta, transposes) and MatMul with numpy semantics (rank >= 2:
// zb.matmul, rows flattened, or zb.batch_matmul with broadcast batches).
// See ONNXImporterImpl.h.
//
//===----------------------------------------------------------------------===//

#include "ONNXImporterImpl.h"

#include "zb/Dialect/ZB/IR/ZBOps.h"

using namespace mlir;
using namespace zb::frontend::onnx_import;

/// Gemm: Y = alpha * op(A) op(B) + beta * C, C broadcast to [M, N].
FailureOr<NodeResults> ONNXImporter::gemm() {
  FailureOr<int64_t> transA = intAttr("transA", 0),
                     transB = intAttr("transB", 0);
  FailureOr<float> alpha = floatAttr("alpha", 1.0f),
                   beta = floatAttr("beta", 1.0f);
  if (failed(transA) || failed(transB) || failed(alpha) || failed(beta))
    return failure();
  FailureOr<Value> a = floatInput(0), b = failure();
  if (failed(a) || failed(b = floatInput(1)))
    return failure();
  auto aType = cast<RankedTensorType>(a->getType());
  auto bType = cast<RankedTensorType>(b->getType());
  if (aType.getRank() != 2 || bType.getRank() != 2 ||
      aType.getElementType() != bType.getElementType()) {
    nodeError() << "A and B must be matrices of the same element type, got "
                << aType << " and " << bType;
    return failure();
  }
  int64_t m = aType.getDimSize(*transA ? 1 : 0);
  int64_t k = aType.getDimSize(*transA ? 0 : 1);
  int64_t kb = bType.getDimSize(*transB ? 1 : 0);
  int64_t n = bType.getDimSize(*transB ? 0 : 1);
  if (k != kb) {
    nodeError() << "inner dimensions differ: op(A) is " << m << "x" << k
                << ", op(B) is " << kb << "x" << n;
    return failure();
  }
  auto type = RankedTensorType::get({m, n}, aType.getElementType());
  Value y = zb::MatmulOp::create(builder, loc, type, *a, *b, *transA != 0,
                                 *transB != 0);
  if (*alpha != 1.0f)
    y = zb::MulOp::create(builder, loc, type, y, splatConstant(type, *alpha));
  if (hasInput(2) && *beta != 0.0f) {
    FailureOr<Value> c = floatInput(2);
    if (failed(c))
      return failure();
    if (cast<RankedTensorType>(c->getType()).getElementType() !=
        type.getElementType()) {
      nodeError() << "C has element type " << c->getType()
                  << ", expected that of A and B";
      return failure();
    }
    if (*beta != 1.0f)
      c = Value(zb::MulOp::create(
          builder, loc, c->getType(), *c,
          splatConstant(cast<RankedTensorType>(c->getType()), *beta)));
    c = broadcastTo(*c, type.getShape());
    if (failed(c))
      return failure();
    y = zb::AddOp::create(builder, loc, type, y, *c);
  }
  return result(y);
}

/// MatMul with numpy semantics for rank >= 2: 2-D x 2-D -> zb.matmul;
/// [..., M, K] x [K, N] -> rows flattened into one zb.matmul; batched
/// operands (batch dimensions broadcast) -> zb.batch_matmul.
FailureOr<NodeResults> ONNXImporter::matmul() {
  FailureOr<Value> a = floatInput(0), b = failure();
  if (failed(a) || failed(b = floatInput(1)))
    return failure();
  auto aType = cast<RankedTensorType>(a->getType());
  auto bType = cast<RankedTensorType>(b->getType());
  if (aType.getRank() < 2 || bType.getRank() < 2) {
    nodeError() << "1-D operands are not supported, got " << aType << " and "
                << bType;
    return failure();
  }
  int64_t m = aType.getDimSize(aType.getRank() - 2),
          k = aType.getShape().back(),
          kb = bType.getDimSize(bType.getRank() - 2),
          n = bType.getShape().back();
  if (k != kb || aType.getElementType() != bType.getElementType()) {
    nodeError() << "operands do not match: " << aType << " and " << bType;
    return failure();
  }
  Type elt = aType.getElementType();
  if (bType.getRank() == 2) {
    ArrayRef<int64_t> lead = aType.getShape().drop_back(2);
    int64_t rows = m;
    for (int64_t d : lead)
      rows *= d;
    Value lhs = *a;
    if (aType.getRank() > 2)
      lhs = zb::ReshapeOp::create(builder, loc,
                                  RankedTensorType::get({rows, k}, elt), lhs);
    // x @ W^T with W^T a zb.transpose (nn.Linear exported without constant
    // folding): use W with transpose_rhs (the dead transpose is removed at
    // the end of the import).
    Value rhs = *b;
    bool transposeRhs = false;
    if (auto t = rhs.getDefiningOp<zb::TransposeOp>()) {
      rhs = t.getOperand();
      transposeRhs = true;
    }
    Value y = zb::MatmulOp::create(builder, loc,
                                   RankedTensorType::get({rows, n}, elt), lhs,
                                   rhs, false, transposeRhs);
    if (aType.getRank() > 2) {
      SmallVector<int64_t> shape(lead);
      shape.append({m, n});
      y = zb::ReshapeOp::create(builder, loc, RankedTensorType::get(shape, elt),
                                y);
    }
    return result(y);
  }
  std::optional<SmallVector<int64_t>> batch = broadcastShapes(
      aType.getShape().drop_back(2), bType.getShape().drop_back(2));
  if (!batch) {
    nodeError() << "batch dimensions are not broadcastable: " << aType
                << " and " << bType;
    return failure();
  }
  SmallVector<int64_t> aShape(*batch), bShape(*batch), shape(*batch);
  aShape.append({m, k});
  bShape.append({k, n});
  shape.append({m, n});
  FailureOr<Value> lhs = broadcastTo(*a, aShape), rhs = failure();
  if (failed(lhs) || failed(rhs = broadcastTo(*b, bShape)))
    return failure();
  return result(zb::BatchMatmulOp::create(builder, loc,
                                          RankedTensorType::get(shape, elt),
                                          *lhs, *rhs, false, false));
}

void zb::frontend::onnx_import::populateMatMulHandlers(OpHandlerTable &table) {
  using I = ONNXImporter;
  static const OpHandlerEntry entries[] = {
      {"Gemm", 1, &I::gemm},
      {"MatMul", 1, &I::matmul},
  };
  table.add(entries);
}
