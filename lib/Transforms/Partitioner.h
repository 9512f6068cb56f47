//===- Partitioner.h - zb-partition-stages' shared state ------*- C++ -*-===//
//
// Private to lib/Transforms: the state of one zb-partition-stages run,
// shared by its two halves. PartitionStages.cpp decides the stages
// (balancing by the cost model or by layers, backward ops following their
// origin, tied parameters' gradients split per stage); OutlineStages.cpp
// outlines each stage into its forward / backward_input / backward_weight
// functions and records the #zb.pipeline.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_LIB_TRANSFORMS_PARTITIONER_H
#define ZB_LIB_TRANSFORMS_PARTITIONER_H

#include "zb/Dialect/ZB/IR/ZBOps.h"
#include "zb/Transforms/CostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <vector>

namespace zb::partition {

/// One argument or result of an outlined stage function and its role.
struct Port {
  mlir::Value value;
  /// param | batch | act | saved | grad | residual | loss | param_grad
  llvm::StringRef role;
  /// zb.value id (act/saved/grad/residual) or argument index
  int64_t key;
  /// param_grad of a parameter with several gradient contributions: which
  /// contribution (zb.part, in zb-autodiff's order); -1 otherwise.
  int64_t part = -1;
};

/// One run of zb-partition-stages on the differentiated function `func`.
struct Partitioner {
  Partitioner(mlir::ModuleOp module, mlir::func::FuncOp func, int64_t numRanks,
              int64_t numChunks, CostTarget target, bool byLayers)
      : module(module), func(func), numStages(numRanks * numChunks),
        numRanks(numRanks), numChunks(numChunks), target(std::move(target)),
        byLayers(byLayers) {}

  mlir::ModuleOp module;
  mlir::func::FuncOp func;
  int64_t numStages; // P * V
  int64_t numRanks, numChunks;
  CostTarget target;
  bool byLayers;

  mlir::Block *body = nullptr;
  mlir::Operation *ret = nullptr;
  llvm::DenseMap<mlir::Operation *, int64_t> stageOf; // non-constant ops
  llvm::DenseMap<mlir::Value, int64_t> valueIds;
  std::vector<llvm::SmallVector<int64_t>> paramStages; // by argument number
  /// Per-stage gradient of a tied parameter: (argument number, stage) ->
  /// the sum of that stage's contributions.
  llvm::DenseMap<std::pair<unsigned, int64_t>, mlir::Value> tiedGrad;
  /// A parameter with several gradient contributions (uses): (argument
  /// number, stage) -> that stage's contributions and their part numbers,
  /// in contribution order. Each is returned and summed over the
  /// microbatches on its own; zb-lower-pipeline adds the per-part totals in
  /// part order, so the sum does not depend on the partition.
  llvm::DenseMap<std::pair<unsigned, int64_t>,
                 llvm::SmallVector<std::pair<mlir::Value, int64_t>>>
      gradParts;
  /// The returned gradient of each parameter, by argument number.
  llvm::DenseMap<unsigned, mlir::Value> gradOfParam;
  /// Stage-local op lists in program order: forward, B and W ops.
  std::vector<llvm::SmallVector<mlir::Operation *>> F, B, W;
  /// Values entering each stage: activations from the previous stage
  /// (computed there or relayed) and gradients from the next one.
  std::vector<llvm::SetVector<mlir::Value>> actIn, gradIn;
  /// #zb.stage of each outlined stage, in stage order.
  llvm::SmallVector<mlir::Attribute> stageAttrs;

  /// The ports of one stage's three functions and the tensors they keep.
  struct StagePorts {
    llvm::SmallVector<Port> fIn, fOut, bIn, bOut, wIn, wOut;
    llvm::SetVector<mlir::Value> saved, residuals;
  };

  bool isParam(mlir::Value v) {
    auto arg = llvm::dyn_cast<mlir::BlockArgument>(v);
    return arg && func.getArgAttr(arg.getArgNumber(), kParamAttr);
  }
  bool isBatch(mlir::Value v) {
    return llvm::isa<mlir::BlockArgument>(v) && !isParam(v);
  }
  static bool isConstant(mlir::Value v) {
    return v.getDefiningOp() && llvm::isa<ConstantOp>(v.getDefiningOp());
  }
  static bool isBackwardOp(mlir::Operation *op) {
    return op && op->hasAttr(kOriginAttr);
  }
  int64_t stageOfValue(mlir::Value v) {
    mlir::Operation *def = v.getDefiningOp();
    auto it = def ? stageOf.find(def) : stageOf.end();
    return it == stageOf.end() ? -1 : it->second;
  }
  int64_t idFor(mlir::Value v) {
    auto [it, inserted] = valueIds.try_emplace(v, valueIds.size());
    return it->second;
  }
  mlir::StringAttr nameOfArg(unsigned i) {
    if (auto n = func.getArgAttrOfType<mlir::StringAttr>(i, "zb.name"))
      return n;
    return mlir::StringAttr::get(func.getContext(), "arg" + std::to_string(i));
  }

  /// Decides the stages, then outlines them; erases the function.
  mlir::LogicalResult run();

  // Deciding the stages (PartitionStages.cpp).
  mlir::LogicalResult assignStages(llvm::ArrayRef<mlir::Operation *> forward,
                                   llvm::ArrayRef<mlir::Operation *> backward);
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  layerCuts(llvm::ArrayRef<mlir::Operation *> compute);
  /// Moves each forward op computed from parameters and constants alone (a
  /// broadcast weight, Gemma's `1 + weight`) to the first stage that uses
  /// its result, so that no stage sends another a value of parameters and
  /// its gradient (a weight gradient, W) never crosses stages.
  void sinkParameterOps(llvm::ArrayRef<mlir::Operation *> compute);
  mlir::LogicalResult followOrigins(llvm::ArrayRef<mlir::Operation *> compute,
                                    llvm::ArrayRef<mlir::Operation *> backward);
  void findParamStages();
  mlir::LogicalResult readGradients();
  mlir::LogicalResult splitTiedGradient(unsigned arg, mlir::Value grad);
  mlir::LogicalResult splitGradientParts(unsigned arg, mlir::Value grad);

  // Outlining them (OutlineStages.cpp).
  void splitByPass();
  mlir::LogicalResult findCrossingValues();
  void collectArgs(llvm::ArrayRef<mlir::Operation *> ops,
                   llvm::SmallVector<Port> &out);
  mlir::LogicalResult forwardPorts(int64_t s, StagePorts &ports);
  mlir::LogicalResult backwardInputPorts(int64_t s, StagePorts &ports);
  mlir::LogicalResult backwardWeightPorts(int64_t s, StagePorts &ports);
  mlir::LogicalResult outlineStage(int64_t s);
  void setPipelineAttr();
  mlir::func::FuncOp outline(llvm::StringRef name, int64_t stage,
                             llvm::StringRef kind,
                             llvm::ArrayRef<mlir::Operation *> ops,
                             llvm::ArrayRef<Port> inputs,
                             llvm::ArrayRef<Port> outputs);
};

} // namespace zb::partition

#endif // ZB_LIB_TRANSFORMS_PARTITIONER_H
