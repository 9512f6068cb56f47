//===- ChecksumTest.cpp - lib/Support: XXH3 checksums of files ------------===//
//
// zb/Support/Checksum.h: XXH3-64 against the reference implementation's
// values (libxxhash 0.8), the .xxh3 line. plan.json's params_checksum is not
// part of the checkpoints' plan hash.
//
//===----------------------------------------------------------------------===//

#include "zb/Formats/Checkpoint.h"
#include "zb/Support/Checksum.h"
#include "zb/Support/FatalErrors.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <unistd.h>

#include <string>

namespace {

std::string tempDir(const std::string &name) {
  return ::testing::TempDir() + "/zb-checksumtest-" +
         std::to_string(getpid()) + "-" + name;
}

std::string readFile(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  return buf ? (*buf)->getBuffer().str() : "<unreadable>";
}

void writeFile(const std::string &path, const std::string &text) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  ASSERT_FALSE(ec) << path;
  os << text;
}

/// The reference XXH3_64bits (libxxhash 0.8, seed 0) of the same bytes.
TEST(Checksum, Xxh3MatchesTheReference) {
  EXPECT_EQ(zb::support::xxh3Hex(""), "2d06800538d394c2");
  EXPECT_EQ(zb::support::xxh3Hex("zb"), "3db1f51cc64c9b23");
  std::string bytes;
  for (int i = 0; i < 5; ++i)
    for (int b = 0; b < 256; ++b)
      bytes.push_back((char)b);
  EXPECT_EQ(zb::support::xxh3Hex(bytes), "4844b009e164352e");
  EXPECT_EQ(zb::support::checksumFileLine("final.bin", "4844b009e164352e"),
            "XXH3 (final.bin) = 4844b009e164352e\n");
}

TEST(Checksum, FileAndChecksumFile) {
  std::string dir = tempDir("sum");
  ASSERT_FALSE(llvm::sys::fs::create_directories(dir));
  writeFile(dir + "/p.bin", "zb");
  llvm::Expected<std::string> sum = zb::support::fileChecksum(dir + "/p.bin");
  ASSERT_TRUE(!!sum) << llvm::toString(sum.takeError());
  EXPECT_EQ(*sum, "3db1f51cc64c9b23");
  ASSERT_FALSE(!!zb::support::writeChecksumFile(dir + "/p.bin", *sum));
  EXPECT_EQ(readFile(dir + "/p.bin.xxh3"), "XXH3 (p.bin) = 3db1f51cc64c9b23\n");
  llvm::Expected<std::string> missing =
      zb::support::fileChecksum(dir + "/missing.bin");
  ASSERT_FALSE(!!missing);
  EXPECT_EQ(llvm::toString(missing.takeError()),
            "'" + dir + "/missing.bin': cannot read: No such file or directory");
  llvm::sys::fs::remove_directories(dir);
}

TEST(Checksum, PlanHashLeavesOutTheParamsChecksum) {
  zb::formats::Plan plan;
  plan.numRanks = 1;
  plan.numStages = 1;
  std::string without = zb::formats::planHash(plan);
  plan.paramsChecksum = "0123456789abcdef";
  EXPECT_EQ(zb::formats::planHash(plan), without);
  plan.numMicrobatches = 4;
  EXPECT_NE(zb::formats::planHash(plan), without);
}

} // namespace

namespace {

TEST(FatalErrorsTest, OneLineWithAdvice) {
  EXPECT_EQ(zb::support::fatalErrorLine("zb-compile", "pthread_create failed: "
                                                      "Resource temporarily "
                                                      "unavailable"),
            "zb-compile: error: pthread_create failed: Resource temporarily "
            "unavailable (the process hit a memory or thread limit: raise "
            "`ulimit -v` or `ulimit -u`)");
  EXPECT_EQ(zb::support::fatalErrorLine("zb-opt", "bad IR\n"),
            "zb-opt: error: bad IR");
}

bool cleanedUp = false;
void markCleanedUp() {
  cleanedUp = true;
  llvm::errs() << "cleanup ran\n";
}

TEST(FatalErrorsDeathTest, ReportFatalErrorIsOneLineAndExitCode1) {
  EXPECT_EXIT(
      {
        zb::support::installFatalErrorHandlers("zb-tool", markCleanedUp);
        llvm::report_fatal_error("something broke");
      },
      testing::ExitedWithCode(1),
      "cleanup ran\nzb-tool: error: something broke\n$");
  EXPECT_EXIT(
      {
        zb::support::installFatalErrorHandlers("zb-tool");
        llvm::report_bad_alloc_error("Allocation failed");
      },
      testing::ExitedWithCode(1),
      "^zb-tool: error: out of memory: Allocation failed \\(the process hit "
      "a memory or thread limit");
}

} // namespace
