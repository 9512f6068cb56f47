//===- DirectoryLock.h - One job at a time in an output directory -*- C++ -*-===//
//
// zb-compile -o DIR and zb-run --checkpoint DIR (rank 0) hold DIR/.zb-lock
// for the whole job, so that two jobs never write one directory. The lock is
// an fcntl lock on that file (llvm::sys::fs::tryLockFile), which the kernel
// releases when the holder exits, however it exits; the file holds one line
// "<tool> <pid> <host>" naming the holder for the message of a second job:
//   "DIR is in use by zb-compile (pid 4242 on host h1): wait for it to end,
//    or use another directory"
// A lock file that is not locked was left by a job that ended without
// removing it (killed): it is taken over, and note() names that job. The
// lock is released (the file removed) when the DirectoryLock is destroyed.
// Within one process (the Python package) a second lock of the same
// directory is refused too (fcntl locks are per process). Needs a file
// system with fcntl locks (local file systems, NFS with lockd). MLIR-free.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_SUPPORT_DIRECTORYLOCK_H
#define ZB_SUPPORT_DIRECTORYLOCK_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace zb::support {

class DirectoryLock {
public:
  /// The lock file's name in the directory.
  static constexpr const char *kFileName = ".zb-lock";

  /// Creates `dir` when missing and takes dir/.zb-lock for `tool`
  /// ("zb-compile", "zb-run"). Errors (one line each): "DIR is in use by
  /// TOOL (pid P on host H): wait for it to end, or use another directory";
  /// "cannot create 'DIR': <reason>"; "cannot lock 'DIR/.zb-lock': <reason>
  /// (...)".
  static llvm::Expected<std::unique_ptr<DirectoryLock>>
  acquire(llvm::StringRef dir, llvm::StringRef tool);

  /// Removes dir/.zb-lock when no job holds its lock: its holder was killed
  /// before it could remove it (zb-run's launcher, after a job whose rank 0
  /// was killed by mpirun). A lock that is held stays.
  static void removeStale(llvm::StringRef dir);

  /// Removes the lock file, then releases the lock; removes the directory
  /// too when acquire() created it and it is empty.
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock &) = delete;
  DirectoryLock &operator=(const DirectoryLock &) = delete;

  const std::string &dir() const { return directory; }
  const std::string &lockFile() const { return path; }
  /// Whether acquire() created the directory.
  bool createdDirectory() const { return created; }
  /// "" or, when a stale lock file was taken over, "DIR/.zb-lock: took over
  /// the lock of zb-run (pid P on host H), which ended without releasing
  /// it".
  const std::string &note() const { return takeoverNote; }

private:
  DirectoryLock() = default;
  std::string directory, path, key, takeoverNote;
  int fd = -1;
  bool created = false;
};

} // namespace zb::support

#endif // ZB_SUPPORT_DIRECTORYLOCK_H
