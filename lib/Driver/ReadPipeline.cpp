//===- Pipeline.cpp - what the back half reads from the pipeline module ---===//
#include "zb/Dialect/ZB/IR/ZBOps.h"
#include "Phases.h"
#include "zb/Schedule/Registry.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace zb::driver {

FailureOr<SmallVector<RankArg>> readRankArgs(func::FuncOp step,
                                             const PipelineInfo &info) {
  // Verified by the dialect: an array of #zb.rank_arg (ZBAttributes.cpp).
  auto roles = step->getAttrOfType<ArrayAttr>(kRankArgsAttr);
  if (!roles)
    return step.emitError("step function has no zb.rank_args");
  SmallVector<RankArg> args;
  for (auto role : roles.getAsRange<RankArgAttr>()) {
    StringRef kind = stringifyRankArgKind(role.getKind());
    RankArg arg{kind.str(), std::nullopt};
    if (role.getKind() != RankArgKind::loss) {
      // #zb.rank_arg<param, i> names argument i of the model function: find
      // its position among the parameters (param, grad) or inputs (input).
      const auto &list =
          role.getKind() == RankArgKind::input ? info.inputs : info.params;
      const auto *it = llvm::find_if(list, [&](const ModelValueInfo &v) {
        return v.index == role.getIndex();
      });
      if (it == list.end())
        return step.emitError("zb.rank_args: ")
               << role << " names no model "
               << (role.getKind() == RankArgKind::input ? "input"
                                                        : "parameter");
      arg.index = it - list.begin();
    }
    args.push_back(std::move(arg));
  }
  return args;
}

/// The step function's zb.channel_order (zb-lower-pipeline) into `sends`;
/// left empty when absent.
static LogicalResult
readSends(func::FuncOp step,
          std::optional<std::vector<formats::SentMessage>> &sends) {
  auto list = step->getAttrOfType<ArrayAttr>(kChannelOrderAttr);
  if (!list)
    return success();
  sends.emplace();
  for (Attribute a : list) {
    auto m = dyn_cast<DenseI64ArrayAttr>(a);
    if (!m || m.size() != 3)
      return step.emitError(
          "zb.channel_order: expected [peer, tag, bytes] arrays");
    sends->push_back({static_cast<int32_t>(m[0]), static_cast<int32_t>(m[1]),
                      m[2]});
  }
  return success();
}

