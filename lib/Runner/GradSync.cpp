//===- GradSync.cpp - Gradient clipping, non-finite check, post-validation ===//
//
// See zb/Runner/GradSync.h. Every rank takes the same decision from the same
// reduced state, so the ranks stay consistent without further messages.
//
//===----------------------------------------------------------------------===//

#include "zb/Runner/GradSync.h"
#include "zb/Runner/Layout.h"
#include "zb/Runner/Watched.h"

#include "zbrt/zbrt.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

using namespace llvm;
using namespace zb::runner;
using namespace zb::formats;

Expected<std::pair<int64_t, double>>
zb::runner::parseStepValue(StringRef flag, StringRef text) {
  auto [stepText, valueText] = text.split(':');
  int64_t step = 0;
  double value = 0;
  if (stepText.getAsInteger(10, step) || step < 1 ||
      valueText.getAsDouble(value) || !std::isfinite(value))
    return createStringError(
        inconvertibleErrorCode(),
        formatv("--{0}: expected STEP:VALUE with STEP >= 1, got '{1}'", flag,
                text)
            .str());
  return std::make_pair(step, value);
}

namespace {
enum StateTag { PartialTag = 1, FullTag = 2 };
} // namespace

GradSync::GradSync(const GradSyncOptions &options, RankProgram &rp,
                   const TrainingSettings &settings, std::vector<bool> decay,
                   int32_t rank, int32_t worldSize, raw_ostream *log)
    : options(options), rp(rp), settings(settings), decay(std::move(decay)),
      rank(rank), worldSize(worldSize),
      log(log), gradScale(1.0f / (float)rp.globalMicrobatches()) {
  report.clipNorm = options.clipNorm;
  report.mode = checks() ? options.sync : OptimizerSync::None;
  MPI_Comm_dup(layout().pipelineComm, &comm);
  sendBufs.reserve(worldSize + 1);
  if (checks() && options.sync == OptimizerSync::PostValidation &&
      rp.plan->optimizerSync == OptimizerSync::PostValidation) {
    programValidates = true;
    zbrt_set_validate_hook(
        [](void *self) { static_cast<GradSync *>(self)->settle(); }, this);
  }
}

GradSync::~GradSync() {
  if (programValidates)
    zbrt_set_validate_hook(nullptr, nullptr);
  if (pending && pending->request != MPI_REQUEST_NULL)
    MPI_Wait(&pending->request, MPI_STATUS_IGNORE);
  if (!sends.empty())
    MPI_Waitall((int)sends.size(), sends.data(), MPI_STATUSES_IGNORE);
}

void GradSync::inject(int64_t step) {
  const bool scale =
      options.injectGradScale && options.injectGradScale->first == step + 1;
  const bool nan = options.injectNan && options.injectNan->first == step + 1 &&
                   options.injectNan->second == rank && !rp.grads.empty();
  // The host writes the gradients: after the device's all-reduce (CUDA).
  if (scale || nan)
    zbrt_cuda_synchronize();
  if (scale)
    for (auto &[index, g] : rp.grads)
      for (int64_t i = 0; i < g.size(); ++i)
        g.data()[i] *= (float)options.injectGradScale->second;
  if (nan)
    rp.grads.begin()->second.data()[0] = std::numeric_limits<float>::quiet_NaN();
}

GradSync::GlobalState GradSync::local() const {
  GlobalState s;
  // Every gradient's sum of squares with one wait for the device.
  std::vector<const float *> xs;
  std::vector<int64_t> ns;
  xs.reserve(rp.grads.size());
  ns.reserve(rp.grads.size());
  for (auto &[index, g] : rp.grads) {
    xs.push_back(g.data());
    ns.push_back(g.size());
  }
  std::vector<double> sums(xs.size());
  std::vector<int32_t> bad(xs.size());
  zbrt_sum_squares_many(xs.data(), ns.data(), (int64_t)xs.size(), sums.data(),
                        bad.data());
  size_t k = 0;
  for (auto &[index, g] : rp.grads) {
    double sum = sums[k];
    if (bad[k++]) {
      s.firstBad =
          std::min(s.firstBad, ((int64_t)rank << 32) | (int64_t)index);
      continue;
    }
    // Tied parameters: counted on the rank of their first copy.
    if (rp.plan->params[index].rank == rank)
      s.sumSquares += sum * (double)gradScale * (double)gradScale;
  }
  return s;
}

