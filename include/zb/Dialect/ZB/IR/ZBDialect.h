//===- ZBDialect.h - zb dialect ---------------------------------*- C++ -*-===//
#ifndef ZB_DIALECT_ZB_IR_ZBDIALECT_H
#define ZB_DIALECT_ZB_IR_ZBDIALECT_H

#include "mlir/IR/Dialect.h"

#include "zb/Dialect/ZB/IR/ZBOpsDialect.h.inc"

#endif // ZB_DIALECT_ZB_IR_ZBDIALECT_H
