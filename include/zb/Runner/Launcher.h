//===- Launcher.h - zb-run: running the job under mpirun --------*- C++ -*-===//
//
// zb-run DIR --ranks N (outside an MPI job) starts
//   mpirun --allow-run-as-root --oversubscribe -np N zb-run <same args>
// (with --hosts LIST: mpirun ... --host LIST, the ranks over those nodes)
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

/// zb-run --hosts LIST, Open MPI's --host syntax: NAME[:SLOTS] entries
/// separated by commas (a NAME without :SLOTS holds one slot). Returns the
/// number of slots; errors name the bad entry (an empty name, a name with
/// blanks or a '=', SLOTS not an integer in [1, 65536], a name given
/// twice).
llvm::Expected<int64_t> countHostSlots(llvm::StringRef hosts);

/// Runs this same command (argv of main) under
///   mpirun --allow-run-as-root --oversubscribe -np `ranks` <this exe> ...
/// with OPENBLAS_NUM_THREADS=1, through runMpirun; `hosts` non-empty adds
/// `--host hosts` (mpirun maps ranks by slot: a node's slots are filled
/// before the next node's). Returns its exit code; errors: mpirun not on
/// PATH, this executable not found, mpirun not started.
llvm::Expected<int> runUnderMpirun(int argc, char **argv, int ranks,
                                   const std::string &hosts = "");

} // namespace zb::runner

#endif // ZB_RUNNER_LAUNCHER_H
