//===- ZBBuilder.h - zb op builder with inferred types ----------*- C++ -*-===//
//
// A thin helper that creates zb ops at an OpBuilder's insertion point and
// infers their result types from the operands. Gradient rules
// (GradientOpInterface) and the decompositions of composite ops in
// convert-zb-to-linalg are written with it, so that a rule reads like the
// formula it implements.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_DIALECT_ZB_IR_ZBBUILDER_H
#define ZB_DIALECT_ZB_IR_ZBBUILDER_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace zb {

/// Creates zb ops with inferred result types. Every method takes and returns
/// ranked tensors; elementwise methods expect operands of the same type (no
/// implicit broadcasting: use `broadcast` / `unreduce`).
class ZBBuilder {
public:
  ZBBuilder(mlir::OpBuilder &builder, mlir::Location loc)
      : b(builder), loc(loc) {}

  // Elementwise (result type = type of the first operand).
  mlir::Value add(mlir::Value x, mlir::Value y);
  mlir::Value sub(mlir::Value x, mlir::Value y);
  mlir::Value mul(mlir::Value x, mlir::Value y);
  mlir::Value div(mlir::Value x, mlir::Value y);
  mlir::Value max(mlir::Value x, mlir::Value y);
  mlir::Value pow(mlir::Value x, mlir::Value y);
  mlir::Value neg(mlir::Value x);
  mlir::Value exp(mlir::Value x);
  mlir::Value log(mlir::Value x);
  mlir::Value tanh(mlir::Value x);
  mlir::Value sqrt(mlir::Value x);
  mlir::Value rsqrt(mlir::Value x);
  mlir::Value erf(mlir::Value x);
  mlir::Value sigmoid(mlir::Value x);
  /// `x * c` for a scalar constant c (no op when c == 1).
  mlir::Value scale(mlir::Value x, double c);
  /// A splat constant of the type of `like` (a float tensor).
  mlir::Value splat(mlir::Value like, double value);
  mlir::Value splat(mlir::RankedTensorType type, double value);
  /// Elementwise comparison (eq, ne, lt, le, gt, ge) -> i1 tensor.
  mlir::Value compare(llvm::StringRef predicate, mlir::Value x, mlir::Value y);
  mlir::Value select(mlir::Value cond, mlir::Value onTrue, mlir::Value onFalse);
  /// Converts the element type (float <-> float, int -> float).
  mlir::Value cast(mlir::Value x, mlir::Type elementType);

  // Reductions over `axes` (removed from the shape).
  mlir::Value reduceSum(mlir::Value x, llvm::ArrayRef<int64_t> axes);
  mlir::Value reduceMean(mlir::Value x, llvm::ArrayRef<int64_t> axes);
  mlir::Value reduceMax(mlir::Value x, llvm::ArrayRef<int64_t> axes);
  /// Broadcasts `x` to `type`, operand dimension i going to `dims[i]`.
  mlir::Value broadcast(mlir::Value x, mlir::RankedTensorType type,
                        llvm::ArrayRef<int64_t> dims);
  /// Broadcasts `x`, a reduction over `axes` of a tensor of type `type`, back
  /// to `type`.
  mlir::Value unreduce(mlir::Value x, mlir::RankedTensorType type,
                       llvm::ArrayRef<int64_t> axes);

  // Shape ops.
  mlir::Value reshape(mlir::Value x, llvm::ArrayRef<int64_t> shape);
  mlir::Value transpose(mlir::Value x, llvm::ArrayRef<int64_t> permutation);
  mlir::Value slice(mlir::Value x, llvm::ArrayRef<int64_t> start,
                    llvm::ArrayRef<int64_t> limit,
                    llvm::ArrayRef<int64_t> strides);
  mlir::Value pad(mlir::Value x, llvm::ArrayRef<int64_t> low,
                  llvm::ArrayRef<int64_t> high,
                  llvm::ArrayRef<int64_t> interior);
  mlir::Value concat(mlir::ValueRange xs, int64_t axis);

  // Linear algebra (op(x) = x^T, on the last two dimensions, when tx).
  mlir::Value matmul(mlir::Value x, mlir::Value y, bool tx, bool ty);
  mlir::Value batchMatmul(mlir::Value x, mlir::Value y, bool tx, bool ty);

  // Embedding and layers.
  mlir::Value gather(mlir::Value table, mlir::Value indices);
  mlir::Value scatterAdd(mlir::Value updates, mlir::Value indices,
                         mlir::RankedTensorType tableType);
  mlir::Value oneHot(mlir::Value indices, int64_t classes,
                     mlir::Type elementType);
  mlir::Value softmax(mlir::Value x, int64_t axis);
  /// 1.0 where the integer `indices` differ from `value`, else 0.0, as
  /// `elementType` (the positions zb.cross_entropy's ignore_index keeps;
  /// compared in that float type: exact for |indices| < 2^24 in f32).
  mlir::Value notEqualMask(mlir::Value indices, int64_t value,
                           mlir::Type elementType);
  mlir::Value causalMask(mlir::Value x, double fill);

  mlir::OpBuilder &builder() { return b; }
  mlir::Location location() { return loc; }

private:
  mlir::OpBuilder &b;
  mlir::Location loc;
};

} // namespace zb

#endif // ZB_DIALECT_ZB_IR_ZBBUILDER_H
