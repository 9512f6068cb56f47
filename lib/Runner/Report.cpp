//===- Report.cpp - zb-run: what rank 0 prints ----------------------------===//

#include "zb/Runner/Report.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace llvm;
using namespace zb::runner;
using namespace zb::formats;

double RunReport::meanStepTimeMs() const {
  double sum = 0;
  int64_t counted = 0;
  for (const StepResult &r : steps)
    if (steps.size() == 1 || r.step > steps.front().step) {
      sum += r.timeMs;
      ++counted;
    }
  return sum / std::max<int64_t>(counted, 1);
}

std::string RunReport::measuredSteps() const {
  if (steps.empty())
    return "no step";
  return steps.size() == 1
             ? formatv("step {0}", steps.front().step).str()
             : formatv("steps {0}-{1}", steps.front().step + 1,
                       steps.back().step)
                   .str();
}

json::Value zb::runner::jsonNumber(double v) {
  if (std::isfinite(v))
    return v;
  return nullptr;
}

void zb::runner::printStepLine(raw_ostream &os, const StepResult &step,
                               bool newline) {
  os << format("step %3lld  loss %.6f  time %.2f ms  lr %.2e",
               (long long)step.step, step.loss, step.timeMs, step.lr);
  if (step.skipped)
    os << "  skipped";
  else if (step.gradNorm && std::isfinite(*step.gradNorm))
    os << format("  norm %.4f", *step.gradNorm);
  if (step.tokensPerSecond)
    os << format("  %.0f tok/s", *step.tokensPerSecond);
  if (step.etaSeconds) {
    auto s = (long long)std::llround(*step.etaSeconds);
    if (s >= 3600)
      os << format("  eta %lldh%02lldm", s / 3600, s / 60 % 60);
    else
      os << format("  eta %lldm%02llds", s / 60, s % 60);
  }
  if (newline)
    os << "\n";
}

namespace {

/// The transport of the CUDA backend to world rank `peer` (ZbrtCudaStats'
/// peer masks: ranks below 64), or null without a device channel.
const char *cudaTransport(const ZbrtCudaStats &c, int peer) {
  uint64_t bit = uint64_t(1) << peer;
  return (c.ncclPeers & bit)         ? "nccl"
         : (c.hostStagedPeers & bit) ? "host-staged"
                                     : nullptr;
}

/// "rank 1 nccl, rank 2 host-staged" (empty without a device channel).
std::string cudaTransportsText(const ZbrtCudaStats &c) {
  std::string text;
  for (int p = 0; p < 64; ++p)
    if (const char *t = cudaTransport(c, p))
      text +=
          (text.empty() ? "rank " : ", rank ") + std::to_string(p) + " " + t;
  return text;
}

/// " %.4f" per value.
void printRates(raw_ostream &os, const std::vector<double> &rates) {
  for (double b : rates)
    os << format(" %.4f", b);
}

void printPredicted(raw_ostream &os, const Plan &plan) {
  os << format("schedule %s: %d rank%s, %d stage%s, %lld microbatches of "
               "%lld%s\n",
               plan.schedule.empty() ? "?" : plan.schedule.c_str(),
               plan.numRanks, plan.numRanks == 1 ? "" : "s", plan.numStages,
               plan.numStages == 1 ? "" : "s", (long long)plan.numMicrobatches,
               (long long)plan.microbatchSize,
               plan.precision == zb::Precision::Bf16
                   ? ", bf16 (float32 master weights)"
                   : "");
  size_t width = 0;
  for (const PredictedInfo &p : plan.predicted)
    width = std::max(width, p.schedule.size());
  for (const PredictedInfo &p : plan.predicted) {
    os << format("predicted bubble rate  %-*s  %.4f", (int)width,
                 p.schedule.c_str(), p.bubbleRate);
    if (p.makespanMs)
      os << format("  (makespan %.3f ms)", *p.makespanMs);
    os << (p.schedule == plan.schedule ? "  <- this plan" : "") << "\n";
  }
  if (const PredictedInfo *p = plan.predictedForThisPlan();
      p && p->dataParallel)
    os << format("predicted with %d pipelines (all-reduce at %g GB/s + %g "
                 "ms): step %.3f ms, bubble rate %.4f, all-reduce exposed "
                 "%.3f ms (%.3f ms when it follows the backward pass)\n",
                 p->dataParallel->dataParallel, p->dataParallel->bandwidthGBps,
                 p->dataParallel->latencyMs, p->dataParallel->stepMs,
                 p->dataParallel->bubbleRate, p->dataParallel->exposedMs,
                 p->dataParallel->afterBackwardExposedMs);
}

/// Per rank, next to the realized bubble: this plan's simulated bubble of
/// that rank, and (with a profile) its expectation under the measured
/// pass-time jitter.
void printRealized(raw_ostream &os, const Plan &plan, const RunReport &report) {
  const PredictedInfo *mine = plan.predictedForThisPlan();
  const std::string range = report.measuredSteps();
  for (auto [r, bubble] : llvm::enumerate(report.realizedBubbleRate)) {
    if (!bubble)
      continue;
    os << format("realized bubble rate  rank %d  %.4f (mean over %s)", (int)r,
                 *bubble, range.c_str());
    if (mine && r < mine->rankBubbleRate.size())
      os << format("  predicted %.4f", mine->rankBubbleRate[r]);
    if (mine && mine->jitter && r < mine->jitter->rankBubbleRate.size())
      os << format(", with measured jitter %.4f",
                   mine->jitter->rankBubbleRate[r]);
    os << "\n";
  }
}

} // namespace