// Every tensor of a weight-decay group in one call (one kernel launch
// under the CUDA backend).
void GradSync::optimizerCall(const Grads &grads, double factor, int64_t t,
                             int64_t step, bool undo) {
  const float scale = (float)(gradScale * factor);
  const float lr = (float)settings.lr.at(step + 1);
  const bool adamw = settings.optimizer == zb::Optimizer::AdamW;
  std::vector<ZbrtOptimizerTensor> groups[2]; // [decayed]
  for (auto &[index, g] : grads) {
    ZbrtOptimizerTensor tensor{rp.params.at(index).data(), g.data(), nullptr,
                               nullptr, g.size()};
    if (adamw) {
      tensor.m = rp.adamM.at(index).data();
      tensor.v = rp.adamV.at(index).data();
    }
    groups[adamw && settings.weightDecay > 0 && decay[index]].push_back(tensor);
  }
  for (int decayed = 0; decayed < 2; ++decayed) {
    const std::vector<ZbrtOptimizerTensor> &ts = groups[decayed];
    if (ts.empty())
      continue;
    const float wd = decayed ? (float)settings.weightDecay : 0.0f;
    const auto b1 = (float)settings.beta1, b2 = (float)settings.beta2,
               eps = (float)settings.eps;
    if (adamw && undo)
      zbrt_adamw_rollback_many(ts.data(), (int64_t)ts.size(), t, lr, b1, b2,
                               eps, wd, scale);
    else if (adamw)
      zbrt_adamw_step_many(ts.data(), (int64_t)ts.size(), t, lr, b1, b2, eps,
                           wd, scale);
    else if (undo)
      zbrt_sgd_rollback_many(ts.data(), (int64_t)ts.size(), lr, scale);
    else
      zbrt_sgd_step_many(ts.data(), (int64_t)ts.size(), lr, scale);
  }
}

void GradSync::apply(const Grads &grads, double factor, int64_t t,
                     int64_t step) {
  optimizerCall(grads, factor, t, step, /*undo=*/false);
}

void GradSync::rollback(const Grads &grads, double factor, int64_t t,
                        int64_t step) {
  optimizerCall(grads, factor, t, step, /*undo=*/true);
  ++myRollbacks;
}

bool GradSync::decide(int64_t step, const GlobalState &global, bool eager,
                      const Grads &grads) {
  GradSyncEvent event;
  event.step = step + 1;
  decided = Decision{step + 1};
  if (global.firstBad != kNoneBad && options.nonFinite != NonFinite::Ignore) {
    decided.skipped = true;
    event.skipped = true;
    event.rank = (int32_t)(global.firstBad >> 32);
    int64_t index = global.firstBad & 0xffffffff;
    event.param = index < (int64_t)rp.plan->params.size()
                      ? rp.plan->params[index].name
                      : "#" + std::to_string(index);
    // --nonfinite stop: the rank with the non-finite gradient has ended the
    // job in afterStep; the others must not wait for it (they may be inside
    // the next step).
    if (options.nonFinite == NonFinite::Stop)
      return true;
    if (eager) { // undo this rank's eager step
      rollback(grads, 1.0, applied, step);
      --applied;
    }
  } else {
    double norm = std::sqrt(global.sumSquares);
    decided.norm = norm;
    bool clip = options.clipNorm > 0 && norm > options.clipNorm;
    double factor = clip ? options.clipNorm / norm : 1.0;
    if (!clip) {
      if (!eager)
        apply(grads, 1.0, ++applied, step);
      return false;
    }
    if (eager)
      rollback(grads, 1.0, applied, step);
    else
      ++applied;
    apply(grads, factor, applied, step);
    event.norm = norm;
  }
  report.events.push_back(event);
  if (log && rank == 0) {
    if (clearLine) // over the progress line on a terminal
      *log << "\r\033[K";
    if (event.skipped)
      *log << formatv("step {0}: skipped (non-finite gradient of parameter "
                      "'{1}' on rank {2})\n",
                      event.step, event.param, event.rank);
    else
      *log << formatv("step {0}: gradient clipped (global norm {1:F4} > ",
                      event.step, event.norm)
           << format("%g)\n", options.clipNorm);
    log->flush();
  }
  return true;
}

void GradSync::stopOnNonFinite(int64_t step, StringRef param) {
  zbrt_fatal(formatv("step {0}: non-finite gradient of parameter '{1}' "
                     "(--nonfinite stop)",
                     step, param)
                 .str()
                 .c_str());
}

bool GradSync::isEager(const GlobalState &partial) const {
  if (partial.firstBad != kNoneBad && options.nonFinite != NonFinite::Ignore)
    return false;
  // The partial norm only grows along the chain: above the threshold here,
  // the full state clips too.
  return !(options.clipNorm > 0 &&
           std::sqrt(partial.sumSquares) > options.clipNorm);
}

