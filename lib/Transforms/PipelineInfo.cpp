//===- PipelineInfo.cpp - reading zb.pipeline / zb.schedule ---------------===//
#include "zb/Transforms/PipelineInfo.h"

#include "zbhost/Profile.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>

using namespace mlir;

namespace zb {

static double getF64(DictionaryAttr d, StringRef key) {
  if (auto f = d.getAs<FloatAttr>(key))
    return f.getValueAsDouble();
  if (auto i = d.getAs<IntegerAttr>(key))
    return static_cast<double>(i.getInt());
  return 0;
}

FailureOr<PipelineInfo> PipelineInfo::read(ModuleOp module) {
  auto dict = module->getAttrOfType<DictionaryAttr>("zb.pipeline");
  if (!dict) {
    module.emitError("module has no zb.pipeline attribute: run "
                     "zb-partition-stages first");
    return failure();
  }
  PipelineInfo info;
  auto n = dict.getAs<IntegerAttr>("num_stages");
  auto stages = dict.getAs<ArrayAttr>("stages");
  auto params = dict.getAs<ArrayAttr>("params");
  auto inputs = dict.getAs<ArrayAttr>("inputs");
  if (!n || !stages || !params || !inputs ||
      static_cast<int64_t>(stages.size()) != n.getInt()) {
    module.emitError("malformed zb.pipeline attribute: expected num_stages, "
                     "stages (one per stage), params and inputs");
    return failure();
  }
  info.numStages = n.getInt();
  info.numRanks = info.numStages;
  if (auto r = dict.getAs<IntegerAttr>("num_ranks"))
    info.numRanks = r.getInt();
  if (auto c = dict.getAs<IntegerAttr>("num_chunks"))
    info.numChunks = c.getInt();
  if (info.numRanks * info.numChunks != info.numStages) {
    module.emitError("malformed zb.pipeline: num_ranks x num_chunks != "
                     "num_stages");
    return failure();
  }
  if (auto t = dict.getAs<StringAttr>("target"))
    info.target = t.str();
  for (Attribute a : stages) {
    auto s = llvm::dyn_cast<DictionaryAttr>(a);
    auto fwd = s ? s.getAs<FlatSymbolRefAttr>("forward") : nullptr;
    auto bin = s ? s.getAs<FlatSymbolRefAttr>("backward_input") : nullptr;
    auto bw = s ? s.getAs<FlatSymbolRefAttr>("backward_weight") : nullptr;
    if (!fwd || !bin || !bw) {
      module.emitError("malformed stage entry in zb.pipeline: ") << a;
      return failure();
    }
    StageInfo si;
    si.stage = info.stages.size();
    si.forward = fwd.getValue().str();
    si.backwardInput = bin.getValue().str();
    si.backwardWeight = bw.getValue().str();
    si.tF = getF64(s, "t_f");
    si.tB = getF64(s, "t_b");
    si.tW = getF64(s, "t_w");
    si.tComm = getF64(s, "t_comm");
    si.mB = static_cast<int64_t>(getF64(s, "m_b"));
    si.mW = static_cast<int64_t>(getF64(s, "m_w"));
    if (s.get("cv_f") && s.get("cv_b") && s.get("cv_w")) {
      si.cvF = getF64(s, "cv_f");
      si.cvB = getF64(s, "cv_b");
      si.cvW = getF64(s, "cv_w");
    }
    info.stages.push_back(si);
  }
  auto readValues = [&](ArrayAttr arr, SmallVector<ModelValueInfo> &out,
                        bool isParam) -> LogicalResult {
    for (Attribute a : arr) {
      auto d = llvm::dyn_cast<DictionaryAttr>(a);
      auto name = d ? d.getAs<StringAttr>("name") : nullptr;
      auto index = d ? d.getAs<IntegerAttr>("index") : nullptr;
      auto type = d ? d.getAs<TypeAttr>("type") : nullptr;
      if (!name || !index || !type ||
          !llvm::isa<RankedTensorType>(type.getValue())) {
        module.emitError("malformed value entry in zb.pipeline: ") << a;
        return failure();
      }
      ModelValueInfo v{name.str(),
                       index.getInt(),
                       llvm::cast<RankedTensorType>(type.getValue()),
                       {}};
      if (isParam) {
        if (auto st = d.getAs<DenseI64ArrayAttr>("stages"))
          v.stages.assign(st.asArrayRef().begin(), st.asArrayRef().end());
        else if (auto st = d.getAs<IntegerAttr>("stage"))
          v.stages.push_back(st.getInt());
      } else if (auto st = d.getAs<DenseI64ArrayAttr>("stages")) {
        v.stages.assign(st.asArrayRef().begin(), st.asArrayRef().end());
      }
      out.push_back(std::move(v));
    }
    return success();
  };
  if (failed(readValues(params, info.params, true)) ||
      failed(readValues(inputs, info.inputs, false)))
    return failure();
  return info;
}

sched::Problem PipelineInfo::toProblem(int64_t microbatches,
                                       double memoryLimit) const {
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
  p.memoryLimit = memoryLimit;
  return p;
}

DictionaryAttr scheduleToAttr(MLIRContext *ctx, const sched::Schedule &s,
                              const sched::SimResult &sim,
                              int64_t microbatches) {
  Builder b(ctx);
  SmallVector<Attribute> ranks;
  for (const auto &actions : s.perRank) {
    SmallVector<Attribute> list;
    for (const sched::Action &a : actions)
      list.push_back(b.getStringAttr(llvm::formatv(
          "{0}{1}.{2}", sched::kindName(a.kind), a.stage, a.microbatch)));
    ranks.push_back(b.getArrayAttr(list));
  }
  SmallVector<int64_t> stageToRank(s.stageToRank.begin(), s.stageToRank.end());
  NamedAttrList attrs;
  attrs.set("name", b.getStringAttr(s.name));
  attrs.set("microbatches", b.getI64IntegerAttr(microbatches));
  attrs.set("bubble_rate", b.getF64FloatAttr(sim.bubbleRate));
  attrs.set("makespan_ms", b.getF64FloatAttr(sim.makespan));
  attrs.set("peak_memory", b.getDenseF64ArrayAttr(sim.peakMemory));
  attrs.set("stage_to_rank", b.getDenseI64ArrayAttr(stageToRank));
  // How the schedule is costed and where its gradients leave (1F1B, GPipe
  // and 1F1B-I send the gradient after the whole backward, B then W).
  if (s.fusedBackward)
    attrs.set("fused_backward", b.getUnitAttr());
  if (s.costConvention == sched::CostConvention::StageSpan)
    attrs.set("cost_convention", b.getStringAttr("stage_span"));
  attrs.set("ranks", b.getArrayAttr(ranks));
  return attrs.getDictionary(ctx);
}

FailureOr<sched::Schedule> readSchedule(ModuleOp module,
                                        int64_t *microbatches) {
  auto dict = module->getAttrOfType<DictionaryAttr>("zb.schedule");
  if (!dict) {
    module.emitError("module has no zb.schedule attribute: run zb-schedule "
                     "first");
    return failure();
  }
  auto ranks = dict.getAs<ArrayAttr>("ranks");
  auto s2r = dict.getAs<DenseI64ArrayAttr>("stage_to_rank");
  auto mb = dict.getAs<IntegerAttr>("microbatches");
  if (!ranks || !s2r || !mb) {
    module.emitError("malformed zb.schedule: expected ranks, stage_to_rank "
                     "and microbatches");
    return failure();
  }
  sched::Schedule s;
  if (auto name = dict.getAs<StringAttr>("name"))
    s.name = name.str();
  s.stageToRank.assign(s2r.asArrayRef().begin(), s2r.asArrayRef().end());
  s.fusedBackward = dict.contains("fused_backward");
  if (auto cc = dict.getAs<StringAttr>("cost_convention"))
    s.costConvention = cc.getValue() == "stage_span"
                           ? sched::CostConvention::StageSpan
                           : sched::CostConvention::Makespan;
  *microbatches = mb.getInt();
  for (Attribute r : ranks) {
    auto list = llvm::dyn_cast<ArrayAttr>(r);
    if (!list) {
      module.emitError("malformed zb.schedule rank list: ") << r;
      return failure();
    }
    std::vector<sched::Action> actions;
    for (Attribute a : list) {
      auto str = llvm::dyn_cast<StringAttr>(a);
      StringRef text = str ? str.getValue() : StringRef();
      sched::Action act{sched::ActionKind::F, 0, 0};
      bool ok = !text.empty();
      if (ok) {
        char k = text.front();
        act.kind = k == 'F'   ? sched::ActionKind::F
                   : k == 'B' ? sched::ActionKind::B
                              : sched::ActionKind::W;
        ok = (k == 'F' || k == 'B' || k == 'W');
        auto [st, m] = text.drop_front().split('.');
        ok = ok && !st.getAsInteger(10, act.stage) &&
             !m.getAsInteger(10, act.microbatch);
      }
      if (!ok) {
        module.emitError("malformed action '")
            << text << "' in zb.schedule (expected e.g. \"F0.3\")";
        return failure();
      }
      actions.push_back(act);
    }
    s.perRank.push_back(std::move(actions));
  }
  return s;
}

} // namespace zb

