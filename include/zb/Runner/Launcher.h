//===- Launcher.h - zb-run: running the job under mpirun --------*- C++ -*-===//
//
// zb-run DIR --ranks N (outside an MPI job) starts
//   mpirun --allow-run-as-root --oversubscribe -np N zb-run <same args>
// as a child process and filters mpirun's stderr: the multi-line help
// banners Open MPI prints when a rank fails are replaced by one line naming
// the rank ("zb-run: rank 1: terminated by signal 9 (Killed)"), or dropped
// when the rank already printed its own "zb-run: rank R: ..." message.
// Everything else (the ranks' own output) passes through unchanged.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_RUNNER_LAUNCHER_H
#define ZB_RUNNER_LAUNCHER_H

#include "llvm/Support/Error.h"

#include <set>
#include <string>
#include <vector>

namespace zb::runner {

/// Rewrites mpirun's stderr line by line (see the file comment).
class MpirunStderrFilter {
public:
  /// Feeds one line (without its newline); returns the lines to print.
  std::vector<std::string> addLine(const std::string &line);
  /// End of stream: returns what is still buffered.
  std::vector<std::string> finish();

private:
  std::vector<std::string> classifyBanner();
  bool inBanner = false;
  std::vector<std::string> banner;
  /// Ranks that printed their own "zb-run: rank R: ..." line.
  std::set<std::string> ranksWithMessage;
  /// One-line replacements of banners, by rank, printed at the end unless
  /// the rank printed its own message (mpirun's banners and the ranks'
  /// forwarded stderr arrive in no particular order).
  std::vector<std::pair<std::string, std::string>> deferred;
};

/// Runs `argv` (argv[0] an absolute path) with stderr filtered through
/// MpirunStderrFilter; SIGINT/SIGTERM/SIGHUP received meanwhile are
/// forwarded to it. Returns its exit code (128 + signal when it was killed);
/// on failure to start it, returns -1 and sets *error.
int runMpirun(const std::vector<std::string> &argv, std::string *error);

/// True inside a job started by Open MPI's mpirun (OMPI_COMM_WORLD_SIZE).
bool insideMPIJob();

/// Runs this same command (argv of main) under
///   mpirun --allow-run-as-root --oversubscribe -np `ranks` <this exe> ...
/// with OPENBLAS_NUM_THREADS=1, through runMpirun. Returns its exit code;
/// errors: mpirun not on PATH, this executable not found, mpirun not
/// started.
llvm::Expected<int> runUnderMpirun(int argc, char **argv, int ranks);

} // namespace zb::runner

#endif // ZB_RUNNER_LAUNCHER_H
