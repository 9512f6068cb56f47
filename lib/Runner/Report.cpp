//===- Report.cpp - zb-run: what rank 0 prints ----------------------------===//

#include "zb/Runner/Report.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
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

/// "rank 2" or "ranks 0-1, 3": sorted world ranks as runs.
std::string rankList(const std::vector<int32_t> &ranks) {
  std::string text;
  for (size_t a = 0; a < ranks.size(); ++a) {
    size_t b = a;
    while (b + 1 < ranks.size() && ranks[b + 1] == ranks[b] + 1)
      ++b;
    text += (text.empty() ? "" : ", ") + std::to_string(ranks[a]) +
            (b > a ? "-" + std::to_string(ranks[b]) : "");
    a = b;
  }
  return (ranks.size() == 1 ? "rank " : "ranks ") + text;
}

/// The distinct values of `valueOf(rank)` over `ranks`, in order of first
/// appearance, as "v" (one value) or "v1 (rank 0), v2 (ranks 1-2)"; values
/// "" are left out.
template <typename F>
std::string byValue(const std::vector<int32_t> &ranks, F valueOf) {
  std::vector<std::pair<std::string, std::vector<int32_t>>> groups;
  for (int32_t r : ranks) {
    std::string v = valueOf(r);
    if (v.empty())
      continue;
    auto it = llvm::find_if(groups, [&](auto &g) { return g.first == v; });
    if (it == groups.end())
      groups.push_back({v, {r}});
    else
      it->second.push_back(r);
  }
  if (groups.size() == 1)
    return groups.front().second.size() == ranks.size()
               ? groups.front().first
               : groups.front().first + " (" +
                     rankList(groups.front().second) + ")";
  std::string text;
  for (auto &[v, rs] : groups)
    text += (text.empty() ? "" : ", ") + v + " (" + rankList(rs) + ")";
  return text;
}

/// A rank's pipeline transports: the distinct ones joined by " and ".
std::string pipelineText(const RankTransports &t) {
  std::vector<std::string> seen;
  for (const auto &[peer, how] : t.pipeline)
    if (!llvm::is_contained(seen, how))
      seen.push_back(how);
  return llvm::join(seen, " and ");
}

/// "cpu", "cuda device 0" or "cuda devices 0, 1, 2 and 3": a node's ranks'
/// devices, distinct, in rank order.
std::string devicesText(const std::vector<int32_t> &ranks,
                        const RunReport &report) {
  std::vector<int32_t> devices;
  bool cpu = false;
  for (int32_t r : ranks) {
    int32_t d = report.placement[r].cudaDevice;
    if (d < 0)
      cpu = true;
    else if (!llvm::is_contained(devices, d))
      devices.push_back(d);
  }
  std::string text = cpu ? "cpu" : "";
  if (!devices.empty()) {
    text += (cpu ? " and " : "") +
            std::string(devices.size() == 1 ? "cuda device " : "cuda devices ");
    for (size_t i = 0; i < devices.size(); ++i)
      text += (i == 0 ? "" : i + 1 == devices.size() ? " and " : ", ") +
              std::to_string(devices[i]);
  }
  return text;
}

