// Layering probe: must NOT compile with the include directories of an
// MLIR-free target (ZBSchedule, zbrt). See cmake/LayeringTests.cmake.
#include "mlir/IR/Builders.h"
