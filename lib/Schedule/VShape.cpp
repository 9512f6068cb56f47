//===- VShape.cpp - ZB-V, V-Half, V-Min -----------------------------------===//

#include "Builders.h"

using namespace zb::sched;

llvm::Expected<Schedule> detail::buildVShape(const Problem &problem,
                                             llvm::StringRef name,
                                             const BuildOptions &options) {
  (void)problem;
  (void)options;
  return llvm::createStringError(name.str() + ": not implemented yet");
}
