//===- Training.h - A training run's optimizer settings ---------*- C++ -*-===//
//
// What zb-run trains with beyond the plan: the learning rate as a function
// of the step (warmup, then constant, cosine or linear decay to a floor),
// AdamW's betas, eps and weight decay, and which parameters are decayed.
// plan.json's "optimizer" gives the defaults, zb-run's flags override them,
// and a checkpoint stores the resolved settings ("training" in
// checkpoint.json), so that a resumed run continues the same schedule.
// MLIR-free; docs/training.md shows the flags.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_FORMATS_TRAINING_H
#define ZB_FORMATS_TRAINING_H

#include "zb/Formats/Plan.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <string>
#include <vector>

namespace zb::formats {

/// zb-run --lr-schedule.
enum class LrScheduleKind {
  Constant, ///< "constant": the base lr after the warmup
  Cosine,   ///< "cosine": half a cosine from the base lr to min_lr
  Linear,   ///< "linear": a straight line from the base lr to min_lr
};

/// "constant", "cosine" or "linear".
llvm::StringRef lrScheduleName(LrScheduleKind kind);
/// The kind lrScheduleName gives `name`; error "must be constant, cosine or
/// linear, got '<name>'".
llvm::Expected<LrScheduleKind> parseLrSchedule(llvm::StringRef name);

/// The learning rate of training step s (1-based; the lr the optimizer step
/// of step s uses), with base lr L, warmup W steps, decay end D and floor m:
///
///   s <= W:  L * s / W                         (linear warmup)
///   s >  W:  t = s - W - 1, T = D - W - 1, f = min(t, T) / T (f = 1 when
///            T <= 0):
///     constant  L
///     cosine    m + (L - m) * (1 + cos(pi * f)) / 2
///     linear    L + (m - L) * f
///
/// These are PyTorch's schedulers stepped once per optimizer step:
/// SequentialLR([LinearLR(start_factor=1/W, total_iters=W-1),
/// CosineAnnealingLR(T_max=T, eta_min=m) | LinearLR(1, m/L, total_iters=T)],
/// milestones=[W]) (llm.c's and nanoGPT's loops differ only in where the
/// decay ends); unittests/Runtime/Inputs/lr_schedules_torch.json holds
/// PyTorch's numbers. The lr reaches m at step D and stays there (where
/// CosineAnnealingLR would rise again: the fixture adds a constant phase
/// from step D + 1).
struct LrSchedule {
  LrScheduleKind kind = LrScheduleKind::Constant;
  double lr = 0.01;        ///< the base (peak) learning rate L
  int64_t warmupSteps = 0; ///< W >= 0
  int64_t decaySteps = 0;  ///< D: the step at which the lr reaches minLr
  double minLr = 0;        ///< m, in [0, L]

  /// The lr of training step `step` (1-based) as above.
  double at(int64_t step) const;
};

/// Checks `s`: L a valid learning rate (isValidLearningRate), 0 <= m <= L,
/// W >= 0, and for cosine and linear D > W. Errors name the zb-run flag.
llvm::Error checkLrSchedule(const LrSchedule &s);

/// A training run's optimizer settings (zb-run's flags over plan.json's
/// "optimizer"). Weight decay and the betas apply to AdamW only.
struct TrainingSettings {
  Optimizer optimizer = Optimizer::Sgd;
  LrSchedule lr;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weightDecay = 0.01;
  /// zb-run --no-decay: the parameters AdamW does not decay
  /// (weightDecayMask).
  std::string noDecay = "1d,embeddings";
};

/// Settings from plan.json's optimizer: its lr as a constant schedule, its
/// betas, eps and weight decay, the default --no-decay.
TrainingSettings trainingSettings(const OptimizerInfo &optimizer);

/// Checks the settings: the schedule (checkLrSchedule), 0 <= beta < 1,
/// eps > 0, weight decay >= 0 with lr * weight decay < 1 (AdamW multiplies
/// the parameters by 1 - lr * weight decay), all finite. Errors name the
/// zb-run flag.
llvm::Error checkTrainingSettings(const TrainingSettings &s);

/// checkpoint.json "training":
///   {"optimizer": "adamw", "lr_schedule": "cosine", "lr": L,
///    "warmup_steps": W, "decay_steps": D, "min_lr": m, "beta1": .., "beta2":
///    .., "eps": .., "weight_decay": .., "no_decay": "1d,embeddings"}
llvm::json::Value toJSON(const TrainingSettings &s);
/// Parses toJSON's object; errors name `path` and the field.
llvm::Expected<TrainingSettings> parseTrainingSettings(const llvm::json::Value &v,
                                                       llvm::StringRef path);

/// Which parameters AdamW decays: one flag per plan.json parameter (true =
/// decayed), every parameter except those `spec` names. `spec` is a comma
/// list of
///   1d          parameters of fewer than 2 dimensions (biases, norm scales)
///   embeddings  parameters whose name matches *emb*, *wte* or *wpe*
///               (token and position embeddings as GPT-2, Llama and BERT
///               exports name them)
///   GLOB        parameters whose name matches the glob (llvm::GlobPattern:
///               * ? [a-z] {a,b})
/// and "" (or "none") decays everything. The default "1d,embeddings" keeps
/// biases, norms and embeddings undecayed; nanoGPT's rule (it decays the
/// embeddings) is "1d". Errors: a bad glob, naming it.
llvm::Expected<std::vector<bool>> weightDecayMask(const Plan &plan,
                                                  llvm::StringRef spec);

} // namespace zb::formats

#endif // ZB_FORMATS_TRAINING_H
