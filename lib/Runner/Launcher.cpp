//===- Launcher.cpp - zb-run: running the job under mpirun ----------------===//

#include "zb/Runner/Launcher.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <thread>
#include <cstdlib>
#include <cstring>
#include <regex>

using namespace zb::runner;

namespace {

bool isBannerRule(const std::string &line) {
  return line.size() >= 20 && line.find_first_not_of('-') == std::string::npos;
}

std::string join(const std::vector<std::string> &lines) {
  std::string text;
  for (const std::string &l : lines)
    text += l + "\n";
  return text;
}

pid_t gChild = -1;

void forwardSignal(int sig) {
  if (gChild > 0)
    kill(gChild, sig);
}

} // namespace

std::vector<std::string> MpirunStderrFilter::addLine(const std::string &line) {
  if (isBannerRule(line)) {
    if (!inBanner) {
      inBanner = true;
      banner.clear();
      return {};
    }
    inBanner = false;
    return classifyBanner();
  }
  if (inBanner) {
    banner.push_back(line);
    return {};
  }
  static const std::regex rankLineRe(R"(^zb-run: rank (\d+): )");
  std::smatch m;
  if (std::regex_search(line, m, rankLineRe))
    ranksWithMessage.insert(m[1].str());
  // Noise Open MPI 4.1 prints after MPI_Abort without the -q option.
  if (line.find("ORTE_ERROR_LOG") != std::string::npos &&
      line.find("show_help") != std::string::npos)
    return {};
  return {line};
}

std::vector<std::string> MpirunStderrFilter::finish() {
  std::vector<std::string> out;
  if (inBanner) {
    inBanner = false;
    out.push_back(std::string(74, '-'));
    out.insert(out.end(), banner.begin(), banner.end());
  }
  // One line per failed rank that did not explain itself.
  std::set<std::string> done = ranksWithMessage;
  for (const auto &[rank, line] : deferred)
    if (done.insert(rank).second)
      out.push_back(line);
  return out;
}

std::vector<std::string> MpirunStderrFilter::classifyBanner() {
  const std::string text = join(banner);
  std::smatch m;
  static const std::regex signalRe(
      R"(process rank (\d+) with PID .* exited on signal (\d+) \(([^)]*)\))");
  static const std::regex nonZeroRe(
      R"(Process name: \[\[\d+,\d+\],(\d+)\][\s\S]*Exit code:\s+(\d+))");
  static const std::regex abortRe(R"(MPI_ABORT was invoked on rank (\d+))");
  static const std::regex improperRe(
      R"(mpirun has exited due to process rank (\d+))");
  auto defer = [&](const std::string &rank, const std::string &what) {
    deferred.emplace_back(rank, "zb-run: rank " + rank + ": " + what);
    return std::vector<std::string>{};
  };
  if (std::regex_search(text, m, signalRe))
    return defer(m[1].str(), "terminated by signal " + m[2].str() + " (" +
                                 m[3].str() + "); the job was stopped");
  if (text.find("Primary job") != std::string::npos &&
      text.find("non-zero exit code") != std::string::npos)
    return {};
  if (text.find("exited with non-zero status") != std::string::npos) {
    if (!std::regex_search(text, m, nonZeroRe))
      return {};
    return defer(m[1].str(),
                 "exited with code " + m[2].str() + "; the job was stopped");
  }
  if (std::regex_search(text, m, abortRe))
    return defer(m[1].str(), "aborted the job (MPI_Abort)");
  if (std::regex_search(text, m, improperRe))
    return defer(m[1].str(),
                 "exited without finalizing MPI; the job was stopped");
  // Unknown banner: show it as it was.
  std::vector<std::string> out = {std::string(74, '-')};
  out.insert(out.end(), banner.begin(), banner.end());
  out.push_back(std::string(74, '-'));
  return out;
}

