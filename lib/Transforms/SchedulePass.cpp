//===- SchedulePass.cpp - zb-schedule: F/B/W order per rank ---------------===//
//
// Feeds the per-stage costs (T_F, T_B, T_W, T_comm in ms) and memory (M_B,
// M_W in bytes) that zb-partition-stages derived into lib/Schedule, verifies
// the schedule and attaches it to the module as `zb.schedule`.
//
//===----------------------------------------------------------------------===//
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
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!profile.empty() && failed(applyProfile(module, profile)))
      return signalPassFailure();
    FailureOr<PipelineInfo> info = PipelineInfo::read(module);
    if (failed(info))
      return signalPassFailure();
    sched::Problem problem = info->toProblem(microbatches, memoryLimits);
    llvm::Expected<sched::Schedule> schedule =
        sched::buildSchedule(problem, algorithm);
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
