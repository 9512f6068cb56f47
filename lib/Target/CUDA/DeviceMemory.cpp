//===- DeviceMemory.cpp - where a CUDA program's buffers live -------------===//
#include "zb/Target/CUDA/DeviceMemory.h"

using namespace mlir;

bool zb::cuda::isBufferView(Operation *op) {
  return isa<memref::SubViewOp, memref::CastOp, memref::CollapseShapeOp,
             memref::ExpandShapeOp, memref::ReinterpretCastOp>(op);
}

Value zb::cuda::viewSource(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (!isBufferView(def))
      break;
    value = def->getOperand(0);
  }
  return value;
}

memref::GlobalOp zb::cuda::constantGlobalRoot(Value value,
                                             SymbolTableCollection &symbols) {
  auto get = viewSource(value).getDefiningOp<memref::GetGlobalOp>();
  if (!get)
    return nullptr;
  auto global =
      symbols.lookupNearestSymbolFrom<memref::GlobalOp>(get, get.getNameAttr());
  return global && global.getConstant() ? global : nullptr;
}
