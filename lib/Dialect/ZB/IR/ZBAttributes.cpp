//===- ZBAttributes.cpp - zb pipeline attributes and their verifiers ------===//
//
// The verifiers of the typed pipeline attributes (ZBAttributes.td) and the
// dialect hooks that check the attribute under each name (zb.phase,
// zb.kind, zb.role, zb.pipeline, zb.schedule, zb.rank_args) wherever it is
// attached. They replace the string parsing the passes used to do.
//
//===----------------------------------------------------------------------===//
#include "zb/Dialect/ZB/IR/ZBAttributes.h"
#include "zb/Dialect/ZB/IR/ZBDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace zb;

#include "zb/Dialect/ZB/IR/ZBEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "zb/Dialect/ZB/IR/ZBAttributes.cpp.inc"

void ZBDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "zb/Dialect/ZB/IR/ZBAttributes.cpp.inc"
      >();
}

using EmitFn = llvm::function_ref<InFlightDiagnostic()>;

LogicalResult ActionAttr::verify(EmitFn emitError, ActionKind, int64_t stage,
                                 int64_t microbatch) {
  if (stage < 0 || microbatch < 0)
    return emitError() << "#zb.action: stage " << stage << " and microbatch "
                       << microbatch << " must be >= 0";
  return success();
}

/// Checks one rank's row of a schedule: actions only, each of a stage the
/// rank holds and of a microbatch in range.
static LogicalResult verifyRankRow(EmitFn emitError, Attribute row,
                                   size_t rank, ArrayRef<int64_t> stageToRank,
                                   int64_t microbatches) {
  auto actions = llvm::dyn_cast<ArrayAttr>(row);
  if (!actions)
    return emitError() << "#zb.schedule: rank " << rank
                       << "'s row is not an array of #zb.action";
  for (Attribute a : actions) {
    auto action = llvm::dyn_cast<ActionAttr>(a);
    if (!action)
      return emitError() << "#zb.schedule: rank " << rank << " holds " << a
                         << ", not a #zb.action";
    int64_t stage = action.getStage();
    if (stage >= static_cast<int64_t>(stageToRank.size()))
      return emitError() << "#zb.schedule: rank " << rank << " has " << a
                         << " of stage " << stage << ", but stage_to_rank has "
                         << stageToRank.size() << " stages";
    if (stageToRank[stage] != static_cast<int64_t>(rank))
      return emitError() << "#zb.schedule: rank " << rank << " has " << a
                         << ", but stage " << stage << " is on rank "
                         << stageToRank[stage];
    if (action.getMicrobatch() >= microbatches)
      return emitError() << "#zb.schedule: " << a << " on rank " << rank
                         << " is past the " << microbatches << " microbatches";
  }
  return success();
}

LogicalResult ScheduleAttr::verify(EmitFn emitError, StringRef,
                                   int64_t microbatches, APFloat, APFloat,
                                   DenseF64ArrayAttr peakMemory,
                                   DenseI64ArrayAttr stageToRank, bool,
                                   ScheduleCostConvention, ArrayAttr ranks,
                                   ScheduleOptimizerSync optimizerSync,
                                   DenseI64ArrayAttr validateBefore,
                                   int64_t directions) {
  if (microbatches <= 0)
    return emitError() << "#zb.schedule: microbatches must be > 0, not "
                       << microbatches;
  if (directions != 1 &&
      (directions != 2 || stageToRank.size() % 2 != 0 || microbatches % 2))
    return emitError() << "#zb.schedule: directions must be 1, or 2 with an "
                          "even number of stages and of microbatches, not "
                       << directions << " with " << stageToRank.size()
                       << " stages and " << microbatches << " microbatches";
  for (int64_t r : stageToRank.asArrayRef())
    if (r < 0 || r >= static_cast<int64_t>(ranks.size()))
      return emitError() << "#zb.schedule: stage_to_rank names rank " << r
                         << ", but the schedule has " << ranks.size()
                         << " ranks";
  if (peakMemory.size() != static_cast<int64_t>(ranks.size()))
    return emitError() << "#zb.schedule: peak_memory has " << peakMemory.size()
                       << " entries for " << ranks.size() << " ranks";
  for (auto [rank, row] : llvm::enumerate(ranks))
    if (failed(verifyRankRow(emitError, row, rank, stageToRank.asArrayRef(),
                             microbatches)))
      return failure();
  if ((optimizerSync == ScheduleOptimizerSync::PostValidation) !=
      bool(validateBefore))
    return emitError() << "#zb.schedule: validate_before goes with "
                          "optimizer_sync = \"post-validation\" (and only "
                          "with it)";
  if (validateBefore) {
    if (validateBefore.size() != static_cast<int64_t>(ranks.size()))
      return emitError() << "#zb.schedule: validate_before has "
                         << validateBefore.size() << " entries for "
                         << ranks.size() << " ranks";
    for (auto [rank, index] : llvm::enumerate(validateBefore.asArrayRef())) {
      int64_t n = llvm::cast<ArrayAttr>(ranks[rank]).size();
      if (index < 0 || index > n)
        return emitError() << "#zb.schedule: validate_before of rank " << rank
                           << " is " << index << ", outside [0, " << n << "]";
    }
  }
  return success();
}

