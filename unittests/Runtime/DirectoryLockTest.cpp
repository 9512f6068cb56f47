//===- DirectoryLockTest.cpp - lib/Support: output-directory locks --------===//
//
// zb/Support/DirectoryLock.h: the lock file's line, a second holder refused
// (in this process, and in another process holding the fcntl lock), a stale
// file taken over with a note, the release.
//
//===----------------------------------------------------------------------===//

#include "zb/Support/DirectoryLock.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

using zb::support::DirectoryLock;

namespace {

std::string tempDir(const std::string &name) {
  return ::testing::TempDir() + "/zb-locktest-" + std::to_string(getpid()) +
         "-" + name;
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

TEST(DirectoryLock, HoldsNamesItsHolderAndReleases) {
  std::string dir = tempDir("hold");
  {
    auto lock = DirectoryLock::acquire(dir, "zb-test");
    ASSERT_TRUE(!!lock) << llvm::toString(lock.takeError());
    EXPECT_TRUE((*lock)->createdDirectory());
    EXPECT_EQ((*lock)->note(), "");
    std::string line = readFile(dir + "/.zb-lock");
    EXPECT_EQ(line.rfind("zb-test " + std::to_string(getpid()) + " ", 0), 0u)
        << line;
    // fcntl locks do not exclude their own process: a second lock here is
    // refused by the process's own table.
    auto second = DirectoryLock::acquire(dir, "zb-other");
    ASSERT_FALSE(!!second);
    std::string message = llvm::toString(second.takeError());
    EXPECT_NE(message.find(dir + " is in use by zb-test (pid " +
                           std::to_string(getpid()) + " on host "),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("): wait for it to end, or use another directory"),
              std::string::npos)
        << message;
  }
  // Released: the file and the directory it created (empty) are gone.
  EXPECT_FALSE(llvm::sys::fs::exists(dir));
}

TEST(DirectoryLock, KeepsADirectoryItDidNotCreateOrThatHoldsFiles) {
  std::string dir = tempDir("keep");
  ASSERT_FALSE(llvm::sys::fs::create_directories(dir));
  {
    auto lock = DirectoryLock::acquire(dir, "zb-test");
    ASSERT_TRUE(!!lock) << llvm::toString(lock.takeError());
    EXPECT_FALSE((*lock)->createdDirectory());
  }
  EXPECT_TRUE(llvm::sys::fs::is_directory(dir));
  EXPECT_FALSE(llvm::sys::fs::exists(dir + "/.zb-lock"));
  llvm::sys::fs::remove_directories(dir);
}

TEST(DirectoryLock, TakesOverAStaleLockFileWithANote) {
  std::string dir = tempDir("stale");
  ASSERT_FALSE(llvm::sys::fs::create_directories(dir));
  writeFile(dir + "/.zb-lock", "zb-compile 999999999 elsewhere\n");
  {
    auto lock = DirectoryLock::acquire(dir, "zb-test");
    ASSERT_TRUE(!!lock) << llvm::toString(lock.takeError());
    EXPECT_EQ((*lock)->note(),
              dir + "/.zb-lock: took over the lock of zb-compile (pid "
                    "999999999 on host elsewhere), which ended without "
                    "releasing it");
  }
  llvm::sys::fs::remove_directories(dir);
}

/// Another process holds the fcntl lock: refused, naming that process;
/// once it has died (without removing its file), taken over.
TEST(DirectoryLock, RefusesALockHeldByAnotherProcess) {
  std::string dir = tempDir("other");
  ASSERT_FALSE(llvm::sys::fs::create_directories(dir));
  std::string file = dir + "/.zb-lock";
  int ready[2], done[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(done), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Raw calls only: lock, write the line, wait, die holding it.
    int fd = open(file.c_str(), O_RDWR | O_CREAT, 0644);
    struct flock fl = {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    if (fd < 0 || fcntl(fd, F_SETLK, &fl) != 0)
      _exit(2);
    std::string line = "zb-child " + std::to_string(getpid()) + " here\n";
    if (write(fd, line.data(), line.size()) != (ssize_t)line.size())
      _exit(3);
    char c = 1;
    if (write(ready[1], &c, 1) != 1 || read(done[0], &c, 1) != 1)
      _exit(4);
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  auto refused = DirectoryLock::acquire(dir, "zb-test");
  ASSERT_FALSE(!!refused);
  EXPECT_EQ(llvm::toString(refused.takeError()),
            dir + " is in use by zb-child (pid " + std::to_string(child) +
                " on host here): wait for it to end, or use another "
                "directory");
  ASSERT_EQ(write(done[1], &c, 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  {
    auto lock = DirectoryLock::acquire(dir, "zb-test");
    ASSERT_TRUE(!!lock) << llvm::toString(lock.takeError());
    EXPECT_EQ((*lock)->note(), file + ": took over the lock of zb-child (pid " +
                                   std::to_string(child) +
                                   " on host here), which ended without "
                                   "releasing it");
  }
  for (int fd : {ready[0], ready[1], done[0], done[1]})
    close(fd);
  llvm::sys::fs::remove_directories(dir);
}

TEST(DirectoryLock, AFileIsNotADirectory) {
  std::string path = tempDir("file");
  writeFile(path, "x");
  auto lock = DirectoryLock::acquire(path, "zb-test");
  ASSERT_FALSE(!!lock);
  EXPECT_EQ(llvm::toString(lock.takeError()),
            "'" + path + "' is not a directory: name a directory (it is "
                         "created when missing)");
  llvm::sys::fs::remove(path);
}

} // namespace