int zb::runner::runMpirun(const std::vector<std::string> &argv,
                        std::string *error) {
  // mpirun's stderr (filtered below) and stdout (relayed by a thread, so
  // that a write error on zb-run's stdout, such as a full disk, is not lost
  // as mpirun would lose it) come through pipes.
  int fds[2], outFds[2];
  if (pipe(fds) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return -1;
  }
  if (pipe(outFds) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  std::vector<char *> cargs;
  for (const std::string &a : argv)
    cargs.push_back(const_cast<char *>(a.c_str()));
  cargs.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    return -1;
  }
  if (pid == 0) {
    // If zb-run dies (even SIGKILL), mpirun gets SIGTERM and ends the job:
    // nothing is left running.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() == 1)
      _exit(1); // the launcher died before prctl took effect
    dup2(fds[1], 2);
    dup2(outFds[1], 1);
    close(fds[0]);
    close(fds[1]);
    close(outFds[0]);
    close(outFds[1]);
    execv(cargs[0], cargs.data());
    std::fprintf(stderr, "zb-run: error: cannot execute %s: %s\n", cargs[0],
                 std::strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  close(outFds[1]);
  int outErrno = 0;
  std::thread relay([&] {
    char buffer[1 << 16];
    ssize_t n;
    while ((n = read(outFds[0], buffer, sizeof buffer)) != 0) {
      if (n < 0) {
        if (errno == EINTR)
          continue;
        break;
      }
      // Keep reading after a failure so that mpirun never blocks on us.
      if (!outErrno && (std::fwrite(buffer, 1, (size_t)n, stdout) !=
                            (size_t)n ||
                        std::fflush(stdout) != 0))
        outErrno = errno ? errno : EIO;
    }
    close(outFds[0]);
  });
  gChild = pid;
  for (int sig : {SIGINT, SIGTERM, SIGHUP})
    signal(sig, forwardSignal);

  MpirunStderrFilter filter;
  FILE *in = fdopen(fds[0], "r");
  char *line = nullptr;
  size_t cap = 0;
  ssize_t len;
  auto emit = [](const std::vector<std::string> &lines) {
    for (const std::string &l : lines)
      std::fprintf(stderr, "%s\n", l.c_str());
    std::fflush(stderr);
  };
  while ((len = getline(&line, &cap, in)) >= 0) {
    std::string text(line, (size_t)len);
    if (!text.empty() && text.back() == '\n')
      text.pop_back();
    emit(filter.addLine(text));
  }
  emit(filter.finish());
  std::free(line);
  std::fclose(in);

  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  relay.join();
  if (outErrno) {
    std::fprintf(stderr,
                 "zb-run: error: cannot write the job's output to standard "
                 "output: %s\n",
                 std::strerror(outErrno));
    std::fflush(stderr);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
      return 1;
  }
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return 1;
}

bool zb::runner::insideMPIJob() {
  const char *size = std::getenv("OMPI_COMM_WORLD_SIZE");
  return size && *size;
}

llvm::Expected<int64_t> zb::runner::countHostSlots(llvm::StringRef hosts) {
  auto error = [&](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--hosts " + hosts + ": " + message);
  };
  if (hosts.empty())
    return error("expected NAME[:SLOTS],... (e.g. node1:8,node2:8)");
  llvm::SmallVector<llvm::StringRef> entries;
  hosts.split(entries, ',');
  std::set<std::string> seen;
  int64_t slots = 0;
  for (llvm::StringRef entry : entries) {
    auto [name, count] = entry.split(':');
    if (name.empty())
      return error("entry '" + entry + "' has no node name");
    if (name.find_first_of(" \t=") != llvm::StringRef::npos)
      return error("node name '" + name + "' has a blank or '='");
    int64_t n = 1;
    if (entry.contains(':') &&
        (count.getAsInteger(10, n) || n < 1 || n > 65536))
      return error("entry '" + entry +
                   "': the slots after ':' must be an integer in [1, 65536]");
    if (!seen.insert(name.str()).second)
      return error("node '" + name + "' is given twice");
    slots += n;
  }
  return slots;
}

llvm::Expected<int> zb::runner::runUnderMpirun(int argc, char **argv, int ranks,
                                               const std::string &hosts) {
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  llvm::ErrorOr<std::string> mpirun = llvm::sys::findProgramByName("mpirun");
  if (!mpirun)
    return error("--ranks " + llvm::Twine(ranks) +
                 ": mpirun not found on PATH (install openmpi-bin)");
  std::string self =
      llvm::sys::fs::getMainExecutable(argv[0], (void *)&runUnderMpirun);
  if (self.empty())
    return error("cannot determine the path of the zb-run executable");
  std::vector<std::string> args = {*mpirun};
  // Open MPI refuses root unless told; tell it only when zb-run is root.
  const bool root = geteuid() == 0;
  if (root)
    args.push_back("--allow-run-as-root");
  for (const char *a : {"--oversubscribe", "-np"})
    args.push_back(a);
  args.push_back(std::to_string(ranks));
  if (!hosts.empty())
    args.insert(args.end(), {"--host", hosts});
  args.push_back(self);
  for (int i = 1; i < argc; ++i)
    args.push_back(argv[i]);
  if (root) {
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  }
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  std::string why;
  int code = runMpirun(args, &why);
  if (code < 0)
    return error("cannot run " + *mpirun + ": " + why);
  return code;
}
