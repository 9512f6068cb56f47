//===- KernelCalls.cpp - tensor-level calls of hand-built kernels --------===//
//
// See KernelCalls.h.
//
//===----------------------------------------------------------------------===//
#include "KernelCalls.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

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

gpu::GPUFuncOp createKernel(ModuleOp module, SymbolTable &symbols,
                            int64_t &next, func::FuncOp parent, StringRef what,
                            TypeRange types, int64_t gridX, int64_t gridY,
                            int64_t threads, StringRef kind, Location loc) {
  std::string name;
  do
    name = (parent.getName() + "_" + what + "_" + Twine(next++)).str();
  while (symbols.lookup(name));
  OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
  auto gpuModule = gpu::GPUModuleOp::create(mb, loc, name);
  symbols.insert(gpuModule);
  OpBuilder kb = OpBuilder::atBlockBegin(gpuModule.getBody());
  auto kernel = gpu::GPUFuncOp::create(
      kb, loc, name, kb.getFunctionType(SmallVector<Type>(types), {}));
  kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), kb.getUnitAttr());
  kernel.setKnownBlockSizeAttr(
      kb.getDenseI32ArrayAttr({static_cast<int32_t>(threads), 1, 1}));
  kernel.setKnownGridSizeAttr(kb.getDenseI32ArrayAttr(
      {static_cast<int32_t>(gridX), static_cast<int32_t>(gridY), 1}));
  kernel->setAttr("zb.kernel_kind", kb.getStringAttr(kind));
  return kernel;
}

void launchBefore(func::CallOp call, gpu::GPUFuncOp kernel) {
  Location loc = call.getLoc();
  OpBuilder b(call);
  llvm::SmallDenseMap<int32_t, Value> constants;
  auto dim = [&](ArrayRef<int32_t> sizes, int i) {
    Value &c = constants[sizes[i]];
    if (!c)
      c = arith::ConstantIndexOp::create(b, loc, sizes[i]);
    return c;
  };
  ArrayRef<int32_t> grid = *kernel.getKnownGridSize();
  ArrayRef<int32_t> block = *kernel.getKnownBlockSize();
  gpu::LaunchFuncOp::create(
      b, loc, kernel, gpu::KernelDim3{dim(grid, 0), dim(grid, 1), dim(grid, 2)},
      gpu::KernelDim3{dim(block, 0), dim(block, 1), dim(block, 2)},
      /*dynamicSharedMemorySize=*/Value(), call.getOperands());
}

void eraseCall(ModuleOp module, SymbolTable &symbols, func::CallOp call) {
  auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
  call.erase();
  if (callee && callee.symbolKnownUseEmpty(module))
    callee.erase();
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  UnitAttr::get(module.getContext()));
}

} // namespace zb::gpu_calls
