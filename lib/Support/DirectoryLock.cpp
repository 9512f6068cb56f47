//===- DirectoryLock.cpp - One job at a time in an output directory -------===//
//
// See zb/Support/DirectoryLock.h.
//
//===----------------------------------------------------------------------===//

#include "zb/Support/DirectoryLock.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Errc.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include <unistd.h>

using namespace llvm;
using zb::support::DirectoryLock;

namespace {

Error fail(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// The lock files this process holds (real path -> its holder line): fcntl
/// locks do not exclude the process that holds them.
std::mutex registryMutex;
std::map<std::string, std::string> &registry() {
  static std::map<std::string, std::string> held;
  return held;
}

std::string hostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || !buf[0])
    return "unknown";
  return buf;
}

/// "zb-compile (pid 12 on host h)" from a lock file's line
/// "zb-compile 12 h"; "" when the line is not one.
std::string describeHolder(StringRef line) {
  SmallVector<StringRef, 3> fields;
  line.trim().split(fields, ' ', /*MaxSplit=*/2, /*KeepEmpty=*/false);
  int64_t pid = 0;
  if (fields.size() != 3 || fields[1].getAsInteger(10, pid))
    return "";
  return formatv("{0} (pid {1} on host {2})", fields[0], pid, fields[2].trim())
      .str();
}

/// The first bytes of the file open as `fd` (read with pread: a second
/// descriptor of the file, once closed, would drop this process's lock).
std::string readHolder(int fd) {
  std::string text;
  char buf[256];
  while (text.size() < 1024) {
    ssize_t n = ::pread(fd, buf, sizeof(buf), (off_t)text.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    text.append(buf, (size_t)n);
  }
  return text;
}

void closeFile(int fd) { (void)sys::Process::SafelyCloseFileDescriptor(fd); }

} // namespace

Expected<std::unique_ptr<DirectoryLock>>
DirectoryLock::acquire(StringRef dir, StringRef tool) {
  std::unique_ptr<DirectoryLock> lock(new DirectoryLock());
  lock->directory = dir.str();
  SmallString<256> file(dir);
  sys::path::append(file, kFileName);
  lock->path = file.str().str();
  const std::string holderLine =
      formatv("{0} {1} {2}\n", tool, (int64_t)getpid(), hostName()).str();
  const std::string advice = ": wait for it to end, or use another directory";
  bool existed = sys::fs::is_directory(dir);
  std::lock_guard<std::mutex> guard(registryMutex);
  // A few rounds: the file may be removed by a holder releasing it, or the
  // directory by a holder that created it, between our steps.
  for (int attempt = 0;; ++attempt) {
    const bool lastTry = attempt >= 100;
    if (std::error_code ec = sys::fs::create_directories(dir))
      return fail("cannot create '" + dir + "': " + ec.message());
    if (!sys::fs::is_directory(dir))
      return fail("'" + dir + "' is not a directory: name a directory (it is "
                  "created when missing)");
    if (!existed)
      lock->created = true;
    SmallString<256> real;
    if (std::error_code ec = sys::fs::real_path(dir, real))
      return fail("cannot create '" + dir + "': " + ec.message());
    sys::path::append(real, kFileName);
    lock->key = real.str().str();
    if (auto it = registry().find(lock->key); it != registry().end())
      return fail(dir + " is in use by " + describeHolder(it->second) +
                  advice);
    int fd = -1;
    std::error_code ec = sys::fs::openFileForReadWrite(
        lock->path, fd, sys::fs::CD_OpenAlways, sys::fs::OF_None);
    if (ec == errc::no_such_file_or_directory && !lastTry)
      continue;
    if (ec)
      return fail("cannot lock '" + lock->path + "': " + ec.message());
    ec = sys::fs::tryLockFile(fd);
    if (ec == errc::no_lock_available) {
      std::string holder = describeHolder(readHolder(fd));
      closeFile(fd);
      if (holder.empty() && !lastTry) {
        // Its holder has locked it and is writing its line.
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
      return fail(dir + " is in use by " +
                  (holder.empty() ? "another job (" + lock->path +
                                        " is locked)"
                                  : holder) +
                  advice);
    }
    if (ec) {
      closeFile(fd);
      return fail("cannot lock '" + lock->path + "': " + ec.message() +
                  " (zb locks an output directory with fcntl; use a "
                  "directory on a file system that has file locks)");
    }
    // Locked; but a holder that was releasing may have removed the file
    // between our open and our lock: then ours is an orphan, start again.
    sys::fs::file_status opened, named;
    if (sys::fs::status(fd, opened) || sys::fs::status(lock->path, named) ||
        !sys::fs::equivalent(opened, named)) {
      closeFile(fd);
      if (lastTry)
        return fail("cannot lock '" + lock->path +
                    "': it keeps being replaced (another job is starting "
                    "and ending there)");
      continue;
    }
    std::string previous = readHolder(fd);
    if (::ftruncate(fd, 0) != 0 ||
        ::pwrite(fd, holderLine.data(), holderLine.size(), 0) !=
            (ssize_t)holderLine.size()) {
      std::string why = std::strerror(errno);
      closeFile(fd);
      return fail("cannot write '" + lock->path + "': " + why);
    }
    if (!StringRef(previous).trim().empty()) {
      std::string was = describeHolder(previous);
      lock->takeoverNote = lock->path + ": took over the lock of " +
                           (was.empty() ? std::string("an earlier job") : was) +
                           ", which ended without releasing it";
    }
    lock->fd = fd;
    registry()[lock->key] = holderLine;
    return std::move(lock);
  }
}

void DirectoryLock::removeStale(StringRef dir) {
  SmallString<256> file(dir);
  sys::path::append(file, kFileName);
  std::lock_guard<std::mutex> guard(registryMutex);
  SmallString<256> real;
  if (sys::fs::real_path(file, real) || registry().count(real.str().str()))
    return; // none, or this process holds it
  int fd = -1;
  if (sys::fs::openFileForReadWrite(file, fd, sys::fs::CD_OpenExisting,
                                    sys::fs::OF_None))
    return;
  sys::fs::file_status opened, named;
  if (!sys::fs::tryLockFile(fd) && !sys::fs::status(fd, opened) &&
      !sys::fs::status(file, named) && sys::fs::equivalent(opened, named))
    (void)sys::fs::remove(file);
  closeFile(fd);
}

DirectoryLock::~DirectoryLock() {
  if (fd < 0)
    return;
  std::lock_guard<std::mutex> guard(registryMutex);
  // Removed while still locked: a job that opened the file before this
  // finds it orphaned after its lock succeeds, and starts again.
  (void)sys::fs::remove(path);
  closeFile(fd);
  registry().erase(key);
  if (created)
    (void)sys::fs::remove(directory); // only when empty
}
