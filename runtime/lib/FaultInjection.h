//===- FaultInjection.h - zb runtime: faults for tests ----------*- C++ -*-===//
//
// Not installed. The one test hook of libzbrt: faults that tests ask for
// through the environment, read once (at the first check), and the named
// check points where production code asks for them:
//   - ZBRT_INJECT_KILL=R:N: world rank R dies of SIGKILL, with no chance to
//     clean up, as it begins its N-th pass (counted over the job from 1):
//     the tests of a dead rank on every backend; a malformed value ends the
//     job naming it;
//   - ZBRT_INJECT_STOP=R:N: world rank R stops itself (SIGSTOP) as it
//     begins its N-th pass: a peer that hangs without dying, which only the
//     communication watchdog (--comm-timeout) notices;
//   - ZBRT_INJECT_MEMORY_LIMIT=R:MIB: world rank R limits its address space
//     (RLIMIT_AS, as `ulimit -v` does) to what it has mapped once MPI is up
//     plus MIB mebibytes, before the backends start: out-of-memory tests
//     that do not depend on how much a machine's MPI and libraries map;
//   - ZBRT_INJECT_LAUNCH_ERROR=N: the N-th kernel launch of each rank gets
//     an empty grid, which the driver refuses (tests of device errors on a
//     GPU).
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_FAULTINJECTION_H
#define ZBRT_LIB_FAULTINJECTION_H

#include <cstdint>

namespace zbrt {

class FaultInjection {
public:
  /// Whether `rank` dies as it begins its `pass`-th pass (1-based).
  bool shouldKill(int32_t rank, long pass) const {
    return killPass > 0 && rank == killRank && pass == killPass;
  }
  /// Whether `rank` stops (SIGSTOP) as it begins its `pass`-th pass.
  bool shouldStop(int32_t rank, long pass) const {
    return stopPass > 0 && rank == stopRank && pass == stopPass;
  }
  /// ZBRT_INJECT_MEMORY_LIMIT: limits the address space if `rank` is the
  /// rank it names.
  void limitAddressSpace(int32_t rank) const;
  /// Whether the `launch`-th kernel launch (1-based) must fail.
  bool launchError(long launch) const {
    return failedLaunch > 0 && launch == failedLaunch;
  }

private:
  friend const FaultInjection &faults();
  FaultInjection();
  long killRank = -1, killPass = 0;
  long stopRank = -1, stopPass = 0;
  long memoryRank = -1, memoryHeadroomMiB = 0;
  long failedLaunch = 0;
};

/// The faults of this process, read from the environment at the first call.
const FaultInjection &faults();

} // namespace zbrt

#endif // ZBRT_LIB_FAULTINJECTION_H