void GradSync::afterStep(int64_t step) {
  inject(step);
  if (!checks()) {
    apply(rp.grads, 1.0, ++applied, step);
    return;
  }
  GlobalState mine = local();
  if (options.nonFinite == NonFinite::Stop && mine.firstBad != kNoneBad) {
    int64_t index = mine.firstBad & 0xffffffff;
    stopOnNonFinite(step + 1, rp.plan->params[index].name);
  }
  if (options.sync == OptimizerSync::AllReduce) {
    GlobalState global;
    std::string what =
        formatv("the gradient norm of step {0} across the ranks (all-reduce)",
                step + 1)
            .str();
    watched::allreduce(&mine.sumSquares, &global.sumSquares, 1, MPI_DOUBLE,
                       MPI_SUM, layout().pipelineComm, what.c_str());
    watched::allreduce(&mine.firstBad, &global.firstBad, 1, MPI_INT64_T,
                       MPI_MIN, layout().pipelineComm, what.c_str());
    decide(step, global, /*eager=*/false, rp.grads);
    return;
  }
  // Post-validation. The previous step's state messages have long been
  // delivered (this rank validated it): complete their sends.
  watched::waitAll(sends, "the delivery of the previous step's optimizer "
                          "state to the other ranks");
  sendBufs.clear();
  // The partial state from rank r-1, plus this rank's, on to rank r+1.
  GlobalState partial = mine;
  if (rank > 0) {
    GlobalState before;
    MPI_Request request;
    MPI_Irecv(&before, sizeof before, MPI_BYTE, rank - 1, PartialTag, comm,
              &request);
    std::string what = formatv("the partial optimizer state of step {0} from "
                               "rank {1}",
                               step + 1, rank - 1)
                           .str();
    zbrt_wait(&request, what.c_str());
    partial.sumSquares += before.sumSquares;
    partial.firstBad = std::min(partial.firstBad, before.firstBad);
  }
  auto isend = [&](const GlobalState &state, int to, int tag) {
    sendBufs.push_back(state);
    sends.emplace_back();
    MPI_Isend(&sendBufs.back(), sizeof(GlobalState), MPI_BYTE, to, tag, comm,
              &sends.back());
  };
  if (rank + 1 < worldSize) {
    isend(partial, rank + 1, PartialTag);
    pending.emplace();
    pending->step = step;
    pending->eager = isEager(partial);
    if (pending->eager)
      apply(rp.grads, 1.0, ++applied, step);
    MPI_Irecv(&pending->full, sizeof(GlobalState), MPI_BYTE, worldSize - 1,
              FullTag, comm, &pending->request);
    return;
  }
  // The last rank holds the full state: it decides now and sends it back.
  for (int32_t r = 0; r + 1 < worldSize; ++r)
    isend(partial, r, FullTag);
  amended = decide(step, partial, /*eager=*/false, rp.grads);
}

void GradSync::beforeStep() {
  amended = amended && programValidates;
  if (!pending)
    return;
  if (!programValidates) {
    settle(); // between steps: the passes see the validated parameters
    amended = false;
    return;
  }
  // The program validates during the step: keep this step's gradients.
  rp.swapGradientBuffers();
  pending->gradsSwapped = true;
}

void GradSync::settle() {
  if (!pending)
    return;
  std::string what = formatv("the full optimizer state of step {0} from "
                             "rank {1}",
                             pending->step + 1, worldSize - 1)
                         .str();
  zbrt_wait(&pending->request, what.c_str());
  Pending p = *pending;
  pending.reset();
  amended = decide(p.step, p.full, p.eager,
                   p.gradsSwapped ? rp.gradsPrevious : rp.grads);
}

bool GradSync::redoStep() {
  settle(); // a program without the call: validate now
  if (!amended || !programValidates)
    return false;
  amended = false;
  ++report.redoneSteps;
  return true;
}

GradSyncReport GradSync::finish() {
  watched::reduce(&myRollbacks, &report.rollbacks, 1, MPI_INT64_T, MPI_SUM, 0,
                  layout().pipelineComm,
                  "the other ranks' rollback counts (reduce)");
  return report;
}

void zb::runner::printGradSyncText(raw_ostream &os,
                                 const GradSyncReport &report) {
  // Only when something could happen (clipping) or did (a skipped step).
  if (report.mode == OptimizerSync::None || (report.clipNorm <= 0 && report.events.empty()))
    return;
  int64_t clipped = 0, skipped = 0;
  for (const GradSyncEvent &e : report.events)
    (e.skipped ? skipped : clipped) += 1;
  os << "optimizer sync " << zb::sched::optimizerSyncName(report.mode);
  if (report.clipNorm > 0)
    os << format(", gradient clipping at norm %g", report.clipNorm);
  os << formatv(": {0} step(s) clipped, {1} skipped, {2} rank-step(s) "
                "rolled back",
                clipped, skipped, report.rollbacks);
  if (report.mode == OptimizerSync::PostValidation)
    os << formatv(", {0} step(s) redone", report.redoneSteps);
  os << "\n";
}

json::Value zb::runner::gradSyncJSON(const GradSyncReport &report) {
  json::Array clipped, skipped;
  for (const GradSyncEvent &e : report.events) {
    if (e.skipped)
      skipped.push_back(json::Object{
          {"step", e.step}, {"rank", e.rank}, {"param", e.param}});
    else
      clipped.push_back(json::Object{{"step", e.step}, {"norm", e.norm}});
  }
  return json::Object{{"mode", zb::sched::optimizerSyncName(report.mode)},
                      {"clip_norm", report.clipNorm},
                      {"clipped_steps", std::move(clipped)},
                      {"skipped_steps", std::move(skipped)},
                      {"rollbacks", report.rollbacks},
                      {"redone_steps", report.redoneSteps}};
}
