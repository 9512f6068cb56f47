//===- Profile.h - profile.json, measured stage costs -----------*- C++ -*-===//
//
// The measured per-stage costs of the paper's profile-then-schedule loop
// (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, Section 3 and
// Appendix: profile T_F/T_B/T_W/T_comm, then schedule with them):
// `zb-run --profile FILE` writes it (writeProfile), `zb-compile --profile
// FILE` and `zb-opt -zb-schedule="profile=FILE"` read it (readProfile;
// zb-compile hands the costs to zb::applyStageCosts). One reader and one
// writer, here:
//
//   {"format": "zb-profile", "version": 1, "plan": "<plan.json>",
//    "steps": S,
//    "stages": [{"stage": s, "rank": r, "t_f": ms, "t_b": ms, "t_w": ms,
//                "t_comm": ms, "cv_f": x, "cv_b": x, "cv_w": x,
//                "count_f": n, "count_b": n, "count_w": n}, ...]}
//
// t_x: mean cost (ms) of the stage's x passes over the measured steps (a
// pass's duration plus its rank's own work on the messages it receives and
// sends, zb::formats::passCosts); cv_x: their coefficient of variation
// (population standard deviation / mean); t_comm: the shortest wait of a
// receive of the stage's rank (ms, a latency estimate); count_x: passes
// measured. cv_x and count_x are optional
// (profiles written before they existed lack them).
//
// MLIR-free: LLVM Support only (part of ZBFormats, lib/Formats).
//
//===----------------------------------------------------------------------===//
#ifndef ZB_FORMATS_PROFILE_H
#define ZB_FORMATS_PROFILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zb::formats {

/// One entry of "stages": what was measured for one pipeline stage.
struct ProfiledStage {
  int64_t stage = 0; ///< "stage" (the entry's position when absent)
  int64_t rank = -1; ///< rank that ran the stage; -1 unknown or absent
  double tF = 0, tB = 0, tW = 0, tComm = 0;      ///< ms, means, >= 0
  std::optional<double> cvF, cvB, cvW;           ///< >= 0 and finite
  std::optional<int64_t> countF, countB, countW; ///< passes measured
};

struct Profile {
  std::string plan;  ///< "plan": the plan.json measured ("" when absent)
  int64_t steps = 0; ///< "steps": steps run (0 when absent)
  /// In stage order: entry i is stage i (the file may list them in any
  /// order; each of 0..N-1 exactly once).
  std::vector<ProfiledStage> stages;
};

/// Parses profile.json text. Errors are whole sentences naming the file and
/// the field, e.g.
///   profile 'p.json': stage 1: missing or negative "t_b"
///   profile 'p.json': stage 0: "cv_b" = -0.50; a coefficient of variation
///   must be >= 0
///   profile 'p.json': not a zb-run --profile file (expected "format":
///   "zb-profile" and "stages")
llvm::Expected<Profile> parseProfile(llvm::StringRef text,
                                     llvm::StringRef path);
/// Reads and parses `path` ("profile '<path>': cannot read: <reason>").
llvm::Expected<Profile> readProfile(llvm::StringRef path);

/// Writes the document above (keys in the order shown, indented by 2, a
/// final newline); optional fields only when present.
void writeProfile(llvm::raw_ostream &os, const Profile &profile);
/// Writes it to `path`; error "cannot open '<path>': <reason>".
llvm::Error writeProfile(const Profile &profile, llvm::StringRef path);

} // namespace zb::formats

#endif // ZB_FORMATS_PROFILE_H
