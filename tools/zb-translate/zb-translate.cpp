//===- zb-translate.cpp - model files <-> zb dialect ----------------------===//
//
// Translations between external model formats and the zb dialect, with the
// usual mlir-translate driver (-o, --split-input-file, --verify-diagnostics):
//
//   zb-translate --import-onnx model.onnx [-o model.mlir]
//   zb-translate --import-stablehlo model.stablehlo.mlir [--data-args=NAMES]
//
// Exits with a non-zero status after printing the diagnostic when the input
// cannot be imported.
//
//===----------------------------------------------------------------------===//

#include "zb/Frontend/ONNX/ONNXImporter.h"
#include "zb/Frontend/StableHLO/StableHLOImporter.h"

#include "mlir/Support/LogicalResult.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  zb::frontend::registerONNXImportTranslation();
  zb::frontend::registerStableHLOImportTranslation();
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "zb translation driver"));
}
