// Layering probe: lib/Formats' public headers compile with only the include
// directories of an MLIR-free target (ZBLayering.ZBFormats.own); a layer
// below lib/Formats must NOT see them (ZBLayering.ZBSchedule.no-formats).
#include "zb/Formats/Checkpoint.h"
#include "zb/Formats/Options.h"
#include "zb/Formats/Plan.h"
#include "zb/Formats/Profile.h"