LogicalResult StageAttr::verify(EmitFn emitError, int64_t stage,
                                FlatSymbolRefAttr, FlatSymbolRefAttr,
                                FlatSymbolRefAttr, APFloat tFf, APFloat tBf,
                                APFloat tWf, APFloat tCommf, int64_t mB,
                                int64_t mW, APFloat, APFloat, APFloat, bool) {
  double tF = tFf.convertToDouble(), tB = tBf.convertToDouble(),
         tW = tWf.convertToDouble(), tComm = tCommf.convertToDouble();
  if (stage < 0)
    return emitError() << "#zb.stage: stage must be >= 0, not " << stage;
  for (auto [name, t] : {std::pair{"t_f", tF}, std::pair{"t_b", tB},
                         std::pair{"t_w", tW}, std::pair{"t_comm", tComm}})
    if (!std::isfinite(t) || t < 0)
      return emitError() << "#zb.stage " << stage << ": " << name
                         << " must be a finite time >= 0 (ms), not " << t;
  if (mB < 0 || mW < 0)
    return emitError() << "#zb.stage " << stage
                       << ": m_b and m_w must be >= 0 bytes";
  return success();
}

LogicalResult ModelValueAttr::verify(EmitFn emitError, StringRef name,
                                     int64_t index, Type type,
                                     DenseI64ArrayAttr stages) {
  if (index < 0)
    return emitError() << "#zb.value '" << name << "': index must be >= 0";
  if (!llvm::isa<RankedTensorType>(type))
    return emitError() << "#zb.value '" << name
                       << "': type must be a ranked tensor, not " << type;
  for (int64_t s : stages.asArrayRef())
    if (s < 0)
      return emitError() << "#zb.value '" << name
                         << "': stage numbers must be >= 0";
  return success();
}

/// Checks that `values` holds #zb.value entries whose stages exist.
static LogicalResult verifyValues(EmitFn emitError, ArrayAttr values,
                                  StringRef what, int64_t numStages) {
  for (Attribute a : values) {
    auto value = llvm::dyn_cast<ModelValueAttr>(a);
    if (!value)
      return emitError() << "#zb.pipeline: " << what << " holds " << a
                         << ", not a #zb.value";
    for (int64_t s : value.getStages().asArrayRef())
      if (s >= numStages)
        return emitError() << "#zb.pipeline: " << what << " '"
                           << value.getName() << "' names stage " << s
                           << " of " << numStages;
  }
  return success();
}