void zb::runner::printTextReport(raw_ostream &os, const Plan &plan,
                               const RunReport &report) {
  const std::string range = report.measuredSteps();
  printPredicted(os, plan);
  if (report.dataParallel > 1)
    os << formatv("data parallel: {0} pipelines of {1} rank{2} on {3} ranks "
                  "(pipeline d: ranks d*{1} .. d*{1}+{4}), each on {5} of "
                  "the step's {6} microbatches, gradients all-reduced across "
                  "them; per-rank numbers below are pipeline 0's\n",
                  report.dataParallel, plan.numRanks,
                  plan.numRanks == 1 ? "" : "s",
                  (int64_t)report.dataParallel * plan.numRanks,
                  plan.numRanks - 1, plan.numMicrobatches,
                  plan.numMicrobatches * report.dataParallel);
  os << format("realized mean step time %.2f ms (%s)\n",
               report.meanStepTimeMs(), range.c_str());
  if (report.wallStepTimeMs)
    os << format("realized wall-clock time per step %.2f ms (%s, steps "
                 "overlapping: --overlap-steps)\n",
                 *report.wallStepTimeMs, range.c_str());
  printRealized(os, plan, report);
  if (report.replaySteps) {
    os << format("this plan replayed with this run's pass times (T_comm = "
                 "0, mean over %lld steps): bubble rate per rank",
                 (long long)report.replaySteps);
    printRates(os, report.replayedBubbleRate);
    os << "\n";
  }
  if (report.atMeasured) {
    os << "this plan at this run's mean pass times (" << range
       << "): bubble rate per rank";
    printRates(os, report.atMeasured->rankBubbleRate);
    os << ", with this run's jitter";
    printRates(os, report.atMeasured->jitterRankBubbleRate);
    os << "\n";
  }
  printGradSyncText(os, report.gradSync);
  for (auto [r, c] : llvm::enumerate(report.cuda)) {
    os << format("cuda rank %d: device %d, %lld cuBLAS GEMMs, %lld/%lld NCCL "
                 "sends/receives (%lld staged early), %lld communicators, "
                 "%lld host synchronizations",
                 (int)r, c.device, (long long)c.gemms, (long long)c.ncclSends,
                 (long long)c.ncclRecvs, (long long)c.earlyMessages,
                 (long long)c.ncclCommunicators,
                 (long long)c.hostSynchronizations);
    if (c.ncclAllReduces > 0)
      os << format(", %lld NCCL all-reduce%s", (long long)c.ncclAllReduces,
                   c.ncclAllReduces == 1 ? "" : "s");
    os << "\n";
    // D pipelines: how the gradients crossed the data-parallel group.
    if (std::strncmp(c.allReduce, "mpi: ", 5) == 0)
      os << format("cuda rank %d gradient all-reduce: MPI on the host (%s)\n",
                   (int)r, c.allReduce + 5);
    else if (c.allReduce[0])
      os << format("cuda rank %d gradient all-reduce: %s\n", (int)r,
                   c.allReduce);
  }
  for (auto [r, c] : llvm::enumerate(report.cuda))
    os << format("cuda rank %d graphs: %s (%lld steps captured, %lld "
                 "replayed, %lld divergences, %lld graph launches, %lld "
                 "driver calls)\n",
                 (int)r, c.graphs, (long long)c.graphCaptures,
                 (long long)c.graphReplays, (long long)c.graphDivergences,
                 (long long)c.graphLaunches, (long long)c.driverCalls);
  for (auto [r, c] : llvm::enumerate(report.cuda)) {
    std::string peers = cudaTransportsText(c);
    if (!peers.empty())
      os << format("cuda rank %d transports: ", (int)r) << peers << "\n";
  }
  // Which ranks ran where, "node vm: ranks 0-3": per node in the order of
  // its first rank, its world ranks as runs.
  std::vector<std::string> order;
  for (const std::string &n : report.nodes)
    if (!llvm::is_contained(order, n))
      order.push_back(n);
  for (const std::string &node : order) {
    std::string ranks;
    size_t count = 0;
    for (size_t a = 0; a < report.nodes.size(); ++a) {
      if (report.nodes[a] != node)
        continue;
      size_t b = a;
      while (b + 1 < report.nodes.size() && report.nodes[b + 1] == node)
        ++b;
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(a) +
               (b > a ? "-" + std::to_string(b) : "");
      count += b - a + 1;
      a = b;
    }
    os << "node " << node << ": rank" << (count > 1 ? "s " : " ") << ranks
       << "\n";
  }
  os << "peak heap per rank (memory pool, bytes):";
  for (int64_t bytes : report.peakHeapBytes)
    os << " " << bytes;
  os << "\n";
  if (!report.traceFile.empty())
    os << "trace of step " << report.steps.size() << " written to "
       << report.traceFile << "\n";
  if (!report.profileFile.empty())
    os << "measured stage costs (" << range << ") written to "
       << report.profileFile << "\n";
}

