//===- Ilp.cpp - The ILP of Appendix G, solved with CBC -------------------===//

#include "Builders.h"

using namespace zb::sched;

llvm::Expected<Schedule> detail::buildIlp(const Problem &problem,
                                          const BuildOptions &options,
                                          IlpReport *report) {
  (void)problem;
  (void)options;
  (void)report;
  return llvm::createStringError("ilp: not implemented yet");
}
