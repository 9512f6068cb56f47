//===- ZBDialect.cpp - zb dialect -----------------------------------------===//
#include "zb/Dialect/ZB/IR/ZBDialect.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace zb;

#include "zb/Dialect/ZB/IR/ZBOpsDialect.cpp.inc"

void ZBDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "zb/Dialect/ZB/IR/ZBOps.cpp.inc"
      >();
  registerAttributes();
}

Operation *ZBDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                          Type type, Location loc) {
  auto elements = llvm::dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}
