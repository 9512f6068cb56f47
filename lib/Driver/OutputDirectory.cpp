//===- OutputDirectory.cpp - zb-compile's -o DIR, written whole -----------===//
//
// See OutputDirectory in Phases.h.
//
//===----------------------------------------------------------------------===//
#include "Phases.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <csignal>
#include <cstring>
#include <iterator>
#include <set>

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

namespace zb::driver {

namespace {

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The prefix of build directories in DIR: DIR/.zb-build-XXXXXX.
constexpr llvm::StringLiteral kBuildPrefix = ".zb-build";

//===--------------------------------------------------------------------===//
// SIGINT, SIGTERM, SIGHUP (zb-compile only: removeBuildOnInterrupt): the
// build directory and the lock file go, then the signal takes its course.
// Fixed buffers and async-signal-safe calls only.
//===--------------------------------------------------------------------===//

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction previousActions[3];
bool handlersInstalled = false;
volatile sig_atomic_t armed = 0;
char armedBuild[4096], armedLock[4096], armedCreatedDir[4096];

/// Removes the files of the (flat) directory `dir`, then the directory.
void removeFlatDirectory(const char *dir) {
  for (int pass = 0; pass < 3; ++pass) {
    int fd = ::open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
      return;
    char buf[4096];
    ssize_t n;
    while ((n = getdents64(fd, buf, sizeof(buf))) > 0)
      for (ssize_t at = 0; at < n;) {
        auto *entry = reinterpret_cast<struct dirent64 *>(buf + at);
        const char *name = entry->d_name;
        if (std::strcmp(name, ".") != 0 && std::strcmp(name, "..") != 0)
          (void)::unlinkat(fd, name, 0);
        at += entry->d_reclen;
      }
    ::close(fd);
    if (::rmdir(dir) == 0)
      return;
  }
}

/// The build directory and the lock file of the compile in progress go.
void removeArmed() {
  if (armed) {
    armed = 0;
    removeFlatDirectory(armedBuild);
    (void)::unlink(armedLock);
    if (armedCreatedDir[0])
      (void)::rmdir(armedCreatedDir); // only when empty
  }
}

void onInterrupt(int sig) {
  removeArmed();
  for (size_t i = 0; i < std::size(kSignals); ++i)
    if (kSignals[i] == sig)
      (void)::sigaction(sig, &previousActions[i], nullptr);
  (void)::raise(sig); // delivered when this handler returns
}

bool copyInto(char (&buffer)[4096], llvm::StringRef text) {
  if (text.size() >= sizeof(buffer))
    return false;
  std::memcpy(buffer, text.data(), text.size());
  buffer[text.size()] = 0;
  return true;
}

/// Whether `name` is a file zb-compile writes into DIR (Driver.h).
bool isCompileOutput(llvm::StringRef name) {
  static const std::set<std::string> fixed = {
      "plan.json",      "params.bin",      "pipeline.mlir",
      "schedule.json",  "schedule.svg",    "gpu_costs.json",
      "gpu_report.json", "gpu_report.txt"};
  if (fixed.count(name.str()))
    return true;
  if (!name.consume_front("rank"))
    return false;
  size_t digits = 0;
  while (digits < name.size() && llvm::isDigit(name[digits]))
    ++digits;
  if (digits == 0)
    return false;
  llvm::StringRef rest = name.drop_front(digits);
  return rest == ".so" || rest == ".o" || rest == ".step.o" ||
         rest == ".llvm.mlir";
}

/// The names of the entries of `dir`.
std::vector<std::string> listDirectory(llvm::StringRef dir,
                                       std::error_code &ec) {
  std::vector<std::string> names;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    names.push_back(llvm::sys::path::filename(it->path()).str());
  return names;
}

} // namespace

void removeBuildNow() { removeArmed(); }

void removeBuildOnInterrupt() {
  if (handlersInstalled)
    return;
  handlersInstalled = true;
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_handler = onInterrupt;
  sigemptyset(&action.sa_mask);
  for (size_t i = 0; i < std::size(kSignals); ++i)
    (void)::sigaction(kSignals[i], &action, &previousActions[i]);
}

llvm::Expected<std::unique_ptr<OutputDirectory>>
OutputDirectory::open(llvm::StringRef dir) {
  std::unique_ptr<OutputDirectory> out(new OutputDirectory());
  out->dir = dir.str();
  llvm::Expected<std::unique_ptr<support::DirectoryLock>> lock =
      support::DirectoryLock::acquire(dir, "zb-compile");
  if (!lock)
    return lock.takeError();
  out->lock = std::move(*lock);
  if (!out->lock->note().empty())
    out->notes.push_back(out->lock->note());
  // Build directories of compiles that were killed (this one holds the
  // lock: no other compile is running here).
  std::error_code ec;
  for (const std::string &name : listDirectory(dir, ec)) {
    if (!llvm::StringRef(name).starts_with(kBuildPrefix))
      continue;
    llvm::SmallString<256> leftover(dir);
    llvm::sys::path::append(leftover, name);
    if (!llvm::sys::fs::remove_directories(leftover))
      out->notes.push_back(
          (leftover + ": removed, left by a compile that was killed").str());
  }
  // Absolute: createUniqueDirectory puts a relative prefix in /tmp.
  llvm::SmallString<256> prefix(dir);
  llvm::sys::path::append(prefix, kBuildPrefix);
  llvm::SmallString<256> build;
  ec = llvm::sys::fs::make_absolute(prefix);
  if (!ec)
    ec = llvm::sys::fs::createUniqueDirectory(prefix, build);
  if (ec)
    return fail("cannot create a build directory in '" + dir +
                "': " + ec.message());
  out->build = build.str().str();
  if (handlersInstalled && copyInto(armedBuild, out->build) &&
      copyInto(armedLock, out->lock->lockFile()) &&
      copyInto(armedCreatedDir,
               out->lock->createdDirectory() ? llvm::StringRef(dir) : ""))
    armed = 1;
  return std::move(out);
}

OutputDirectory::~OutputDirectory() {
  armed = 0;
  if (!build.empty())
    (void)llvm::sys::fs::remove_directories(build);
  // Then `lock` (a member) is released, and DIR removed if this compile
  // created it and it stayed empty.
}

llvm::Error OutputDirectory::commit() {
  std::error_code ec;
  std::vector<std::string> built = listDirectory(build, ec);
  if (ec)
    return fail("cannot read '" + build + "': " + ec.message());
  auto move = [&](llvm::StringRef name) -> llvm::Error {
    llvm::SmallString<256> from(build), to(dir);
    llvm::sys::path::append(from, name);
    llvm::sys::path::append(to, name);
    if (std::error_code ec = llvm::sys::fs::rename(from, to))
      return fail("cannot move '" + from + "' to '" + to + "': " +
                  ec.message() + " (the previous plan in " + dir +
                  " may be incomplete: compile again)");
    return llvm::Error::success();
  };
  // Every file but plan.json, then the previous plan's files this one does
  // not have (rank3.so of a plan on 4 ranks), then plan.json: a plan.json
  // means its files are there.
  for (const std::string &name : built)
    if (name != "plan.json")
      if (llvm::Error error = move(name))
        return error;
  std::set<std::string> kept(built.begin(), built.end());
  for (const std::string &name : listDirectory(dir, ec))
    if (isCompileOutput(name) && !kept.count(name) && name != "plan.json") {
      llvm::SmallString<256> stale(dir);
      llvm::sys::path::append(stale, name);
      (void)llvm::sys::fs::remove(stale);
    }
  if (kept.count("plan.json"))
    if (llvm::Error error = move("plan.json"))
      return error;
  armed = 0;
  (void)llvm::sys::fs::remove_directories(build);
  build.clear();
  return llvm::Error::success();
}

} // namespace zb::driver