LogicalResult PipelineAttr::verify(EmitFn emitError, int64_t numStages,
                                   int64_t numRanks, int64_t numChunks,
                                   StringRef, ArrayAttr stages,
                                   ArrayAttr params, ArrayAttr inputs) {
  if (numRanks <= 0 || numChunks <= 0 || numRanks * numChunks != numStages)
    return emitError() << "#zb.pipeline: num_ranks x num_chunks (" << numRanks
                       << " x " << numChunks << ") must equal num_stages ("
                       << numStages << ")";
  if (static_cast<int64_t>(stages.size()) != numStages)
    return emitError() << "#zb.pipeline: " << stages.size()
                       << " stage entries for num_stages = " << numStages;
  for (auto [i, a] : llvm::enumerate(stages)) {
    auto stage = llvm::dyn_cast<StageAttr>(a);
    if (!stage || stage.getStage() != static_cast<int64_t>(i))
      return emitError() << "#zb.pipeline: entry " << i
                         << " of stages must be the #zb.stage of stage " << i
                         << ", not " << a;
  }
  if (failed(verifyValues(emitError, params, "params", numStages)) ||
      failed(verifyValues(emitError, inputs, "inputs", numStages)))
    return failure();
  return success();
}

LogicalResult RankArgAttr::verify(EmitFn emitError, RankArgKind kind,
                                  int64_t index) {
  bool indexed = kind != RankArgKind::loss;
  if (indexed && index < 0)
    return emitError() << "#zb.rank_arg<" << stringifyRankArgKind(kind)
                       << ">: needs the index of the model "
                       << (kind == RankArgKind::input ? "input" : "parameter");
  if (!indexed && index != -1)
    return emitError() << "#zb.rank_arg<loss>: takes no index";
  return success();
}

//===----------------------------------------------------------------------===//
// The attributes under their names
//===----------------------------------------------------------------------===//

/// The attribute class expected under `name`, checked with `isValid`; names
/// the zb dialect does not type are accepted as they are.
static LogicalResult verifyNamedAttr(Operation *op, NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  auto expect = [&](bool ok, StringRef what) -> LogicalResult {
    if (ok)
      return success();
    return op->emitError() << "'" << name << "' must be " << what << ", not "
                           << value;
  };
  if (name == "zb.phase")
    return expect(llvm::isa<PhaseAttr>(value), "a #zb.phase");
  if (name == kFuncKindAttr)
    return expect(llvm::isa<StageFuncKindAttr>(value), "a #zb.kind");
  if (name == kPipelineAttr)
    return expect(llvm::isa<PipelineAttr>(value), "a #zb.pipeline");
  if (name == kScheduleAttr)
    return expect(llvm::isa<ScheduleAttr>(value), "a #zb.schedule");
  if (name == kRankArgsAttr) {
    auto list = llvm::dyn_cast<ArrayAttr>(value);
    return expect(list && llvm::all_of(list, llvm::IsaPred<RankArgAttr>),
                  "an array of #zb.rank_arg");
  }
  if (name == kRoleAttr)
    return expect(llvm::isa<RoleAttr>(value), "a #zb.role");
  if (name == kWeightClustersAttr) {
    auto list = llvm::dyn_cast<ArrayAttr>(value);
    return expect(list && !list.empty() &&
                      llvm::all_of(list, llvm::IsaPred<FlatSymbolRefAttr>),
                  "a non-empty array of function symbols");
  }
  return success();
}

LogicalResult ZBDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attr) {
  if (failed(verifyNamedAttr(op, attr)))
    return failure();
  // The schedule must cover the pipeline's stages, once per direction
  // (DualPipe runs every model stage twice).
  if (attr.getName() == kScheduleAttr)
    if (auto pipeline = op->getAttrOfType<PipelineAttr>(kPipelineAttr)) {
      auto schedule = llvm::cast<ScheduleAttr>(attr.getValue());
      int64_t expected = pipeline.getNumStages() * schedule.getDirections();
      if (schedule.getStageToRank().size() != expected)
        return op->emitError()
               << "zb.schedule maps " << schedule.getStageToRank().size()
               << " stages, zb.pipeline has " << pipeline.getNumStages()
               << " x " << schedule.getDirections() << " direction(s)";
    }
  return success();
}

LogicalResult ZBDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                  unsigned, NamedAttribute attr) {
  return verifyNamedAttr(op, attr);
}

LogicalResult ZBDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                     unsigned,
                                                     NamedAttribute attr) {
  return verifyNamedAttr(op, attr);
}
