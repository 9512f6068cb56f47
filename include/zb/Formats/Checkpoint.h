//===- Checkpoint.h - zb-run checkpoints: the format ------------*- C++ -*-===//
//
// zb-run --checkpoint DIR [--checkpoint-every N] writes, after steps N, 2N,
// ... and after the last step, a directory DIR/step-<S> (S = steps done,
// 8 digits) holding:
//   checkpoint.json  {"format": "zb-checkpoint", "version": 1,
//                     "step": S, "optimizer_step": t, "optimizer": "adamw",
//                     "seed": K, "num_ranks": p, "plan_hash": "<16 hex>",
//                     "checksums": {"params.bin": "<16 hex>", ...},
//                     "training": {"lr_schedule": "cosine", ...}}
//   params.bin       the parameters in the plan's params.bin layout
//   model.safetensors the same parameters as safetensors (for other tools;
//                    resuming reads params.bin)
//   adam_m.bin       AdamW first and second moments in the same layout
//   adam_v.bin       (adamw only)
// Everything is written into DIR/step-<S>.tmp.<pid> and renamed when
// complete, so a step-<S> directory is always whole; the two newest are
// kept. `optimizer_step` is AdamW's t (skipped steps do not count); the
// data position is the step (batches are a function of seed and step);
// plan_hash is FNV-1a 64 of the plan as zb-run reads it (toJSON, without
// "params_checksum": the initial values do not matter to a resume), so a
// checkpoint only resumes the plan it was written for. `checksums` holds the
// XXH3-64 (zb/Support/Checksum.h) of every other file of the checkpoint as
// written; --resume checks each before reading any and refuses a file that
// differs (a flipped bit, a truncated or replaced file), naming it. A
// checkpoint without `checksums` (written before they existed) resumes
// unchecked. `training` holds the run's resolved optimizer settings
// (zb/Formats/Training.h: the lr schedule with its decay end, betas, weight
// decay and its groups); --resume continues with them unless zb-run's flags
// say otherwise. A checkpoint without it resumes with the flags' settings.
//
// zb-run PLAN --resume DIR|DIR/step-<S> --steps N continues with steps
// S+1 .. S+N: the same losses and bit-identical parameters as one run.
//
// MLIR-free; the collective writing and loading are in Runner.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_FORMATS_CHECKPOINT_H
#define ZB_FORMATS_CHECKPOINT_H

#include "zb/Formats/Plan.h"
#include "zb/Formats/Training.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <string>

namespace zb::formats {

struct CheckpointInfo {
  std::string dir;           ///< the step-<S> directory (not written)
  int64_t step = 0;          ///< steps done, >= 1
  int64_t optimizerStep = 0; ///< optimizer steps applied (AdamW's t)
  Optimizer optimizer = Optimizer::Sgd; ///< "optimizer": "sgd" or "adamw"
  uint64_t seed = 0;         ///< zb-run --seed of the text batches
  int32_t numRanks = 0;
  std::string planHash; ///< planHash() of the plan it was written for
  /// "checksums": file name in the directory -> fileChecksum() of it.
  std::map<std::string, std::string> checksums;
  /// "training": the run's optimizer settings (absent in older checkpoints).
  std::optional<TrainingSettings> training;
};

/// XXH3-64 of the file at `path` as 16 hex digits (zb::support::xxh3Hex);
/// an error "checkpoint '<path>': cannot read: ..." when it cannot be read.
llvm::Expected<std::string> fileChecksum(llvm::StringRef path);

/// Checks every file of `info.checksums` in `info.dir` against its checksum.
/// Errors: "checkpoint 'DIR/params.bin': damaged: its checksum is X,
/// checkpoint.json records Y (...)", or a file that cannot be read.
llvm::Error verifyCheckpointFiles(const CheckpointInfo &info);

/// FNV-1a 64 of toJSON(plan) without "params_checksum", printed compactly,
/// as 16 hex digits.
std::string planHash(const Plan &plan);

/// "step-00000012".
std::string checkpointDirName(int64_t step);

/// checkpoint.json text of `info`.
std::string checkpointJSON(const CheckpointInfo &info);

/// Parses checkpoint.json text; errors name `path` and the field.
llvm::Expected<CheckpointInfo> parseCheckpoint(llvm::StringRef text,
                                               llvm::StringRef path);

/// The checkpoint at `path`: a step-<S> directory (with checkpoint.json),
/// or a --checkpoint directory, whose newest complete step-<S> it takes.
/// Errors: nothing there, no complete checkpoint, a bad checkpoint.json.
llvm::Expected<CheckpointInfo> findCheckpoint(llvm::StringRef path);

/// Whether `info` can resume `plan` with `seed` (0 = take the
/// checkpoint's): same plan hash, rank count and optimizer. Errors name
/// what differs.
llvm::Error checkResumable(const CheckpointInfo &info, const Plan &plan,
                           uint64_t seed);

} // namespace zb::formats

#endif // ZB_FORMATS_CHECKPOINT_H
