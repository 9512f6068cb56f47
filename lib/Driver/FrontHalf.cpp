//===- FrontHalf.cpp - partition, stage costs, schedule -------------------===//
//
// The front half of zb-compile in its phases: partitionModel (autodiff, B/W
// split, stages with the cost model's costs), the costs that replace the
// cost model's (--profile read here, --gpu-costs measured in memory on the
// stage functions' kernels), then scheduleModel (zb-schedule with a
// --schedule-file schedule parsed once, zb-lower-pipeline).
//
//===----------------------------------------------------------------------===//
#include "Phases.h"
#include "zb/Formats/Profile.h"
#include "zb/Pipelines/Pipelines.h"
#include "zb/Schedule/IO.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

using namespace mlir;

namespace zb::driver {

/// The front half's pass options from the compile options.
static void setPipelineOptions(PipelineOptions &pipeline,
                               const CompileOptions &options) {
  pipeline.numStages = options.numRanks;
  pipeline.virtualStages = options.partitionChunks();
  pipeline.microbatches = options.microbatches;
  pipeline.schedule = options.schedule;
  pipeline.scheduleFile = options.scheduleFile;
  pipeline.memoryLimit = options.memoryLimits;
  // The target itself: the GPU targets have the h100 peaks with the IR's
  // tensor sizes (lookupCostTarget).
  pipeline.target = options.target;
  pipeline.precision = options.precision;
  pipeline.optimizerSync = options.optimizerSync;
  pipeline.dpBucketBytes = options.dpBucketBytes;
  pipeline.fuseAttention = options.fuseAttention;
  pipeline.fuseCrossEntropy = options.fuseCrossEntropy;
  // The attention kernels read the token-major q, k, v and result in
  // place: B rebuilds its head views of them instead of F saving copies.
  pipeline.attentionViews =
      options.gpuKernels() && options.cuda.attentionKernel &&
      options.cuda.attentionTokenMajor;
}

LogicalResult partitionModel(ModuleOp module, const CompileOptions &options) {
  PassManager pm = PassManager::on<ModuleOp>(module.getContext());
  PipelineOptions pipeline;
  setPipelineOptions(pipeline, options);
  buildPartitionPipeline(pm, pipeline);
  if (options.timing)
    pm.enableTiming();
  return pm.run(module);
}

LogicalResult scheduleModel(ModuleOp module, const CompileOptions &options,
                            const sched::Schedule *fileSchedule) {
  PassManager pm = PassManager::on<ModuleOp>(module.getContext());
  PipelineOptions pipeline;
  setPipelineOptions(pipeline, options);
  buildSchedulePipeline(pm, pipeline, fileSchedule);
  if (options.timing)
    pm.enableTiming();
  return pm.run(module);
}

llvm::Expected<std::vector<StageCostOverride>>
readProfileCosts(llvm::StringRef path) {
  llvm::Expected<formats::Profile> profile = formats::readProfile(path);
  if (!profile)
    return profile.takeError();
  std::vector<StageCostOverride> costs;
  for (const formats::ProfiledStage &p : profile->stages)
    costs.push_back({p.tF, p.tB, p.tW, p.tComm, p.cvF, p.cvB, p.cvW});
  return costs;
}

llvm::Expected<sched::Schedule> resolveScheduleFile(CompileOptions &o) {
  auto error = [&](const llvm::Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--schedule-file " + o.scheduleFile + ": " +
                                       msg);
  };
  auto file = sched::loadScheduleFile(o.scheduleFile);
  if (!file)
    return error(llvm::toString(file.takeError()));
  sched::Schedule &schedule = file->schedule;
  int64_t ranks = schedule.perRank.size(), microbatches = 0;
  std::string name = llvm::sys::path::filename(o.scheduleFile).str();
  if (file->problem) {
    ranks = file->problem->numRanks;
    microbatches = file->problem->numMicrobatches;
    if (!schedule.name.empty())
      name = schedule.name;
  } else {
    for (size_t r = 0; r < schedule.perRank.size(); ++r)
      for (const sched::Action &a : schedule.perRank[r]) {
        // A microbatch beyond --microbatches is named with its rank (e.g.
        // torch 2.15's Schedule1F1B order runs F<m> on the last rank).
        if (o.microbatches > 0 && a.microbatch >= o.microbatches &&
            ranks == o.numRanks)
          return error(
              llvm::formatv("rank {0} runs {1}(stage {2}, microbatch {3}), "
                            "beyond --microbatches {4} (microbatches 0..{5})",
                            r, sched::kindName(a.kind), a.stage, a.microbatch,
                            o.microbatches, o.microbatches - 1)
                  .str());
        microbatches = std::max<int64_t>(microbatches, a.microbatch + 1);
      }
  }
  if (ranks != o.numRanks)
    return error(
        llvm::formatv("has {0} ranks, --stages is {1}", ranks, o.numRanks)
            .str());
  if (microbatches != o.microbatches)
    return error(llvm::formatv("has {0} microbatches, --microbatches is {1}",
                               microbatches, o.microbatches)
                     .str());
  int64_t stages = schedule.stageToRank.size();
  if (ranks == 0 || stages % ranks != 0)
    return error(llvm::formatv("{0} stages on {1} ranks: every rank must run "
                               "the same number of chunks",
                               stages, ranks)
                     .str());
  int64_t chunks = stages / ranks;
  if (o.virtualStages > 0 && o.virtualStages != chunks)
    return error(llvm::formatv("has {0} chunks per rank, --virtual-stages is "
                               "{1}",
                               chunks, o.virtualStages)
                     .str());
  o.virtualStages = chunks;
  o.fileDirections = schedule.directions;
  o.fileScheduleName = name;
  // The plan's and the IR's name of it (zb.schedule, plan.json "schedule").
  schedule.name = o.scheduleName();
  return std::move(schedule);
}

LogicalResult runFrontHalf(ModuleOp module, const CompileOptions &options) {
  CompileOptions resolved = options;
  std::optional<sched::Schedule> fileSchedule;
  auto fail = [&](llvm::Error error) {
    return module.emitError(llvm::toString(std::move(error)));
  };
  if (!options.scheduleFile.empty()) {
    llvm::Expected<sched::Schedule> schedule = resolveScheduleFile(resolved);
    if (!schedule)
      return fail(schedule.takeError());
    fileSchedule = std::move(*schedule);
  }
  if (failed(partitionModel(module, resolved)))
    return failure();
  if (!options.profile.empty()) {
    llvm::Expected<std::vector<StageCostOverride>> costs =
        readProfileCosts(options.profile);
    if (!costs)
      return fail(costs.takeError());
    if (failed(applyStageCosts(module, *costs,
                               "profile '" + options.profile + "'")))
      return failure();
  }
  return scheduleModel(module, resolved,
                       fileSchedule ? &*fileSchedule : nullptr);
}

} // namespace zb::driver
