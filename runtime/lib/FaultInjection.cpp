//===- FaultInjection.cpp - zb runtime: faults for tests ------------------===//

#include "FaultInjection.h"

#include "Internal.h"

#include <sys/resource.h>

#include <cstdlib>

using namespace zbrt;
using detail::fatalf;

namespace {
/// RANK:N from the environment variable `name` (unset: false; N >= 1 is
/// called `what` in messages); a malformed value ends the job naming it.
bool readRankPass(const char *name, long &rank, long &pass,
                  const char *what = "PASS") {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return false;
  char *end = nullptr;
  rank = std::strtol(v, &end, 10);
  if (end == v || *end != ':')
    fatalf("%s='%s': expected RANK:%s (e.g. 1:5)", name, v, what);
  const char *n = end + 1;
  pass = std::strtol(n, &end, 10);
  if (end == n || *end != '\0' || pass < 1 || rank < 0)
    fatalf("%s='%s': expected RANK:%s, %s >= 1", name, v, what, what);
  return true;
}
} // namespace

FaultInjection::FaultInjection() {
  readRankPass("ZBRT_INJECT_KILL", killRank, killPass);
  readRankPass("ZBRT_INJECT_STOP", stopRank, stopPass);
  readRankPass("ZBRT_INJECT_MEMORY_LIMIT", memoryRank, memoryHeadroomMiB,
               "MIB");
  if (const char *v = std::getenv("ZBRT_INJECT_LAUNCH_ERROR"); v && *v)
    failedLaunch = std::atol(v);
}

void FaultInjection::limitAddressSpace(int32_t rank) const {
  if (memoryHeadroomMiB <= 0 || rank != memoryRank)
    return;
  uint64_t mapped = detail::mappedBytes();
  if (!mapped)
    fatalf("ZBRT_INJECT_MEMORY_LIMIT: cannot read /proc/self/statm");
  struct rlimit limit;
  limit.rlim_cur = limit.rlim_max =
      (rlim_t)mapped + ((rlim_t)memoryHeadroomMiB << 20);
  if (setrlimit(RLIMIT_AS, &limit) != 0)
    fatalf("ZBRT_INJECT_MEMORY_LIMIT: setrlimit failed");
}

const FaultInjection &zbrt::faults() {
  static const FaultInjection f;
  return f;
}
