//===- PlanWriter.cpp - plan.json: the one writer
//--------------------------===//
//
// toJSON/writePlan of zb/Formats/Plan.h: every field of the schema of
// docs/plan-json.md, as zb-compile has always written it (keys sorted,
// indented by 2).
//
//===----------------------------------------------------------------------===//

#include "zb/Support/AtomicFile.h"
#include "zb/Formats/Plan.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace zb::formats;

namespace {

json::Object placement(int32_t stage, int32_t rank) {
  return json::Object{{"stage", stage}, {"rank", rank}};
}

json::Value optimizerJSON(const OptimizerInfo &opt) {
  json::Object o{{"name", zb::optimizerName(opt.kind)}, {"lr", opt.lr}};
  if (opt.kind == zb::Optimizer::AdamW) {
    o["beta1"] = opt.beta1;
    o["beta2"] = opt.beta2;
    o["eps"] = opt.eps;
    o["weight_decay"] = opt.weightDecay;
  }
  return o;
}

json::Value paramJSON(const ParamInfo &p) {
  json::Object o = placement(p.stage, p.rank);
  o["name"] = p.name;
  o["shape"] = json::Array(p.shape);
  o["offset_bytes"] = p.offsetBytes;
  if (!p.tiedCopies.empty()) {
    json::Array copies;
    for (const Placement &c : p.tiedCopies)
      copies.push_back(placement(c.stage, c.rank));
    o["tied_copies"] = std::move(copies);
  }
  return o;
}

json::Value inputJSON(const InputInfo &in) {
  json::Object o = placement(in.stage, in.rank);
  o["name"] = in.name;
  o["dtype"] = dtypeName(in.dtype);
  o["sample_shape"] = json::Array(in.sampleShape);
  if (in.indexRange > 0)
    o["index_range"] = in.indexRange;
  if (in.indexIgnore)
    o["index_ignore"] = *in.indexIgnore;
  return o;
}

json::Value stageJSON(const StageCostInfo &s) {
  json::Object o = placement(s.stage, s.rank);
  o["t_f"] = s.tF;
  o["t_b"] = s.tB;
  o["t_w"] = s.tW;
  o["t_comm"] = s.tComm;
  o["m_b"] = s.mB;
  o["m_w"] = s.mW;
  return o;
}

/// The fields a prediction and its jitter entry share.
json::Object bubbleJSON(double bubbleRate, std::optional<double> makespanMs,
                        const std::vector<double> &rankBubbleRate) {
  json::Object o{{"bubble_rate", bubbleRate}};
  if (makespanMs)
    o["makespan_ms"] = *makespanMs;
  if (!rankBubbleRate.empty())
    o["rank_bubble_rate"] = json::Array(rankBubbleRate);
  return o;
}

json::Value predictedJSON(const std::vector<PredictedInfo> &predicted) {
  json::Object all;
  for (const PredictedInfo &p : predicted)
    all[p.schedule] = toJSON(p);
  return all;
}

json::Value rankJSON(const RankInfo &r) {
  json::Array args;
  for (const ArgInfo &a : r.args) {
    json::Object arg{{"kind", argKindName(a.kind)}};
    if (a.kind != ArgKind::Loss)
      arg["index"] = a.index;
    args.push_back(std::move(arg));
  }
  json::Object rank{{"rank", r.rank},
                    {"library", r.library},
                    {"entry", r.entry},
                    {"args", std::move(args)}};
  if (r.sends) {
    json::Array sends;
    for (const SentMessage &m : *r.sends)
      sends.push_back(
          json::Object{{"peer", m.peer}, {"tag", m.tag}, {"bytes", m.bytes}});
    rank["sends"] = std::move(sends);
  }
  return rank;
}

template <typename T, typename Fn>
json::Array arrayOf(const std::vector<T> &items, Fn convert) {
  json::Array out;
  for (const T &item : items)
    out.push_back(convert(item));
  return out;
}

} // namespace

json::Value zb::formats::toJSON(const PredictedInfo &p) {
  json::Object o = bubbleJSON(p.bubbleRate, p.makespanMs, p.rankBubbleRate);
  if (p.jitter) {
    json::Object j = bubbleJSON(p.jitter->bubbleRate, p.jitter->makespanMs,
                                p.jitter->rankBubbleRate);
    if (p.jitter->samples)
      j["samples"] = *p.jitter->samples;
    o["jitter"] = std::move(j);
  }
  if (const std::optional<DataParallelPrediction> &dp = p.dataParallel)
    o["data_parallel"] =
        json::Object{{"data_parallel", dp->dataParallel},
                     {"bandwidth_gbps", dp->bandwidthGBps},
                     {"latency_ms", dp->latencyMs},
                     {"step_ms", dp->stepMs},
                     {"bubble_rate", dp->bubbleRate},
                     {"exposed_ms", dp->exposedMs},
                     {"after_backward_step_ms", dp->afterBackwardStepMs},
                     {"after_backward_exposed_ms", dp->afterBackwardExposedMs}};
  return o;
}

json::Value zb::formats::toJSON(const Plan &plan) {
  json::Object root{{"format", "zb-plan"},
                      {"version", 1},
                      {"model", plan.model},
                      {"num_ranks", plan.numRanks},
                      {"data_parallel", plan.dataParallel},
                      {"num_stages", plan.numStages},
                      {"num_chunks", plan.numChunks},
                      {"num_microbatches", plan.numMicrobatches},
                      {"microbatch_size", plan.microbatchSize},
                      {"schedule", plan.schedule},
                      {"target", plan.targetText()},
                      {"data", plan.data},
                      {"optimizer", optimizerJSON(plan.optimizer)},
                      {"params", arrayOf(plan.params, paramJSON)},
                      {"inputs", arrayOf(plan.inputs, inputJSON)},
                      {"stages", arrayOf(plan.stages, stageJSON)},
                      {"predicted", predictedJSON(plan.predicted)},
                      {"ranks", arrayOf(plan.ranks, rankJSON)}};
  if (plan.optimizerSync != sched::OptimizerSync::None)
    root["optimizer_sync"] = plan.optimizerSyncText();
  if (plan.directions != 1)
    root["directions"] = plan.directions;
  if (!plan.gpuArchs.empty()) {
    json::Array archs;
    for (const std::string &a : plan.gpuArchs)
      archs.push_back(a);
    root["gpu_archs"] = std::move(archs);
  }
  if (plan.allowTf32)
    root["allow_tf32"] = true;
  if (plan.precision != Precision::Fp32)
    root["precision"] = zb::precisionName(plan.precision);
  if (plan.target == zb::Target::Cuda)
    root["host_reads_device_memory"] = plan.hostReadsDeviceMemory;
  if (!plan.paramsChecksum.empty())
    root["params_checksum"] = plan.paramsChecksum;
  return root;
}

Error zb::formats::writePlan(const Plan &plan, StringRef path) {
  return zb::support::writeFileAtomically(path, [&](raw_ostream &os) {
    os << formatv("{0:2}", toJSON(plan)) << "\n";
    return Error::success();
  });
}
