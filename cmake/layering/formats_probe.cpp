// ZBLayering.ZBFormats.own: lib/Formats' public headers compile with only the
// include directories of an MLIR-free target.
#include "zb/Formats/AtomicFile.h"
#include "zb/Formats/Checkpoint.h"
#include "zb/Formats/JSON.h"
#include "zb/Formats/Plan.h"
#include "zb/Formats/Profile.h"
