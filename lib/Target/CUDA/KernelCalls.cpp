//===- KernelCalls.cpp - tensor-level calls of hand-built kernels --------===//
//
// See KernelCalls.h.
//
//===----------------------------------------------------------------------===//
#include "KernelCalls.h"

using namespace mlir;

namespace zb::gpu_calls {

/// `t` with its leading `rank - keep` dimensions collapsed into one.
Value collapseLeading(OpBuilder &b, Location loc, Value t, int64_t keep) {
  auto tt = cast<RankedTensorType>(t.getType());
  int64_t r = tt.getRank();
  if (r == keep + 1)
    return t;
  int64_t lead = 1;
  SmallVector<ReassociationIndices> groups(1);
  for (int64_t i = 0; i < r - keep; ++i) {
    lead *= tt.getDimSize(i);
    groups[0].push_back(i);
  }
  SmallVector<int64_t> shape = {lead};
  for (int64_t i = r - keep; i < r; ++i) {
    shape.push_back(tt.getDimSize(i));
    groups.push_back({i});
  }
  return tensor::CollapseShapeOp::create(
      b, loc, RankedTensorType::get(shape, tt.getElementType()), t, groups);
}

/// The inverse of collapseLeading for a result of type `type`.
Value expandLeading(OpBuilder &b, Location loc, Value t,
                    RankedTensorType type, int64_t keep) {
  int64_t r = type.getRank();
  if (r == keep + 1)
    return t;
  SmallVector<ReassociationIndices> groups(1);
  for (int64_t i = 0; i < r - keep; ++i)
    groups[0].push_back(i);
  for (int64_t i = r - keep; i < r; ++i)
    groups.push_back({i});
  return tensor::ExpandShapeOp::create(b, loc, type, t, groups);
}

/// The buffer of `t` with its leading dimensions collapsed (`keep` kept):
/// bufferization.to_buffer read_only, identity layout.
Value readOnlyBuffer(OpBuilder &b, Location loc, Value t, int64_t keep) {
  t = collapseLeading(b, loc, t, keep);
  auto tt = cast<RankedTensorType>(t.getType());
  return bufferization::ToBufferOp::create(
      b, loc, MemRefType::get(tt.getShape(), tt.getElementType()), t,
      /*read_only=*/true);
}

/// Replaces `result` by the tensor of `buffer` (which a call fills), its
/// leading dimensions expanded back to `result`'s (`keep` kept).
void replaceByBuffer(OpBuilder &b, Location loc, Value result, Value buffer,
                     int64_t keep) {
  auto mt = cast<MemRefType>(buffer.getType());
  Value t = bufferization::ToTensorOp::create(
      b, loc, RankedTensorType::get(mt.getShape(), mt.getElementType()),
      buffer, /*restrict=*/true, /*writable=*/true);
  result.replaceAllUsesWith(expandLeading(
      b, loc, t, cast<RankedTensorType>(result.getType()), keep));
}

/// A fresh private declaration `prefix<N>(types)` at the start of `module`.
std::string declareCallee(ModuleOp module, SymbolTable &symbols,
                          int64_t &next, StringRef prefix, TypeRange types,
                          Location loc) {
  std::string name;
  do
    name = (prefix + Twine(next++)).str();
  while (symbols.lookup(name));
  OpBuilder mb = OpBuilder::atBlockBegin(module.getBody());
  auto decl = func::FuncOp::create(mb, loc, name,
                                   mb.getFunctionType(types, {}));
  decl.setPrivate();
  symbols.insert(decl);
  return name;
}

} // namespace zb::gpu_calls
