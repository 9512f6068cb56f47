//===- Registry.h - Schedules by name ----------------------------*- C++
//-*-===//
//
// The name -> builder dispatch of zb's schedules (gpipe, 1f1b, ..., ilp, zb-v):
// the layer above the base (zb/Schedule/Schedule.h: problem, simulation,
// verification) and the builders (lib/Schedule/Builders.h). Every schedule a
// caller gets by name has been validated and verified here. No MLIR
// dependency.
//
//===----------------------------------------------------------------------===//

#ifndef ZB_SCHEDULE_REGISTRY_H
#define ZB_SCHEDULE_REGISTRY_H

#include "zb/Schedule/BuildOptions.h"
#include "zb/Schedule/Schedule.h"

namespace zb::sched {

/// Names accepted by buildSchedule, in the order zb-sched --compare prints
/// them.
llvm::ArrayRef<llvm::StringRef> scheduleNames();

/// Chunks per rank V a schedule uses when none is given: 2 for 1f1b-i and
/// the V-shape schedules (zb-v, v-half, v-min), 1 otherwise.
int defaultChunks(llvm::StringRef name);

/// Builds the named schedule: gpipe 1f1b 1f1b-i zb-h1 zb-h2 zb-auto zb-1p
/// zb-2p ilp zb-v v-half v-min v-auto.
///   - gpipe, 1f1b, zb-h1, zb-h2, zb-auto, zb-1p, zb-2p need V = 1; ilp takes
///     V = 1 or V = 2 (the V-shape mapping, warm-started from ZB-V);
///     1f1b-i needs V >= 2 and m a multiple of p; zb-v, v-half, v-min, v-auto
///     need V=2 (v-auto: the best of ZB-V, V-Half, V-Min and the greedy
///     V-shape order that fits every rank's limit).
///   - zb-h1 needs m >= p, zb-h2 needs m >= 2p (Section 2).
///   - zb-auto uses problem.memoryLimit; zb-1p / zb-2p use p*M_B / 2p*M_B
///     (the limit is min(that, memoryLimit) when memoryLimit is set).
///   - Every result is verified (including the memory limit, when set) before
///     it is returned.
/// On invalid parameters returns an error that states the minimum that would
/// work (e.g. "zb-h1 needs at least p=4 microbatches, got m=2").
llvm::Expected<Schedule> buildSchedule(const Problem &problem,
                                       llvm::StringRef name);
llvm::Expected<Schedule> buildSchedule(const Problem &problem,
                                       llvm::StringRef name,
                                       const BuildOptions &options,
                                       IlpReport *ilpReport = nullptr);

} // namespace zb::sched

#endif // ZB_SCHEDULE_REGISTRY_H
