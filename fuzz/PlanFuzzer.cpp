//===- PlanFuzzer.cpp - libFuzzer target for plan.json --------------------===//
//
// Arbitrary bytes to zb::formats::parsePlan. An accepted plan must survive the
// accessors zb-run calls on it (argument shapes, the loss rank, its own
// prediction) and write back to JSON that parses to the same document. Seed
// corpus fuzz/corpus/plan.
//
//===----------------------------------------------------------------------===//

#include "zb/Formats/Plan.h"

#include "llvm/Support/JSON.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  llvm::Expected<zb::formats::Plan> plan =
      zb::formats::parsePlan(text, "fuzz/plan.json");
  if (!plan) {
    llvm::consumeError(plan.takeError());
    return 0;
  }
  for (const zb::formats::RankInfo &rank : plan->ranks)
    for (const zb::formats::ArgInfo &arg : rank.args)
      (void)plan->argShape(arg);
  (void)plan->lossRank();
  (void)plan->predictedForThisPlan();
  // Written back, the plan reads as the same plan.
  std::string once;
  llvm::raw_string_ostream os(once);
  os << llvm::formatv("{0:2}", zb::formats::toJSON(*plan));
  llvm::Expected<zb::formats::Plan> again =
      zb::formats::parsePlan(once, "fuzz/plan.json");
  if (!again) {
    llvm::errs() << "re-read failed: " << llvm::toString(again.takeError())
                 << "\n";
    std::abort();
  }
  std::string twice;
  llvm::raw_string_ostream os2(twice);
  os2 << llvm::formatv("{0:2}", zb::formats::toJSON(*again));
  if (once != twice) {
    llvm::errs() << "written back differently:\n" << once << "\n" << twice;
    std::abort();
  }
  return 0;
}
