//===- Collective.h - zb-run: what all ranks do together --------*- C++ -*-===//
//
// Inside MPI (every function is collective over MPI_COMM_WORLD: each rank
// calls it, in the same order): agreeing on an error, writing the
// parameters (--save-params) and checkpoints (--checkpoint) through rank 0,
// and the per-parameter gradient norms of the report. No file system shared
// between the ranks is needed: only rank 0 writes. MLIR-free.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_RUNNER_COLLECTIVE_H
#define ZB_RUNNER_COLLECTIVE_H

#include "zb/Formats/Checkpoint.h"
#include "zb/Formats/Plan.h"
#include "zb/Runner/RankProgram.h"
#include "zb/Support/DirectoryLock.h"

#include "llvm/Support/Error.h"

#include <memory>
#include <vector>

namespace zb::runner {

// The plan's types and readers (lib/Formats), which the runner speaks.
using formats::CheckpointInfo;
using formats::Plan;

/// Every rank passes its (possibly successful) result; if any rank failed,
/// the lowest failing rank prints "zb-run: rank R: <message>" and every rank
/// gets false (no rank is left waiting).
bool agree(llvm::Error err);

/// Rank 0's hold on --checkpoint DIR (lockCheckpointDir), released when
/// destroyed; a fatal error (zbrt_fatal) removes the lock file first.
class CheckpointDirLock {
public:
  CheckpointDirLock() = default;
  CheckpointDirLock(CheckpointDirLock &&) = default;
  CheckpointDirLock &operator=(CheckpointDirLock &&) = default;
  ~CheckpointDirLock();

private:
  friend bool lockCheckpointDir(llvm::StringRef dir, CheckpointDirLock &lock);
  std::unique_ptr<zb::support::DirectoryLock> lock;
};

/// --checkpoint DIR: rank 0 creates DIR when missing and takes its lock
/// (zb/Support/DirectoryLock.h) into `lock`, to hold for the whole run, so
/// that a second job does not write checkpoints into DIR; a stale lock of a
/// job that was killed is taken over with a note on stderr. False on every
/// rank when refused, named once: "DIR is in use by zb-run (pid P on host
/// H): wait for it to end, or use another directory".
bool lockCheckpointDir(llvm::StringRef dir, CheckpointDirLock &lock);

/// Data parallelism: checks that the D pipelines hold bit-identical
/// parameters (and AdamW moments): every rank hashes its tensors (XXH3-64)
/// and its data-parallel group compares the hashes. False on every rank
/// when a group differs, named once: "after step S the parameters of rank
/// R differ between the data-parallel pipelines (...)". What makes them
/// differ is a bug (the same all-reduced gradients must give the same
/// step); zb-run checks before it saves parameters or a checkpoint and at
/// the end of the run. True at once for D = 1.
bool checkPipelinesAgree(const RankProgram &rp, int64_t stepsDone);

/// --save-params PATH: every rank sends its parameters to rank 0, which
/// writes them in the plan's params.bin layout (offset_bytes of each
/// parameter; a tied parameter's copies are equal), or, where PATH ends in
/// ".safetensors", as a safetensors file (zb/Runner/Safetensors.h: each
/// parameter once under its plan name, F32, its plan shape), through
/// writeFileAtomically (zb/Support/AtomicFile.h: a crash or a full disk
/// leaves the previous file). False on every rank after a failure, named
/// once: "--save-params: cannot write PATH: <reason> (the previous file is
/// unchanged)". Rank 0 holds the whole file (the model's parameters, 4 bytes
/// each) while it writes. Then rank 0 writes PATH.xxh3, the XXH3-64 of PATH
/// as written (zb/Support/Checksum.h: `xxhsum -c PATH.xxh3` checks it), when
/// PATH is a regular file (not /dev/null).
bool saveFinalParams(const RankProgram &rp, const Plan &plan,
                     llvm::StringRef path);

/// --checkpoint DIR: writes DIR/step-<S> (zb/Formats/Checkpoint.h): rank 0
/// makes DIR/step-<S>.tmp.<pid>, the parameters (params.bin and the same
/// values as model.safetensors) and AdamW's moments are written into it as
/// by saveFinalParams, rank 0 adds checkpoint.json and
/// renames the directory; the two newest checkpoints stay. False on every
/// rank after a failure (named; the previous checkpoints are kept).
bool writeCheckpoint(const RankProgram &rp, const Plan &plan,
                     llvm::StringRef dir, const CheckpointInfo &info);

/// The L2 norm of grad / num_microbatches per parameter (plan order), on
/// rank 0 (zeros elsewhere). A tied parameter has a bit-identical summed
/// gradient on every rank holding a copy: it counts once, on the rank of its
/// first copy.
std::vector<double> gradientNorms(const RankProgram &rp, const Plan &plan);

} // namespace zb::runner

#endif // ZB_RUNNER_COLLECTIVE_H
