//===- ONNXImporter.h - ONNX model -> zb dialect ----------------*- C++ -*-===//
//
// Step 1 of the compilation flow (docs/design.md, docs/frontends.md):
// reads an ONNX ModelProto (libonnx + protobuf) holding a model's forward
// graph *and its loss*, as exported by torch.onnx.export with static shapes,
// and builds one function
//
//   module attributes {zb.param_values = {"fc1.weight" = dense<...>, ...}} {
//     func.func @main(%x: tensor<16x16xf32> {zb.name = "x"}, ...,
//                     %w: tensor<64x16xf32> {zb.name = "fc1.weight", zb.param},
//                     ...) -> tensor<f32>
//   }
//
// - arguments: the graph inputs that are not initializers, in graph order
//   (attribute `zb.name` = the ONNX name), then the parameters: the
//   floating-point initializers used as tensor operands, in initializer order
//   (attributes `zb.param` and `zb.name`). A model from PyTorch 2.x's dynamo
//   exporter records what each initializer was (metadata_props, read even
//   though libonnx 1.12 predates them): then the parameters are those of
//   kind PARAMETER in the module's order under their state_dict names, an
//   initializer the exporter's optimizer folded from one parameter (an
//   nn.Linear weight transposed into `val_N`, a tied head's copy) stands for
//   that parameter (a zb.transpose/zb.reshape of it), and buffers (RoPE
//   tables, masks) are constants listed in the module attribute `zb.buffers`
//   (docs/frontends.md, "Names, parameters and buffers");
// - result: the graph's single output, the scalar loss (`tensor<f32>` for a
//   float32 model; an output with one element and rank > 0 is reduced to
//   rank 0);
// - body: `zb` ops only; numpy broadcasting is explicit (zb.broadcast_in_dim);
//   every op's location is NameLoc(<ONNX node name>, FileLineColLoc(file,0,0));
// - the initial parameter values are the module attribute `zb.param_values`,
//   a DictionaryAttr from ONNX name to DenseElementsAttr (the initializer's
//   shape and element type, unchanged). Read them with getValues<float>() or
//   check isSplat() first: a constant initializer (e.g. zero biases) is stored
//   as a splat, whose getRawData() holds a single element.
//
// Constants (Constant nodes, integer initializers, initializers only used as
// static operands such as a Pow exponent or ReduceMean axes) are folded at
// import and become zb.constant only where a tensor operand needs them.
//
// Tensors stored outside the model (data_location EXTERNAL, torch's
// `model.onnx.data`) are read from the file their `location` names, relative
// to the model's directory (ImportOptions::externalDataDir), at `offset` for
// `length` bytes; a location outside that directory, a missing or short file
// is an error naming the tensor and the file. Model-local functions are
// inlined.
//
// Supported ONNX ops (default domain, opsets 1-21): the table in
// docs/frontends.md (elementwise math with numpy broadcasting, MatMul/Gemm,
// reductions, Softmax, LayerNormalization, SoftmaxCrossEntropyLoss, Gather,
// Where, Cast, the shape ops Reshape/Unsqueeze/Squeeze/Flatten/Transpose/
// Expand/Concat/Slice/Split/Shape, and ops that are only folded: Range,
// ConstantOfShape, Trilu, Cos, Sin, comparisons and logic). Every op whose
// inputs are all constants known at import is folded (int64 shape
// arithmetic, masks, rotary tables), so exporters' shape plumbing leaves no
// op behind; a constant causal mask (Where with tril/triu, or adding
// triu(-inf)) becomes zb.causal_mask.
//
// Errors never crash and never throw: they are reported as MLIR diagnostics on
// the context (the null module is returned), e.g.
//   mlp.onnx:0:0: error: failed to parse ONNX model 'mlp.onnx': ...
//   mlp.onnx:0:0: error: unsupported ONNX op 'Softplus' (node 'Softplus_3', #3)
//
//===----------------------------------------------------------------------===//
#ifndef ZB_FRONTEND_ONNX_ONNXIMPORTER_H
#define ZB_FRONTEND_ONNX_ONNXIMPORTER_H

#include "zb/Frontend/ImportedModule.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBufferRef.h"

#include <string>

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace zb {
namespace frontend {

// The names of the imported module (kNameAttr, kParamValuesAttr,
// kMainFuncName) are those of zb/Frontend/ImportedModule.h.

/// Options of an import.
struct ImportOptions {
  /// Loss appended to a model whose single output is logits [N..., C]:
  /// "" (none: the output must be the scalar loss) or "cross-entropy"
  /// (zb.cross_entropy, the mean over N...).
  std::string loss;
  /// With `loss`: the name of the integer targets [N...]: a graph input, or
  /// else a new i64 function argument with that `zb.name`, placed after the
  /// graph inputs and before the parameters.
  std::string targets;
  /// Return every graph output as computed instead of one scalar loss (for
  /// forward checks such as the ONNX node tests; such a module is not a
  /// training model). `loss` is ignored.
  bool keepOutputs = false;
  /// The directory that external tensor data (`model.onnx.data`, written by
  /// torch.onnx.export by default) is read from; "" = the directory of the
  /// model file (the buffer identifier's), "." when it has none.
  std::string externalDataDir;
};

/// Imports the ONNX model in the file at `path` (binary protobuf). Loads the
/// func and zb dialects into `ctx`. Returns null after emitting an error
/// diagnostic (a location naming the file, and the node when there is one).
mlir::OwningOpRef<mlir::ModuleOp>
importONNXFile(llvm::StringRef path, mlir::MLIRContext *ctx,
               const ImportOptions &options = {});

/// Same, from a serialized ModelProto in memory; the buffer identifier is used
/// as the file name in locations and messages.
mlir::OwningOpRef<mlir::ModuleOp> importONNX(llvm::MemoryBufferRef buffer,
                                             mlir::MLIRContext *ctx,
                                             const ImportOptions &options = {});

/// Registers the `--import-onnx` translation (for mlirTranslateMain) and its
/// command-line options `--loss cross-entropy` and `--targets NAME` (see
/// ImportOptions).
void registerONNXImportTranslation();

} // namespace frontend
} // namespace zb

#endif // ZB_FRONTEND_ONNX_ONNXIMPORTER_H
