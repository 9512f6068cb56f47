// Layering probe: an MLIR-using zb header must NOT be visible to an MLIR-free
// target (ZBSchedule). See cmake/LayeringTests.cmake.
#include "zb/Dialect/ZB/IR/ZBDialect.h"