FailureOr<LoweredPipeline> readPipeline(ModuleOp module,
                                        const CompileOptions &options) {
  FailureOr<PipelineInfo> info = PipelineInfo::read(module);
  int64_t numMicrobatches = 0;
  FailureOr<sched::Schedule> schedule = readSchedule(module, &numMicrobatches);
  if (failed(info) || failed(schedule))
    return failure();
  LoweredPipeline pipeline;
  pipeline.modelProblem =
      info->toProblem(options.microbatches, options.memoryLimits);
  // DualPipe: every model stage once per direction, as zb-lower-pipeline
  // lowered it (plan.json's stages, tied copies and costs follow).
  pipeline.info = info->withRoutes(schedule->directions);
  pipeline.schedule = std::move(*schedule);
  pipeline.validateBefore = readValidatePositions(module);
  pipeline.numMicrobatches = numMicrobatches;
  pipeline.problem =
      pipeline.info.toProblem(options.microbatches, options.memoryLimits);
  pipeline.simulation = sched::simulate(pipeline.problem, pipeline.schedule);
  // The gradient buckets of each model stage's last W.
  pipeline.weightBuckets.resize(info->stages.size());
  for (auto [s, st] : llvm::enumerate(info->stages)) {
    auto w = module.lookupSymbol<func::FuncOp>(st.backwardWeight);
    auto names =
        w ? w->getAttrOfType<ArrayAttr>(kWeightClustersAttr) : ArrayAttr();
    if (!names)
      continue;
    for (auto name : names.getAsRange<FlatSymbolRefAttr>()) {
      auto g = module.lookupSymbol<func::FuncOp>(name.getValue());
      if (!g)
        return w.emitError("zb.weight_clusters names @")
               << name.getValue() << ", which the module does not define";
      std::vector<int64_t> params;
      for (unsigned i = 0; i < g.getNumResults(); ++i)
        if (auto index = g.getResultAttrOfType<IntegerAttr>(i, "zb.index"))
          if (!llvm::is_contained(params, index.getInt()))
            params.push_back(index.getInt());
      pipeline.weightBuckets[s].push_back(std::move(params));
    }
  }
  pipeline.rankArgs.resize(pipeline.numRanks());
  pipeline.rankSends.resize(pipeline.numRanks());
  for (auto fn : module.getOps<func::FuncOp>()) {
    auto rank = fn->getAttrOfType<IntegerAttr>(kStepRankAttr);
    if (!rank)
      continue;
    if (rank.getInt() < 0 || rank.getInt() >= pipeline.numRanks())
      return fn.emitError("zb.rank ")
             << rank.getInt() << " out of range: the schedule has "
             << pipeline.numRanks() << " ranks";
    FailureOr<SmallVector<RankArg>> args = readRankArgs(fn, pipeline.info);
    if (failed(args))
      return failure();
    pipeline.rankArgs[rank.getInt()] = std::move(*args);
    if (failed(readSends(fn, pipeline.rankSends[rank.getInt()])))
      return failure();
  }
  // Index ranges of integer batch inputs, from the stage functions' uses;
  // the value a cross-entropy ignores, where every use ignores it.
  std::map<int64_t, std::optional<int64_t>> ignores;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal())
      continue;
    for (BlockArgument arg : fn.getArguments()) {
      auto role = fn.getArgAttrOfType<RoleAttr>(arg.getArgNumber(), kRoleAttr);
      auto index = fn.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(),
                                                    "zb.index");
      if (!role || role.getValue() != Role::batch || !index)
        continue;
      // The argument's values, also through ops that only move them
      // (targets [B, S] reshaped to [B*S] before the cross-entropy).
      SmallVector<Value> values{arg};
      for (size_t i = 0; i < values.size(); ++i)
        for (Operation *user : values[i].getUsers()) {
          if (isa<ReshapeOp, TransposeOp, BroadcastInDimOp, SliceOp, SplitOp,
                  ConcatOp>(user)) {
            for (Value r : user->getResults())
              if (!llvm::is_contained(values, r))
                values.push_back(r);
            continue;
          }
          Value v = values[i];
          int64_t range = 0;
          std::optional<int64_t> ignore;
          if (auto g = dyn_cast<GatherOp>(user); g && g.getIndices() == v)
            range = g.getTable().getType().getShape().front();
          else if (auto ce = dyn_cast<CrossEntropyOp>(user);
                   ce && ce.getTargets() == v) {
            range = ce.getLogits().getType().getShape().back();
            ignore = ce.getIgnoreIndex();
          } else if (auto oh = dyn_cast<OneHotOp>(user))
            range = oh.getType().getShape().back();
          if (range <= 0)
            continue;
          auto [seen, first] = ignores.try_emplace(index.getInt(), ignore);
          if (!first && seen->second != ignore)
            seen->second.reset();
          auto [it, fresh] =
              pipeline.indexRanges.try_emplace(index.getInt(), range);
          if (!fresh)
            it->second = std::min(it->second, range);
        }
    }
  }
  for (auto &[index, ignore] : ignores)
    if (ignore)
      pipeline.indexIgnores[index] = *ignore;
  return pipeline;
}

