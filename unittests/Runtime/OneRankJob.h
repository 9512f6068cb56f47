//===- OneRankJob.h - zbrt_init of a one-rank job in a test -----*- C++ -*-===//
//
// For death tests whose child process is a one-rank MPI job (a singleton):
// zbrt_init, exiting with code 3 when it does not come up as one rank.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_UNITTESTS_RUNTIME_ONERANKJOB_H
#define ZB_UNITTESTS_RUNTIME_ONERANKJOB_H

#include "zbrt/zbrt.h"

#include <cstdlib>

namespace zbtest {

/// zbrt_init of a one-rank job in this (child) process, named `name`.
inline void initOneRankJob(const char *name) {
  int argc = 1;
  char *args[] = {const_cast<char *>(name), nullptr};
  char **argv = args;
  int32_t world = 0;
  if (zbrt_init(&argc, &argv, &world) != 0 || world != 1)
    std::exit(3);
}

} // namespace zbtest

#endif // ZB_UNITTESTS_RUNTIME_ONERANKJOB_H
