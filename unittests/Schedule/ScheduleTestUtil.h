//===- ScheduleTestUtil.h - helpers shared by the scheduler's tests -*- C++ -*-===//
#ifndef ZB_UNITTESTS_SCHEDULE_SCHEDULETESTUTIL_H
#define ZB_UNITTESTS_SCHEDULE_SCHEDULETESTUTIL_H

#include "zb/Schedule/IO.h"
#include "zb/Schedule/Schedule.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include "gtest/gtest.h"

#include <string>

namespace zb::sched::testutil {

/// The message of \p e, "" for success.
inline std::string errorOf(llvm::Error e) {
  return e ? llvm::toString(std::move(e)) : std::string();
}

/// The compute CSV PyTorch's ScheduleDualPipeV wrote for p ranks and m
/// microbatches (test/Schedule/Inputs/pytorch), read by zb's CSV reader
/// (OVERLAP_F_B as its sub-actions in order, marked as an F&B pair; a full
/// backward as B then W). A test failure and an empty schedule when the
/// file is missing or does not read.
inline Schedule readPyTorchDualPipeV(int p, int m) {
  std::string path = std::string(ZB_PYTORCH_CSV_DIR) + "/ScheduleDualPipeV-p" +
                     std::to_string(p) + "-m" + std::to_string(m) + ".csv";
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    ADD_FAILURE() << "cannot read " << path;
    return {};
  }
  auto s = readCSV((*buffer)->getBuffer(), p);
  if (!s) {
    ADD_FAILURE() << path << ": " << errorOf(s.takeError());
    return {};
  }
  return std::move(*s);
}

} // namespace zb::sched::testutil

#endif // ZB_UNITTESTS_SCHEDULE_SCHEDULETESTUTIL_H
