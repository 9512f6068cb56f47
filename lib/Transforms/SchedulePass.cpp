//===- SchedulePass.cpp - zb-schedule: F/B/W order per rank ---------------===//
//
// Feeds the per-stage costs (T_F, T_B, T_W, T_comm in ms) and memory (M_B,
// M_W in bytes) that zb-partition-stages derived into lib/Schedule, verifies
// the schedule and attaches it to the module as `zb.schedule`.
//
//===----------------------------------------------------------------------===//
#include "zb/Schedule/Formats.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "zb/Schedule/Registry.h"
#include "zb/Schedule/Schedule.h"
#include "zb/Transforms/Passes.h"
#include "zb/Transforms/PipelineInfo.h"

#include "mlir/IR/Builders.h"

namespace zb {
#define GEN_PASS_DEF_ZBSCHEDULE
#include "zb/Transforms/Passes.h.inc"
} // namespace zb

using namespace mlir;
using namespace zb;

namespace {
struct ZBSchedulePass : public zb::impl::ZBScheduleBase<ZBSchedulePass> {
  using Base::Base;
  /// schedule-file: PyTorch CSV or zb JSON, placed on this pipeline's
  /// stages (the file's stage-to-rank mapping must be the pipeline's:
  /// stage s on rank s mod p, the interleaved mapping, or the V shape).
  llvm::Expected<sched::Schedule>
  readScheduleFile(const sched::Problem &problem) {
    auto fail = [&](const llvm::Twine &message) {
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "schedule file '" + scheduleFile +
                                         "': " + message);
    };
    auto buffer = llvm::MemoryBuffer::getFile(scheduleFile);
    if (!buffer)
      return fail("cannot read: " + buffer.getError().message());
    llvm::StringRef text = (*buffer)->getBuffer();
    const bool json = sched::looksLikeScheduleJSON(text);
    auto file = sched::readScheduleFile(text, json, problem.numRanks);
    if (!file)
      return fail(llvm::toString(file.takeError()));
    sched::Schedule schedule = std::move(file->schedule);
    // zb's own simulator convention for a CSV schedule it did not build.
    if (!json)
      schedule.costConvention = sched::CostConvention::StageSpan;
    schedule.name = algorithm;
    if (static_cast<int>(schedule.stageToRank.size()) != problem.numStages())
      return fail(llvm::formatv("{0} stages, the pipeline has {1} ({2} "
                                "ranks x {3} chunks)",
                                schedule.stageToRank.size(),
                                problem.numStages(), problem.numRanks,
                                problem.numChunks)
                      .str());
    return schedule;
  }
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!profile.empty() && failed(applyProfile(module, profile)))
      return signalPassFailure();
    FailureOr<PipelineInfo> info = PipelineInfo::read(module);
    if (failed(info))
      return signalPassFailure();
    sched::Problem problem = info->toProblem(microbatches, memoryLimits);
    llvm::Expected<sched::Schedule> schedule =
        scheduleFile.empty() ? sched::buildSchedule(problem, algorithm)
                             : readScheduleFile(problem);
    if (!schedule) {
      module.emitError("zb-schedule: ")
          << llvm::toString(schedule.takeError());
      return signalPassFailure();
    }
    if (llvm::Error err = sched::verify(problem, *schedule)) {
      module.emitError("zb-schedule: schedule '")
          << algorithm << "' failed verification: "
          << llvm::toString(std::move(err));
      return signalPassFailure();
    }
    sched::SimResult sim = sched::simulate(problem, *schedule);
    std::optional<sched::OptimizerSyncTiming> sync;
    if (optimizerSync != "none") {
      if (optimizerSync != "post-validation") {
        module.emitError("zb-schedule: optimizer-sync must be none or "
                         "post-validation, got '")
            << optimizerSync << "'";
        return signalPassFailure();
      }
      sched::OptimizerSyncOptions options;
      options.mode = sched::OptimizerSync::PostValidation;
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
};
} // namespace
