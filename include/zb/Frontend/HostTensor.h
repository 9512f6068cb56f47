//===- HostTensor.h - Constant tensors folded at import ---------*- C++ -*-===//
//
// The host-side tensor both importers (ONNX, StableHLO) fold constants with:
// the exporters' shape plumbing (Shape/Gather/Concat, iota/compare masks,
// broadcasts of scalars) is evaluated at import time so that it never
// reaches the zb IR.
//
// Layout: row-major (C order), like NumPy's default; a rank-0 tensor has one
// element. Values are held as doubles: exact for the integers of index
// arithmetic (|v| < 2^53) and for booleans (0.0 / 1.0), and for float types
// of at most 53 mantissa bits. A fold rounds its results to the element type
// after every op (roundToElementType), as the exporting framework (PyTorch,
// JAX) computes them in that type.
//
// Broadcasting follows NumPy (https://numpy.org/doc/stable/user/basics.
// broadcasting.html): shapes are aligned on the right, a dimension of 1
// stretches. broadcastInDimHost follows StableHLO's broadcast_in_dim
// (operand dimension k goes to result dimension dims[k]).
//
// Errors: functions returning FailureOr report bad input (mismatched shapes,
// out-of-range indices or axes) through `emitError`, which the importer binds
// to a diagnostic naming the node or op ("Gather node 'g' (#3): ..."), and
// then return failure; they never crash on such input. Functions without
// FailureOr state their preconditions.
//
//===----------------------------------------------------------------------===//

#ifndef ZB_FRONTEND_HOSTTENSOR_H
#define ZB_FRONTEND_HOSTTENSOR_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Types.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zb::frontend {

/// Binds a diagnostic to the node or op being folded; called at most once
/// per failing call, the callee appends the message.
using EmitErrorFn = llvm::function_ref<mlir::InFlightDiagnostic()>;

//===----------------------------------------------------------------------===//
// Index arithmetic on shapes (row-major)
//===----------------------------------------------------------------------===//

/// Number of elements of a tensor of `shape` (1 for rank 0, 0 if any
/// dimension is 0). The caller bounds the dimensions (no overflow check).
int64_t numElements(llvm::ArrayRef<int64_t> shape);

/// Row-major strides in elements: strides[d] = shape[d+1] * ... *
/// shape[rank-1] (NumPy's `a.strides` divided by the item size).
llvm::SmallVector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape);

/// The multi-index of linear element `i` of a tensor of `shape`
/// (numpy.unravel_index). Precondition: 0 <= i < numElements(shape).
llvm::SmallVector<int64_t> delinearize(int64_t i,
                                       llvm::ArrayRef<int64_t> shape);

/// The linear element of multi-index `index` (numpy.ravel_multi_index).
/// Precondition: index.size() == shape.size(), 0 <= index[d] < shape[d].
int64_t linearize(llvm::ArrayRef<int64_t> index, llvm::ArrayRef<int64_t> shape);

/// "[2,3]" ("[]" for rank 0), for diagnostics.
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// The NumPy broadcast of two shapes, or nullopt if a pair of dimensions
/// (aligned on the right) differs and neither is 1.
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// True if a tensor of `in` broadcasts (NumPy rules) to exactly `out`.
bool broadcastsTo(llvm::ArrayRef<int64_t> in, llvm::ArrayRef<int64_t> out);

/// For every element of a tensor of shape `out` (row-major), the linear index
/// of the element of a tensor of shape `in` it reads under NumPy
/// broadcasting: map[i] = linearize(index of i with the dimensions of size 1
/// in `in` set to 0, aligned on the right). Precondition: broadcastsTo(in,
/// out). numElements(out) entries.
std::vector<int64_t> broadcastIndexMap(llvm::ArrayRef<int64_t> in,
                                       llvm::ArrayRef<int64_t> out);

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

/// Rounds `v` to what `elem` holds: f32 via float, f64 unchanged, other float
/// types (f16, bf16, ...) by APFloat round-to-nearest-even, i1 to 0.0/1.0
/// (non-zero is true), other integers and index truncated toward zero
/// (wrap-around beyond the width is not modelled).
double roundToElementType(mlir::Type elem, double v);

/// `v` as int64, saturating: >= 2^63 gives INT64_MAX, < -2^63 INT64_MIN,
/// NaN 0; otherwise truncated toward zero. (Exporters write INT64_MAX for
/// "to the end" in Slice; as a double that is 2^63.)
int64_t toInt64Saturated(double v);

//===----------------------------------------------------------------------===//
// The tensor
//===----------------------------------------------------------------------===//

/// A constant tensor being folded: `data` holds numElements(shape) values in
/// row-major order, of element type `type` (integer, index or float; i1 is
/// bool). A default-constructed HostTensor (null type) stands for an absent
/// optional input.
struct HostTensor {
  llvm::SmallVector<int64_t> shape;
  mlir::Type type;
  std::vector<double> data;

  int64_t numElements() const { return zb::frontend::numElements(shape); }
  bool isFloat() const;
  bool isBool() const;
  /// Rounds `v` to the element type (roundToElementType).
  double round(double v) const { return roundToElementType(type, v); }

