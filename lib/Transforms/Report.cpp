//===- Report.cpp - zb-report: per-stage costs and memory -----------------===//
#include "zb/Transforms/Passes.h"
#include "zb/Transforms/PipelineInfo.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

namespace zb {
#define GEN_PASS_DEF_ZBREPORT
#include "zb/Transforms/Passes.h.inc"
} // namespace zb

using namespace mlir;
using namespace zb;

namespace {
struct ZBReportPass : public zb::impl::ZBReportBase<ZBReportPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<PipelineInfo> info = PipelineInfo::read(module);
    if (failed(info))
      return signalPassFailure();
    llvm::raw_ostream &os = llvm::errs();
    os << llvm::formatv("zb-report: {0} stages on {1} ranks ({2} chunk(s) per "
                        "rank), cost model '{3}', per microbatch:\n",
                        info->numStages, info->numRanks, info->numChunks,
                        info->target);
    double tF = 0, tB = 0, tW = 0;
    for (const StageInfo &s : info->stages) {
      os << llvm::formatv("stage {0,2}: T_F={1:f4} ms T_B={2:f4} ms "
                          "T_W={3:f4} ms T_comm={4:f4} ms M_B={5} bytes "
                          "M_W={6} bytes\n",
                          s.stage, s.tF, s.tB, s.tW, s.tComm, s.mB, s.mW);
      tF += s.tF;
      tB += s.tB;
      tW += s.tW;
    }
    os << llvm::formatv("total:    T_F={0:f4} ms T_B={1:f4} ms T_W={2:f4} ms "
                        "(T_B+T_W)/T_F={3:f2}\n",
                        tF, tB, tW, tF > 0 ? (tB + tW) / tF : 0.0);
    if (auto sched = module->getAttrOfType<ScheduleAttr>(kScheduleAttr)) {
      os << "schedule " << sched.getName()
         << llvm::formatv(": predicted bubble rate {0:f4}",
                          sched.getBubbleRate().convertToDouble());
      os << ", peak memory per rank (bytes):";
      for (double p : sched.getPeakMemory().asArrayRef())
        os << " " << static_cast<int64_t>(p);
      os << "\n";
    }
  }
};
} // namespace
