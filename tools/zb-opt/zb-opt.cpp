//===- zb-opt.cpp - zb optimizer driver (like mlir-opt) -------------------===//
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "zb/Codegen/Passes.h"
#include "zb/Conversion/Passes.h"
#include "zb/Dialect/ZB/IR/ZBDialect.h"
#include "zb/Pipelines/Pipelines.h"
#include "zb/Target/CUDA/Passes.h"
#include "zb/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  zb::registerZBTransformsPasses();
  zb::registerZBConversionPasses();
  zb::registerZBCodegenPasses();
  zb::registerZBTargetCUDAPasses();
  zb::registerPipelines();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  registry.insert<zb::ZBDialect>();
  // gpu-module-to-binary translates kernels to LLVM IR.
  mlir::registerAllToLLVMIRTranslations(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "zb optimizer driver\n", registry));
}
