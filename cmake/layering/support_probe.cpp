// Layering probe: lib/Support's public headers compile with ZBSupport's
// include directories (ZBLayering.ZBSupport.own); zbrt, below lib/, must NOT
// see them (ZBLayering.zbrt.no-support).
#include "zb/Support/AtomicFile.h"
#include "zb/Support/JSON.h"