/// Which ranks ran where and how their messages travelled, one line per
/// node in the order of its first rank: "node vm: ranks 0-3, cpu; pipeline
/// messages mpi shared memory; gradient all-reduce mpi network".
void printNodes(raw_ostream &os, const Plan &plan, const RunReport &report) {
  std::vector<std::string> order;
  for (const std::string &n : report.nodes)
    if (!llvm::is_contained(order, n))
      order.push_back(n);
  const bool placed = report.placement.size() == report.nodes.size();
  const std::vector<RankTransports> transports =
      placed ? rankTransports(plan, report) : std::vector<RankTransports>{};
  for (const std::string &node : order) {
    std::vector<int32_t> ranks;
    for (size_t r = 0; r < report.nodes.size(); ++r)
      if (report.nodes[r] == node)
        ranks.push_back((int32_t)r);
    os << "node " << node << ": " << rankList(ranks);
    if (placed) {
      os << ", " << devicesText(ranks, report);
      std::string pipeline = byValue(
          ranks, [&](int32_t r) { return pipelineText(transports[r]); });
      if (!pipeline.empty())
        os << "; pipeline messages " << pipeline;
      std::string allReduce =
          byValue(ranks, [&](int32_t r) { return transports[r].allReduce; });
      if (!allReduce.empty())
        os << "; gradient all-reduce " << allReduce;
    }
    os << "\n";
  }
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

std::vector<RankTransports>
zb::runner::rankTransports(const Plan &plan, const RunReport &report) {
  const std::vector<RankPlacement> &place = report.placement;
  const int32_t p = std::max(plan.numRanks, 1);
  std::vector<RankTransports> out(place.size());
  auto mpi = [&](int32_t a, int32_t b) {
    return place[a].sharedMemoryGroup == place[b].sharedMemoryGroup
               ? "mpi shared memory"
               : "mpi network";
  };
  for (size_t w = 0; w < place.size(); ++w) {
    const int32_t s = (int32_t)w % p, first = (int32_t)w - s;
    // Pipeline peers: whom this rank sends to and who sends to it.
    std::vector<int32_t> peers;
    for (const RankInfo &from : plan.ranks) {
      if (!from.sends)
        continue;
      for (const SentMessage &m : *from.sends) {
        int32_t peer = from.rank == s ? m.peer : m.peer == s ? from.rank : -1;
        if (peer >= 0 && peer != s && peer < p &&
            !llvm::is_contained(peers, peer))
          peers.push_back(peer);
      }
    }
    llvm::sort(peers);
    const RankPlacement &me = place[w];
    for (int32_t peer : peers) {
      const int32_t q = first + peer;
      if (q >= (int32_t)place.size())
        continue;
      const uint64_t bit = q < 64 ? uint64_t(1) << q : 0;
      std::string how = mpi((int32_t)w, q);
      if (me.ncclPeers & bit)
        how = "nccl";
      else if (me.hostStagedPeers & bit)
        how = "host-staged " + how;
      out[w].pipeline.emplace_back(q, how);
    }
    if (report.dataParallel <= 1)
      continue;
    if (me.cudaAllReduce == "nccl") {
      out[w].allReduce = "nccl";
      continue;
    }
    bool shared = false, network = false;
    for (int32_t d = 0; d < report.dataParallel; ++d) {
      const int32_t q = d * p + s;
      if (q == (int32_t)w || q >= (int32_t)place.size())
        continue;
      (place[q].sharedMemoryGroup == me.sharedMemoryGroup ? shared : network) =
          true;
    }
    out[w].allReduce = shared && network ? "mpi shared memory and network"
                       : network         ? "mpi network"
                                         : "mpi shared memory";
    if (me.cudaDevice >= 0)
      out[w].allReduce = "host-staged " + out[w].allReduce;
  }
  return out;
}

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
  printNodes(os, plan, report);
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
    if (!report.placement.empty()) {
      const std::vector<RankTransports> transports =
          rankTransports(plan, report);
      j.attributeArray("placement", [&] {
        for (auto [w, place] : llvm::enumerate(report.placement))
          j.object([&] {
            j.attribute("rank", (int64_t)w);
            j.attribute("node", place.node);
            j.attribute("device",
                        place.cudaDevice < 0
                            ? std::string("cpu")
                            : "cuda:" + std::to_string(place.cudaDevice));
            j.attributeObject("pipeline", [&] {
              for (const auto &[peer, how] : transports[w].pipeline)
                j.attribute(std::to_string(peer), how);
            });
            if (!transports[w].allReduce.empty())
              j.attribute("allreduce", transports[w].allReduce);
          });
      });
    }
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
