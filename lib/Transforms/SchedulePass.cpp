//===- SchedulePass.cpp - zb-schedule: F/B/W order per rank ---------------===//
//
// Feeds the per-stage costs (T_F, T_B, T_W, T_comm in ms) and memory (M_B,
// M_W in bytes) that zb-partition-stages derived into lib/Schedule, verifies
// the schedule and attaches it to the module as `zb.schedule`.
//
// zb-compile hands this pass its inputs as data: measured or GPU-kernel
// costs are already in `zb.pipeline` (applyStageCosts), a --schedule-file
// schedule comes parsed (createZBSchedule(options, schedule)). The
// `profile` and `schedule-file` options name files for zb-opt.
//
//===----------------------------------------------------------------------===//
#include "zb/Formats/Profile.h"
#include "zb/Schedule/IO.h"
#include "zb/Schedule/Registry.h"
#include "zb/Schedule/Schedule.h"
#include "zb/Transforms/Passes.h"
#include "zb/Transforms/PipelineInfo.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"

namespace zb {
#define GEN_PASS_DEF_ZBSCHEDULE
#include "zb/Transforms/Passes.h.inc"
} // namespace zb

using namespace mlir;
using namespace zb;

/// zb-opt's `profile=FILE`: the file's costs applied to `zb.pipeline`.
static LogicalResult applyProfileFile(ModuleOp module, StringRef path) {
  llvm::Expected<formats::Profile> profile = formats::readProfile(path);
  if (!profile)
    return module.emitError(llvm::toString(profile.takeError()));
  SmallVector<StageCostOverride> costs;
  for (const formats::ProfiledStage &p : profile->stages)
    costs.push_back({p.tF, p.tB, p.tW, p.tComm, p.cvF, p.cvB, p.cvW});
  return applyStageCosts(module, costs, ("profile '" + path + "'").str());
}

/// zb-opt's `schedule-file=FILE` (sched::loadScheduleFile).
static llvm::Expected<sched::Schedule> readScheduleFile(StringRef path,
                                                        int numRanks) {
  auto file = sched::loadScheduleFile(path, numRanks);
  if (!file)
    return file.takeError();
  return std::move(file->schedule);
}

namespace {
struct ZBSchedulePass : public zb::impl::ZBScheduleBase<ZBSchedulePass> {
  using Base::Base;
  ZBSchedulePass(const ZBScheduleOptions &options, sched::Schedule schedule,
                 StringRef path)
      : Base(options), given(std::move(schedule)), givenPath(path.str()) {}

  /// The schedule of a file (given, or read from `scheduleFile`), placed on
  /// this pipeline's stages (the file's stage-to-rank mapping must be the
  /// pipeline's: stage s on rank s mod p, the interleaved mapping, or the V
  /// shape).
  llvm::Expected<sched::Schedule> fileSchedule(sched::Problem &problem,
                                               const PipelineInfo &info) {
    StringRef what = given ? StringRef(givenPath) : StringRef(scheduleFile);
    auto fail = [&](const llvm::Twine &message) {
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "schedule file '" + what +
                                         "': " + message);
    };
    llvm::Expected<sched::Schedule> read =
        given ? llvm::Expected<sched::Schedule>(*given)
              : readScheduleFile(scheduleFile, problem.numRanks);
    if (!read)
      return fail(llvm::toString(read.takeError()));
    sched::Schedule schedule = std::move(*read);
    // zb-compile names a schedule it read itself ("file:<name>"); from
    // zb-opt the schedule takes the `algorithm` option as its name.
    if (!given)
      schedule.name = algorithm;
    // A bidirectional schedule (DualPipe) runs every model stage twice.
    if (schedule.directions > 1)
      problem = info.withRoutes(schedule.directions)
                    .toProblem(microbatches, memoryLimits);
    if (static_cast<int>(schedule.stageToRank.size()) != problem.numStages())
      return fail(llvm::formatv("{0} stages, the pipeline has {1} ({2} "
                                "ranks x {3} chunks)",
                                schedule.stageToRank.size(),
                                problem.numStages(), problem.numRanks,
                                problem.numChunks)
                      .str());
    return schedule;
  }

  /// The optimizer-sync option: none or post-validation.
  FailureOr<sched::OptimizerSync> syncMode(ModuleOp module) {
    llvm::Expected<sched::OptimizerSync> mode =
        sched::parseOptimizerSync(optimizerSync);
    if (mode && *mode != sched::OptimizerSync::AllReduce)
      return *mode;
    if (!mode)
      llvm::consumeError(mode.takeError());
    module.emitError("zb-schedule: optimizer-sync must be none or "
                     "post-validation, got '")
        << optimizerSync << "'";
    return failure();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!profile.empty() && failed(applyProfileFile(module, profile)))
      return signalPassFailure();
    FailureOr<PipelineInfo> info = PipelineInfo::read(module);
    if (failed(info))
      return signalPassFailure();
    // DualPipe schedules each model stage once per direction.
    int directions = 1;
    if (llvm::Expected<sched::ScheduleKind> kind =
            sched::parseScheduleKind(algorithm))
      directions = sched::scheduleDirections(*kind);
    else
      llvm::consumeError(kind.takeError());
    const bool fromFile = given || !scheduleFile.empty();
    sched::Problem problem =
        info->withRoutes(fromFile ? 1 : directions)
            .toProblem(microbatches, memoryLimits);
    llvm::Expected<sched::Schedule> schedule =
        fromFile ? fileSchedule(problem, *info)
                 : sched::buildSchedule(problem, algorithm);
    if (!schedule) {
      module.emitError("zb-schedule: ") << llvm::toString(schedule.takeError());
      return signalPassFailure();
    }
    if (llvm::Error err = sched::verify(problem, *schedule)) {
      module.emitError("zb-schedule: schedule '")
          << schedule->name
          << "' failed verification: " << llvm::toString(std::move(err));
      return signalPassFailure();
    }
    sched::SimResult sim = sched::simulate(problem, *schedule);
    FailureOr<sched::OptimizerSync> mode = syncMode(module);
    if (failed(mode))
      return signalPassFailure();
    std::optional<sched::OptimizerSyncTiming> sync;
    if (*mode == sched::OptimizerSync::PostValidation) {
      sched::OptimizerSyncOptions options;
      options.mode = *mode;
      auto timing = sched::simulateOptimizerSync(problem, *schedule, options);
      llvm::Error err =
          timing ? sched::verifyOptimizerSync(problem, *schedule, *timing)
                 : timing.takeError();
      if (err) {
        module.emitError("zb-schedule: ") << llvm::toString(std::move(err));
        return signalPassFailure();
      }
      sync = std::move(*timing);
    }
    module->setAttr("zb.schedule",
                    scheduleToAttr(module.getContext(), *schedule, sim,
                                   microbatches, sync ? &*sync : nullptr));
  }

  /// --schedule-file's schedule as zb-compile read it, and its file
  /// (createZBSchedule).
  std::optional<sched::Schedule> given;
  std::string givenPath;
};
} // namespace

std::unique_ptr<Pass> zb::createZBSchedule(const ZBScheduleOptions &options,
                                           sched::Schedule schedule,
                                           StringRef path) {
  return std::make_unique<ZBSchedulePass>(options, std::move(schedule), path);
}