namespace zb {

LogicalResult applyProfile(ModuleOp module, StringRef path) {
  llvm::Expected<host::Profile> profile = host::readProfile(path);
  if (!profile)
    return module.emitError(llvm::toString(profile.takeError()));
  auto dict = module->getAttrOfType<DictionaryAttr>("zb.pipeline");
  auto stageAttrs = dict ? dict.getAs<ArrayAttr>("stages") : nullptr;
  if (!stageAttrs)
    return module.emitError("no zb.pipeline: run zb-partition-stages first");
  if (profile->stages.size() != stageAttrs.size())
    return module.emitError("profile '")
           << path << "': "
           << llvm::formatv("has {0} stages, the model has {1}",
                            profile->stages.size(), stageAttrs.size());
  Builder b(module.getContext());
  SmallVector<Attribute> updated;
  for (auto [s, a] : llvm::zip_equal(profile->stages, stageAttrs)) {
    NamedAttrList attrs(llvm::cast<DictionaryAttr>(a));
    for (auto [key, v] : {std::pair{"t_f", s.tF}, std::pair{"t_b", s.tB},
                          std::pair{"t_w", s.tW}, std::pair{"t_comm", s.tComm}})
      attrs.set(key, b.getF64FloatAttr(v));
    for (auto [key, cv] : {std::pair{"cv_f", s.cvF}, std::pair{"cv_b", s.cvB},
                           std::pair{"cv_w", s.cvW}})
      if (cv)
        attrs.set(key, b.getF64FloatAttr(*cv));
    attrs.set("profiled", b.getUnitAttr());
    updated.push_back(attrs.getDictionary(module.getContext()));
  }
  NamedAttrList pipeline(dict);
  pipeline.set("stages", b.getArrayAttr(updated));
  module->setAttr("zb.pipeline", pipeline.getDictionary(module.getContext()));
  return success();
}

} // namespace zb