llvm::Expected<std::vector<Prediction>>
predictBubbleRates(const LoweredPipeline &pipeline,
                   const CompileOptions &options) {
  // 1F1B and ZB-H1 for comparison, then this plan's schedule unless it is
  // one of them.
  struct Entry {
    std::string name;
    std::optional<sched::ScheduleKind> kind; ///< none: this plan's
  };
  SmallVector<Entry> entries;
  bool listed = false;
  for (sched::ScheduleKind kind :
       {sched::ScheduleKind::OneFOneB, sched::ScheduleKind::ZBH1}) {
    bool thisPlan = options.scheduleFile.empty() && kind == options.schedule;
    listed |= thisPlan;
    entries.push_back({sched::scheduleName(kind).str(),
                       thisPlan ? std::nullopt : std::optional(kind)});
  }
  if (!listed)
    entries.push_back({options.scheduleName(), std::nullopt});
  // Gradient bytes (float32) of each parameter, counted on the stage of
  // its first use (a tied parameter too), and the buckets each stage's last
  // W announces in order (zb-cluster-weight-gradients); a W not split is
  // one bucket at its end. Model stage s % L for global stage s.
  std::map<int64_t, std::pair<int64_t, double>> stageAndBytes;
  for (const ModelValueInfo &p : pipeline.info.params)
    if (!p.stages.empty())
      stageAndBytes[p.index] = {p.stages.front(),
                                4.0 * (double)p.type.getNumElements()};
  auto bucketBytesOf = [&](size_t numStages) {
    std::vector<std::vector<double>> out(numStages);
    size_t numModelStages = pipeline.weightBuckets.size();
    for (size_t s = 0; s < numStages; ++s) {
      const std::vector<std::vector<int64_t>> *split =
          numModelStages && !pipeline.weightBuckets[s % numModelStages].empty()
              ? &pipeline.weightBuckets[s % numModelStages]
              : nullptr;
      if (!split) {
        double bytes = 0;
        for (auto &[index, sb] : stageAndBytes)
          if (sb.first == (int64_t)s)
            bytes += sb.second;
        if (bytes > 0)
          out[s].push_back(bytes);
        continue;
      }
      for (const std::vector<int64_t> &bucket : *split) {
        double bytes = 0;
        for (int64_t p : bucket) {
          auto it = stageAndBytes.find(p);
          if (it != stageAndBytes.end() && it->second.first == (int64_t)s)
            bytes += it->second.second;
        }
        out[s].push_back(bytes);
      }
    }
    return out;
  };
  std::vector<Prediction> predictions;
  for (const Entry &entry : entries) {
    const std::string &name = entry.name;
    // This plan: the schedule as zb-lower-pipeline lowered it (not built a
    // second time: an ILP would run again). The others: the paper's
    // schedules, for comparison.
    llvm::Expected<sched::Schedule> schedule =
        !entry.kind ? llvm::Expected<sched::Schedule>(pipeline.schedule)
                    : sched::buildSchedule(pipeline.modelProblem, *entry.kind);
    if (!schedule) {
      llvm::consumeError(schedule.takeError());
      continue;
    }
    const sched::Problem &problem =
        entry.kind ? pipeline.modelProblem : pipeline.problem;
    Prediction prediction{name, sched::simulate(problem, *schedule),
                          std::nullopt, std::nullopt};
    if (options.dataParallel > 1) {
      sched::DataParallelModel model;
      model.numReplicas = (int)options.dataParallel;
      model.bandwidthGBps = options.dpBandwidthGBps;
      model.latencyMs = options.dpLatencyMs;
      // Gradient bytes per global stage (float32), a tied parameter on the
      // stage of its first use.
      // The buckets of each global stage (the comparisons' schedules have
      // the model's stages once, a dualpipe plan twice).
      model.bucketBytes = bucketBytesOf(schedule->stageToRank.size());
      auto timing = sched::simulateDataParallel(
          problem, *schedule, prediction.simulation, model);
      if (!timing)
        return llvm::createStringError(
            "--data-parallel: " + llvm::toString(timing.takeError()));
      prediction.dataParallel = std::move(*timing);
    }
    // With a profile that measured the pass-to-pass variation: the
    // expected per-rank bubble under that variation (Monte Carlo).
    if (!problem.cvF.empty()) {
      auto jitter = sched::estimateJitter(problem, *schedule);
      if (!jitter)
        return llvm::createStringError("--profile: " +
                                       llvm::toString(jitter.takeError()));
      prediction.jitter = std::move(*jitter);
    }
    predictions.push_back(std::move(prediction));
  }
  return predictions;
}

} // namespace zb::driver
