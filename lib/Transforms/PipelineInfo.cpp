//===- PipelineInfo.cpp - reading zb.pipeline / zb.schedule ---------------===//
#include "zb/Transforms/PipelineInfo.h"

#include "zb/Dialect/ZB/IR/ZBOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>

using namespace mlir;

namespace zb {

static double toDouble(const llvm::APFloat &v) { return v.convertToDouble(); }

/// The model values of `list` (verified #zb.value entries).
static SmallVector<ModelValueInfo> readValues(ArrayAttr list) {
  SmallVector<ModelValueInfo> out;
  for (auto v : list.getAsRange<ModelValueAttr>()) {
    ArrayRef<int64_t> stages = v.getStages().asArrayRef();
    out.push_back({v.getName().str(), v.getIndex(),
                   llvm::cast<RankedTensorType>(v.getType()),
                   SmallVector<int64_t>(stages.begin(), stages.end())});
  }
  return out;
}

FailureOr<PipelineInfo> PipelineInfo::read(ModuleOp module) {
  // The dialect's verifier has checked the attribute (ZBAttributes.cpp).
  auto pipeline = module->getAttrOfType<PipelineAttr>(kPipelineAttr);
  if (!pipeline) {
    module.emitError("module has no zb.pipeline attribute: run "
                     "zb-partition-stages first");
    return failure();
  }
  PipelineInfo info;
  info.numStages = pipeline.getNumStages();
  info.numRanks = pipeline.getNumRanks();
  info.numChunks = pipeline.getNumChunks();
  info.target = pipeline.getTarget().str();
  for (auto s : pipeline.getStages().getAsRange<StageAttr>()) {
    StageInfo si;
    si.stage = s.getStage();
    si.forward = s.getForward().getValue().str();
    si.backwardInput = s.getBackwardInput().getValue().str();
    si.backwardWeight = s.getBackwardWeight().getValue().str();
    si.tF = toDouble(s.getTF());
    si.tB = toDouble(s.getTB());
    si.tW = toDouble(s.getTW());
    si.tComm = toDouble(s.getTComm());
    si.mB = s.getMB();
    si.mW = s.getMW();
    si.cvF = toDouble(s.getCvF());
    si.cvB = toDouble(s.getCvB());
    si.cvW = toDouble(s.getCvW());
    info.stages.push_back(si);
  }
  info.params = readValues(pipeline.getParams());
  info.inputs = readValues(pipeline.getInputs());
  return info;
}

sched::Problem
PipelineInfo::toProblem(int64_t microbatches,
                        llvm::ArrayRef<double> memoryLimits) const {
  sched::Problem p;
  p.numRanks = static_cast<int>(numRanks);
  p.numChunks = static_cast<int>(numChunks);
  p.numMicrobatches = static_cast<int>(microbatches);
  for (const StageInfo &s : stages) {
    p.costF.push_back(s.tF);
    p.costB.push_back(s.tB);
    p.costW.push_back(s.tW);
    p.costComm.push_back(s.tComm);
    p.memB.push_back(static_cast<double>(s.mB));
    p.memW.push_back(static_cast<double>(s.mW));
  }
  // Pass-time jitter only when every stage has been measured.
  if (llvm::all_of(stages, [](const StageInfo &s) {
        return s.cvF >= 0 && s.cvB >= 0 && s.cvW >= 0;
      }))
    for (const StageInfo &s : stages) {
      p.cvF.push_back(s.cvF);
      p.cvB.push_back(s.cvB);
      p.cvW.push_back(s.cvW);
    }
  if (memoryLimits.size() == 1)
    p.memoryLimit = memoryLimits[0];
  else
    p.memoryLimits.assign(memoryLimits.begin(), memoryLimits.end());
  return p;
}

PipelineInfo PipelineInfo::withRoutes(int directions) const {
  if (directions <= 1)
    return *this;
  PipelineInfo routed = *this;
  routed.numStages = numStages * directions;
  routed.numChunks = numChunks * directions;
  routed.stages.clear();
  for (int d = 0; d < directions; ++d)
    for (StageInfo s : stages) {
      s.stage += d * numStages;
      routed.stages.push_back(s);
    }
  auto expand = [&](SmallVector<ModelValueInfo> &values) {
    for (ModelValueInfo &v : values) {
      SmallVector<int64_t> copies;
      for (int d = 0; d < directions; ++d)
        for (int64_t s : v.stages)
          copies.push_back(d * numStages + s);
      v.stages = std::move(copies); // increasing: d-major
    }
  };
  expand(routed.params);
  expand(routed.inputs);
  return routed;
}

static ActionKind toAttrKind(sched::ActionKind k) {
  switch (k) {
  case sched::ActionKind::F:
    return ActionKind::F;
  case sched::ActionKind::B:
    return ActionKind::B;
  case sched::ActionKind::W:
    return ActionKind::W;
  }
  llvm_unreachable("unknown action kind");
}

static sched::ActionKind fromAttrKind(ActionKind k) {
  switch (k) {
  case ActionKind::F:
    return sched::ActionKind::F;
  case ActionKind::B:
    return sched::ActionKind::B;
  case ActionKind::W:
    return sched::ActionKind::W;
  }
  llvm_unreachable("unknown action kind");
}

ScheduleAttr scheduleToAttr(MLIRContext *ctx, const sched::Schedule &s,
                            const sched::SimResult &sim, int64_t microbatches,
                            const sched::OptimizerSyncTiming *sync) {
  Builder b(ctx);
  SmallVector<Attribute> ranks;
  for (const auto &actions : s.perRank) {
    SmallVector<Attribute> list;
    for (const sched::Action &a : actions)
      list.push_back(
          ActionAttr::get(ctx, toAttrKind(a.kind), a.stage, a.microbatch));
    ranks.push_back(b.getArrayAttr(list));
  }
  SmallVector<int64_t> stageToRank(s.stageToRank.begin(), s.stageToRank.end());
  SmallVector<int64_t> validate;
  if (sync)
    for (const sched::RankSync &r : sync->ranks)
      validate.push_back(static_cast<int64_t>(r.validateBefore));
  // How the schedule is costed and where its gradients leave (1F1B, GPipe
  // and 1F1B-I send the gradient after the whole backward, B then W).
  ScheduleCostConvention convention =
      s.costConvention == sched::CostConvention::StageSpan
          ? ScheduleCostConvention::StageSpan
          : ScheduleCostConvention::Makespan;
  return ScheduleAttr::get(
      ctx, s.name, microbatches, llvm::APFloat(sim.bubbleRate),
      llvm::APFloat(sim.makespan), b.getDenseF64ArrayAttr(sim.peakMemory),
      b.getDenseI64ArrayAttr(stageToRank), s.fusedBackward, convention,
      b.getArrayAttr(ranks),
      sync ? ScheduleOptimizerSync::PostValidation
           : ScheduleOptimizerSync::None,
      sync ? b.getDenseI64ArrayAttr(validate) : DenseI64ArrayAttr(),
      s.directions);
}

SmallVector<int64_t> readValidatePositions(ModuleOp module) {
  auto attr = module->getAttrOfType<ScheduleAttr>(kScheduleAttr);
  if (!attr || !attr.getValidateBefore())
    return {};
  ArrayRef<int64_t> v = attr.getValidateBefore().asArrayRef();
  return SmallVector<int64_t>(v.begin(), v.end());
}

FailureOr<sched::Schedule> readSchedule(ModuleOp module,
                                        int64_t *microbatches) {
  // The dialect's verifier has checked the attribute (ZBAttributes.cpp).
  auto attr = module->getAttrOfType<ScheduleAttr>(kScheduleAttr);
  if (!attr) {
    module.emitError("module has no zb.schedule attribute: run zb-schedule "
                     "first");
    return failure();
  }
  sched::Schedule s;
  s.name = attr.getName().str();
  ArrayRef<int64_t> s2r = attr.getStageToRank().asArrayRef();
  s.stageToRank.assign(s2r.begin(), s2r.end());
  s.fusedBackward = attr.getFusedBackward();
  s.directions = static_cast<int>(attr.getDirections());
  s.costConvention =
      attr.getCostConvention() == ScheduleCostConvention::StageSpan
          ? sched::CostConvention::StageSpan
          : sched::CostConvention::Makespan;
  *microbatches = attr.getMicrobatches();
  for (auto row : attr.getRanks().getAsRange<ArrayAttr>()) {
    std::vector<sched::Action> actions;
    for (auto a : row.getAsRange<ActionAttr>())
      actions.push_back(
          {fromAttrKind(a.getKind()), static_cast<int>(a.getStage()),
           static_cast<int>(a.getMicrobatch())});
    s.perRank.push_back(std::move(actions));
  }
  return s;
}

LogicalResult applyStageCosts(ModuleOp module,
                              ArrayRef<StageCostOverride> costs,
                              StringRef source) {
  auto pipeline = module->getAttrOfType<PipelineAttr>(kPipelineAttr);
  if (!pipeline)
    return module.emitError("no zb.pipeline: run zb-partition-stages first");
  ArrayAttr stageAttrs = pipeline.getStages();
  if (costs.size() != stageAttrs.size())
    return module.emitError(source)
           << ": "
           << llvm::formatv("has {0} stages, the model has {1}", costs.size(),
                            stageAttrs.size());
  MLIRContext *ctx = module.getContext();
  auto cvOr = [](std::optional<double> cv, const llvm::APFloat &old) {
    return cv ? llvm::APFloat(*cv) : old;
  };
  SmallVector<Attribute> updated;
  for (auto [p, a] : llvm::zip_equal(costs, stageAttrs)) {
    auto s = llvm::cast<StageAttr>(a);
    updated.push_back(StageAttr::get(
        ctx, s.getStage(), s.getForward(), s.getBackwardInput(),
        s.getBackwardWeight(), llvm::APFloat(p.tF), llvm::APFloat(p.tB),
        llvm::APFloat(p.tW), llvm::APFloat(p.tComm), s.getMB(), s.getMW(),
        cvOr(p.cvF, s.getCvF()), cvOr(p.cvB, s.getCvB()),
        cvOr(p.cvW, s.getCvW()), /*profiled=*/true));
  }
  module->setAttr(kPipelineAttr,
                  PipelineAttr::get(ctx, pipeline.getNumStages(),
                                    pipeline.getNumRanks(),
                                    pipeline.getNumChunks(),
                                    pipeline.getTarget(),
                                    ArrayAttr::get(ctx, updated),
                                    pipeline.getParams(),
                                    pipeline.getInputs()));
  return success();
}

} // namespace zb
