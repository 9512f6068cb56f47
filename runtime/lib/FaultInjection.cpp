//===- FaultInjection.cpp - zb runtime: faults for tests ------------------===//

#include "FaultInjection.h"

#include "Internal.h"

#include <cstdlib>

using namespace zbrt;
using detail::fatalf;

FaultInjection::FaultInjection() {
  if (const char *v = std::getenv("ZBRT_INJECT_KILL"); v && *v) {
    char *end = nullptr;
    long rank = std::strtol(v, &end, 10);
    if (end == v || *end != ':')
      fatalf("ZBRT_INJECT_KILL='%s': expected RANK:PASS (e.g. 1:5)", v);
    const char *n = end + 1;
    long pass = std::strtol(n, &end, 10);
    if (end == n || *end != '\0' || pass < 1 || rank < 0)
      fatalf("ZBRT_INJECT_KILL='%s': expected RANK:PASS, PASS >= 1", v);
    killRank = rank;
    killPass = pass;
  }
  if (const char *v = std::getenv("ZBRT_INJECT_LAUNCH_ERROR"); v && *v)
    failedLaunch = std::atol(v);
}

const FaultInjection &zbrt::faults() {
  static const FaultInjection f;
  return f;
}
