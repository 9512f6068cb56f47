//===- LauncherTest.cpp - zb-run's filter of mpirun's stderr --------------===//

#include "zb/Runner/Launcher.h"

#include "gtest/gtest.h"

using zb::runner::MpirunStderrFilter;

namespace {

const std::string kRule(74, '-');

std::vector<std::string> feed(MpirunStderrFilter &f,
                              const std::vector<std::string> &lines) {
  std::vector<std::string> out;
  for (const std::string &l : lines) {
    std::vector<std::string> got = f.addLine(l);
    out.insert(out.end(), got.begin(), got.end());
  }
  std::vector<std::string> rest = f.finish();
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

TEST(MpirunStderrFilter, KilledRankBecomesOneLine) {
  MpirunStderrFilter f;
  std::vector<std::string> out =
      feed(f, {kRule,
               "Primary job  terminated normally, but 1 process "
               "returned",
               "a non-zero exit code. Per user-direction, the job has been "
               "aborted.",
               kRule, kRule,
               "mpirun noticed that process rank 1 with PID 0 on node vm "
               "exited on signal 9 (Killed).",
               kRule});
  EXPECT_EQ(out, (std::vector<std::string>{
                     "zb-run: rank 1: terminated by signal 9 (Killed); the "
                     "job was stopped"}));
}

TEST(MpirunStderrFilter, RankMessageWinsWhateverTheOrder) {
  // The abort banner may arrive before the rank's forwarded message.
  MpirunStderrFilter f;
  std::vector<std::string> out = feed(
      f, {kRule,
          "MPI_ABORT was invoked on rank 1 in communicator "
          "MPI_COMM_WORLD",
          "with errorcode 1.", kRule,
          "zb-run: rank 1: zbrt_recv from rank 0 tag 0: expected 8 bytes",
          "[vm:18910] [[9504,0],0] ORTE_ERROR_LOG: Out of resource in file "
          "../../../orte/util/show_help.c at line 507"});
  EXPECT_EQ(out, (std::vector<std::string>{
                     "zb-run: rank 1: zbrt_recv from rank 0 tag 0: expected "
                     "8 bytes"}));
}

TEST(MpirunStderrFilter, NonZeroExitWithoutMessage) {
  MpirunStderrFilter f;
  std::vector<std::string> out =
      feed(f, {kRule,
               "mpirun detected that one or more processes exited with "
               "non-zero status, thus causing",
               "the job to be terminated. The first process to do so was:", "",
               "  Process name: [[30106,1],3]", "  Exit code:    7", kRule});
  EXPECT_EQ(out, (std::vector<std::string>{
                     "zb-run: rank 3: exited with code 7; the job was "
                     "stopped"}));
}

TEST(MpirunStderrFilter, OtherOutputPassesThrough) {
  MpirunStderrFilter f;
  std::vector<std::string> out =
      feed(f, {"warning: something", kRule, "Unknown banner text", kRule});
  EXPECT_EQ(out, (std::vector<std::string>{"warning: something", kRule,
                                           "Unknown banner text", kRule}));
}

} // namespace
