// Layering probe: lib/Runner's public headers compile with ZBRunner's include
// directories (ZBLayering.ZBRunner.own); lib/Formats, below the runner, must
// NOT see them (ZBLayering.ZBFormats.no-runner).
#include "zb/Runner/Runner.h"