  /// True for the element types a HostTensor holds: integer (any width,
  /// i1 as bool), index and float types.
  static bool isSupportedElementType(mlir::Type elem);
  /// The values of `attr` (signed for integers, floats widened exactly to
  /// double), with its shape and element type. Precondition:
  /// isSupportedElementType(attr.getElementType()).
  static HostTensor fromAttr(mlir::DenseElementsAttr attr);
  /// The tensor as an attribute of element type `elem` (default: `type`):
  /// floats rounded to nearest even, integers saturated to int64
  /// (toInt64Saturated) then truncated to the width, i1 true iff non-zero.
  /// Precondition: `elem` (or `type`) is supported.
  mlir::DenseElementsAttr toAttr(mlir::Type elem = {}) const;
};

/// The values of a (1-D or scalar) integer tensor as int64
/// (toInt64Saturated each).
llvm::SmallVector<int64_t> toInts(const HostTensor &t);

//===----------------------------------------------------------------------===//
// Folds. Each returns a new tensor of `t`'s element type unless stated.
//===----------------------------------------------------------------------===//

/// The same values with shape `shape` (numpy.reshape). Error if the element
/// counts differ.
mlir::FailureOr<HostTensor> reshapeHost(const HostTensor &t,
                                        llvm::ArrayRef<int64_t> shape,
                                        EmitErrorFn emitError);

/// numpy.broadcast_to(t, shape). Error if `t` does not broadcast to `shape`.
mlir::FailureOr<HostTensor> broadcastHost(const HostTensor &t,
                                          llvm::ArrayRef<int64_t> shape,
                                          EmitErrorFn emitError);

/// StableHLO broadcast_in_dim: result[i] = t[j] with j[k] = i[dims[k]], or 0
/// where t.shape[k] == 1. Errors: dims.size() != rank(t), dims[k] outside
/// [0, rank(shape)), t.shape[k] neither 1 nor shape[dims[k]].
mlir::FailureOr<HostTensor> broadcastInDimHost(const HostTensor &t,
                                               llvm::ArrayRef<int64_t> shape,
                                               llvm::ArrayRef<int64_t> dims,
                                               EmitErrorFn emitError);

/// numpy.transpose(t, perm): result dimension d is operand dimension
/// perm[d]. Error if `perm` is not a permutation of 0..rank-1.
mlir::FailureOr<HostTensor> transposeHost(const HostTensor &t,
                                          llvm::ArrayRef<int64_t> perm,
                                          EmitErrorFn emitError);

/// Static strided slice: result shape `shape`, result[i] =
/// t[start + i * step] per dimension (t[s0:s0+n0*k0:k0, ...] in NumPy).
/// Errors: a list's length differs from rank(t), step < 1, start < 0, a
/// negative size, or a read past the end of a dimension.
mlir::FailureOr<HostTensor> sliceHost(const HostTensor &t,
                                      llvm::ArrayRef<int64_t> start,
                                      llvm::ArrayRef<int64_t> step,
                                      llvm::ArrayRef<int64_t> shape,
                                      EmitErrorFn emitError);

/// numpy.flip(t, dims). Error if a dimension is out of [0, rank).
mlir::FailureOr<HostTensor> reverseHost(const HostTensor &t,
                                        llvm::ArrayRef<int64_t> dims,
                                        EmitErrorFn emitError);

/// numpy.concatenate(inputs, axis), 0 <= axis < rank. Errors: no inputs, axis
/// out of range, inputs that differ in rank, element type or a dimension
/// other than `axis`.
mlir::FailureOr<HostTensor> concatHost(llvm::ArrayRef<HostTensor> inputs,
                                       int64_t axis, EmitErrorFn emitError);

/// numpy.take(data, indices, axis) (ONNX Gather): result shape
/// data.shape[:axis] + indices.shape + data.shape[axis+1:]; an index in
/// [-dim, 0) counts from the end. Errors: axis out of [0, rank), an index out
/// of [-dim, dim).
mlir::FailureOr<HostTensor> gatherHost(const HostTensor &data,
                                       const HostTensor &indices, int64_t axis,
                                       EmitErrorFn emitError);

/// StableHLO iota: result[i] = i[dim] (the index along `dim`), of element
/// type `type`. Precondition: 0 <= dim < shape.size().
HostTensor iotaHost(llvm::ArrayRef<int64_t> shape, int64_t dim,
                    mlir::Type type);

/// Elementwise n-ary function with NumPy broadcasting of every operand to
/// `shape`: result[i] = round(fn({op_0[i], ..., op_{n-1}[i]})) with the
/// operands broadcast, rounded to `resultType`. Error if an operand does not
/// broadcast to `shape`.
mlir::FailureOr<HostTensor>
elementwiseHost(llvm::ArrayRef<const HostTensor *> operands,
                llvm::ArrayRef<int64_t> shape, mlir::Type resultType,
                llvm::function_ref<double(llvm::ArrayRef<double>)> fn,
                EmitErrorFn emitError);

} // namespace zb::frontend

#endif // ZB_FRONTEND_HOSTTENSOR_H