void zb::runner::printJsonReport(raw_ostream &os, const Plan &plan,
                               const RunReport &report) {
  json::OStream j(os, 2);
  j.object([&] {
    j.attribute("plan", plan.path);
    j.attribute("schedule", plan.schedule);
    j.attribute("num_ranks", plan.numRanks);
    j.attribute("data_parallel", report.dataParallel);
    if (plan.precision != zb::Precision::Fp32)
      j.attribute("precision", zb::precisionName(plan.precision));
    j.attribute("num_stages", plan.numStages);
    j.attribute("num_microbatches", plan.numMicrobatches);
    j.attributeArray("steps", [&] {
      for (const StepResult &r : report.steps)
        j.object([&] {
          j.attribute("step", r.step);
          j.attribute("loss", jsonNumber(r.loss));
          j.attribute("time_ms", jsonNumber(r.timeMs));
          j.attribute("lr", jsonNumber(r.lr));
          j.attribute("grad_norm",
                      r.gradNorm ? jsonNumber(*r.gradNorm) : json::Value(nullptr));
        });
    });
    if (!report.evals.empty())
      j.attributeArray("evals", [&] {
        for (const EvalResult &e : report.evals)
          j.object([&] {
            j.attribute("step", e.step);
            j.attribute("val_loss", jsonNumber(e.loss));
            j.attribute("batches", e.batches);
          });
      });
    j.attributeObject("predicted", [&] {
      for (const PredictedInfo &p : plan.predicted)
        j.attribute(p.schedule, toJSON(p));
    });
    j.attribute("mean_step_time_ms", report.meanStepTimeMs());
    if (report.wallStepTimeMs)
      j.attribute("wall_step_time_ms", *report.wallStepTimeMs);
    if (report.replaySteps)
      j.attribute("replayed_bubble_rate",
                  json::Array(report.replayedBubbleRate));
    if (report.atMeasured)
      j.attributeObject("at_measured_costs", [&] {
        j.attribute("rank_bubble_rate",
                    json::Array(report.atMeasured->rankBubbleRate));
        j.attribute("jitter_rank_bubble_rate",
                    json::Array(report.atMeasured->jitterRankBubbleRate));
      });
    j.attribute("peak_heap_bytes", json::Array(report.peakHeapBytes));
    if (!report.nodes.empty())
      j.attribute("nodes", json::Array(report.nodes));
    if (!report.cuda.empty())
      j.attributeArray("cuda", [&] {
        for (const ZbrtCudaStats &c : report.cuda)
          j.object([&] {
            j.attribute("device", c.device);
            j.attribute("local_rank", c.localRank);
            j.attribute("gemms", c.gemms);
            j.attribute("nccl_sends", c.ncclSends);
            j.attribute("nccl_recvs", c.ncclRecvs);
            j.attribute("early_messages", c.earlyMessages);
            j.attribute("communicators", c.ncclCommunicators);
            j.attribute("staging_allocations", c.stagingAllocations);
            j.attribute("host_synchronizations", c.hostSynchronizations);
            j.attribute("kernel_launches", c.kernelLaunches);
            j.attribute("graph_launches", c.graphLaunches);
            j.attribute("graphs", c.graphs);
            j.attribute("graph_captures", c.graphCaptures);
            j.attribute("graph_replays", c.graphReplays);
            j.attribute("graph_divergences", c.graphDivergences);
            j.attribute("host_device_bytes", c.hostDeviceBytes);
            j.attribute("driver_calls", c.driverCalls);
            j.attributeObject("driver_calls_by_name", [&] {
              for (const ZbrtCallCount &n : c.driverCallsByName)
                if (n.name[0])
                  j.attribute(n.name, n.calls);
            });
            j.attribute("host_staged_sends", c.hostStagedSends);
            j.attribute("host_staged_recvs", c.hostStagedRecvs);
            j.attribute("nccl_allreduces", c.ncclAllReduces);
            j.attribute("allreduce", c.allReduce);
            j.attributeObject("transports", [&] {
              for (int p = 0; p < 64; ++p)
                if (const char *t = cudaTransport(c, p))
                  j.attribute(std::to_string(p), t);
            });
          });
      });
    if (report.gradSync.mode != OptimizerSync::None)
      j.attribute("gradient_sync", gradSyncJSON(report.gradSync));
    j.attributeArray("realized_bubble_rate", [&] {
      for (const std::optional<double> &b : report.realizedBubbleRate)
        b ? j.value(*b) : j.value(nullptr);
    });
    if (!report.traceFile.empty())
      j.attribute("trace", report.traceFile);
    if (!report.profileFile.empty())
      j.attribute("profile", report.profileFile);
  });
  os << "\n";
}

void zb::runner::printGradientReport(raw_ostream &os, double loss,
                                   const Plan &plan,
                                   const std::vector<double> &norms,
                                   bool json) {
  if (json) {
    json::OStream j(os, 2);
    j.object([&] {
      j.attribute("loss", jsonNumber(loss));
      j.attributeObject("grad_norm", [&] {
        for (size_t i = 0; i < plan.params.size(); ++i)
          j.attribute(plan.params[i].name, jsonNumber(norms[i]));
      });
    });
    os << "\n";
    return;
  }
  os << "loss " << format("%.9g", loss) << "\n";
  for (size_t i = 0; i < plan.params.size(); ++i)
    os << "grad_norm " << plan.params[i].name << " " << format("%.9g", norms[i])
       << "\n";
}
