//===- Artifacts.cpp - pipeline.mlir, params.bin, schedule, plan.json -----===//
#include "zb/Driver/Driver.h"
#include "zb/Schedule/Formats.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

#include <cmath>
#include <random>

using namespace mlir;

namespace zb::driver {

std::string outputPath(const CompileOptions &options, llvm::StringRef name) {
  llvm::SmallString<256> path(options.outputDir);
  llvm::sys::path::append(path, name);
  return std::string(path);
}

/// Opens `path` (binary), lets `write` fill it; "cannot write NAME: why"
/// when it cannot be opened, or the error of `write`.
static llvm::Error
withOutputFile(llvm::StringRef path,
               llvm::function_ref<llvm::Error(llvm::raw_ostream &)> write) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return llvm::createStringError(ec, "cannot write " +
                                           llvm::sys::path::filename(path) +
                                           ": " + ec.message());
  return write(os);
}

llvm::Error writeModule(llvm::StringRef path, ModuleOp module) {
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> out = openOutputFile(path, &error);
  if (!out)
    return llvm::createStringError(error);
  module.print(out->os());
  out->keep();
  return llvm::Error::success();
}

/// `write` (a lib/Schedule format) of the plan's schedule with the costs it
/// was planned with and its simulation.
static llvm::Error writeSchedule(
    llvm::StringRef path, const LoweredPipeline &pipeline,
    void (*write)(llvm::raw_ostream &, const sched::Problem &,
                  const sched::Schedule &, const sched::SimResult &)) {
  return withOutputFile(path, [&](llvm::raw_ostream &os) {
    write(os, pipeline.problem, pipeline.schedule, pipeline.simulation);
    return llvm::Error::success();
  });
}

llvm::Error writeScheduleJSON(llvm::StringRef path,
                              const LoweredPipeline &pipeline) {
  return writeSchedule(path, pipeline, sched::writeJSON);
}

llvm::Error writeScheduleSVG(llvm::StringRef path,
                             const LoweredPipeline &pipeline) {
  return writeSchedule(path, pipeline, sched::writeSVG);
}

//===----------------------------------------------------------------------===//
// params.bin
//===----------------------------------------------------------------------===//

static void writeFloat(llvm::raw_ostream &os, float f) {
  os.write(reinterpret_cast<const char *>(&f), sizeof(float));
}

/// uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) for every element of `param`.
static void writeInitialValues(llvm::raw_ostream &os,
                               const ModelValueInfo &param,
                               std::mt19937_64 &rng) {
  int64_t fanIn = param.type.getRank() ? param.type.getShape().back() : 1;
  double bound = 1.0 / std::sqrt(static_cast<double>(fanIn));
  for (int64_t i = 0; i < param.type.getNumElements(); ++i) {
    // 53 random bits -> [0, 1); exact and portable.
    double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    writeFloat(os, static_cast<float>((2 * u - 1) * bound));
  }
}

llvm::Error writeParams(llvm::StringRef path, const PipelineInfo &info,
                        DictionaryAttr paramValues, uint64_t seed) {
  return withOutputFile(path, [&](llvm::raw_ostream &os) -> llvm::Error {
    // Models without stored values (hand-written .mlir) get a
    // deterministic initialisation.
    std::mt19937_64 rng(seed);
    for (const ModelValueInfo &p : info.params) {
      if (!p.type.getElementType().isF32())
        return llvm::createStringError("parameter '" + p.name +
                                       "' is not float32");
      if (!paramValues) {
        writeInitialValues(os, p, rng);
        continue;
      }
      auto value = paramValues.getAs<DenseElementsAttr>(p.name);
      if (!value || value.getType() != p.type)
        return llvm::createStringError(
            "no value of type " + llvm::formatv("{0}", p.type).str() +
            " for parameter '" + p.name + "' in zb.param_values");
      for (float f : value.getValues<float>())
        writeFloat(os, f);
    }
    return llvm::Error::success();
  });
}

//===----------------------------------------------------------------------===//
// plan.json (docs/plan-json.md)
//===----------------------------------------------------------------------===//

llvm::Expected<std::string> inputDType(const ModelValueInfo &input) {
  Type elem = input.type.getElementType();
  if (elem.isF32())
    return std::string("float32");
  if (elem.isInteger(64))
    return std::string("int64");
  if (elem.isInteger(32))
    return std::string("int32");
  return llvm::createStringError(
      "graph input '" + input.name + "' has element type " +
      llvm::formatv("{0}", elem).str() +
      "; zb-run feeds float32, int64 or int32 inputs");
}

static llvm::json::Array shapeJSON(llvm::ArrayRef<int64_t> shape) {
  return llvm::json::Array(shape);
}

/// "params": name, shape, first stage and its rank, byte offset in
/// params.bin; tied parameters list every copy.
static llvm::json::Array paramsJSON(const LoweredPipeline &pipeline) {
  const std::vector<int> &stageToRank = pipeline.schedule.stageToRank;
  llvm::json::Array params;
  int64_t offset = 0;
  for (const ModelValueInfo &p : pipeline.info.params) {
    int64_t stage = p.stages.empty() ? 0 : p.stages.front();
    llvm::json::Object entry{{"name", p.name},
                             {"shape", shapeJSON(p.type.getShape())},
                             {"stage", stage},
                             {"rank", stageToRank[stage]},
                             {"offset_bytes", offset}};
    if (p.stages.size() > 1) { // tied: one copy per stage, same values
      llvm::json::Array copies;
      for (int64_t s : p.stages)
        copies.push_back(
            llvm::json::Object{{"stage", s}, {"rank", stageToRank[s]}});
      entry["tied_copies"] = std::move(copies);
    }
    params.push_back(std::move(entry));
    offset += p.type.getNumElements() * 4;
  }
  return params;
}

/// "inputs": name, dtype, shape of one sample, stage and rank.
static llvm::Expected<llvm::json::Array>
inputsJSON(const LoweredPipeline &pipeline) {
  llvm::json::Array inputs;
  for (const ModelValueInfo &in : pipeline.info.inputs) {
    llvm::Expected<std::string> dtype = inputDType(in);
    if (!dtype)
      return dtype.takeError();
    int64_t stage = in.stages.empty() ? 0 : in.stages.front();
    llvm::ArrayRef<int64_t> shape = in.type.getShape();
    inputs.push_back(llvm::json::Object{
        {"name", in.name},
        {"dtype", *dtype},
        {"sample_shape", shapeJSON(shape.empty() ? shape : shape.drop_front())},
        {"stage", stage},
        {"rank", pipeline.schedule.stageToRank[stage]}});
  }
  return inputs;
}

/// "stages": rank, T_F/T_B/T_W/T_comm (ms), M_B/M_W (bytes).
static llvm::json::Array stagesJSON(const LoweredPipeline &pipeline) {
  llvm::json::Array stages;
  for (const StageInfo &s : pipeline.info.stages)
    stages.push_back(
        llvm::json::Object{{"stage", s.stage},
                           {"rank", pipeline.schedule.stageToRank[s.stage]},
                           {"t_f", s.tF},
                           {"t_b", s.tB},
                           {"t_w", s.tW},
                           {"t_comm", s.tComm},
                           {"m_b", s.mB},
                           {"m_w", s.mW}});
  return stages;
}

/// "predicted": per schedule, the simulated bubble rates (and the jitter).
static llvm::json::Object
predictedJSON(llvm::ArrayRef<Prediction> predictions) {
  llvm::json::Object predicted;
  for (const Prediction &p : predictions) {
    llvm::json::Object entry{
        {"bubble_rate", p.simulation.bubbleRate},
        {"makespan_ms", p.simulation.makespan},
        {"rank_bubble_rate", llvm::json::Array(p.simulation.rankBubbleRate)}};
    if (p.jitter)
      entry["jitter"] = llvm::json::Object{
          {"samples", p.jitter->samples},
          {"bubble_rate", p.jitter->bubbleRate},
          {"makespan_ms", p.jitter->makespan},
          {"rank_bubble_rate", llvm::json::Array(p.jitter->rankBubbleRate)}};
    predicted[p.schedule] = std::move(entry);
  }
  return predicted;
}

/// "ranks": the library, entry and step arguments of every rank.
static llvm::json::Array ranksJSON(const LoweredPipeline &pipeline) {
  llvm::json::Array ranks;
  for (auto [r, rankArgs] : llvm::enumerate(pipeline.rankArgs)) {
    llvm::json::Array args;
    for (const RankArg &a : rankArgs) {
      llvm::json::Object arg{{"kind", a.kind}};
      if (a.index)
        arg["index"] = *a.index;
      args.push_back(std::move(arg));
    }
    ranks.push_back(
        llvm::json::Object{{"rank", static_cast<int64_t>(r)},
                           {"library", llvm::formatv("rank{0}.so", r).str()},
                           {"entry", "zb_rank_main"},
                           {"args", std::move(args)}});
  }
  return ranks;
}

/// --data, else the `data` directory next to the model; absolute.
static std::string dataPath(const CompileOptions &options) {
  llvm::SmallString<256> data(options.dataDir);
  if (data.empty()) {
    llvm::SmallString<256> next(options.inputFile);
    llvm::sys::path::remove_filename(next);
    llvm::sys::path::append(next, "data");
    if (llvm::sys::fs::is_directory(next))
      data = next;
  }
  if (!data.empty())
    llvm::sys::fs::make_absolute(data);
  return std::string(data);
}

static llvm::json::Object optimizerJSON(const CompileOptions &options) {
  llvm::json::Object opt{{"name", options.optimizer},
                         {"lr", options.learningRate}};
  if (options.optimizer == "adamw") {
    opt["beta1"] = 0.9;
    opt["beta2"] = 0.999;
    opt["eps"] = 1e-8;
    opt["weight_decay"] = 0.01;
  }
  return opt;
}

llvm::Error writePlan(llvm::StringRef path, const CompileOptions &options,
                      const LoweredPipeline &pipeline,
                      llvm::ArrayRef<Prediction> predictions) {
  llvm::Expected<llvm::json::Array> inputs = inputsJSON(pipeline);
  if (!inputs)
    return inputs.takeError();
  int64_t microbatchSize = 0;
  for (const ModelValueInfo &in : pipeline.info.inputs)
    if (in.type.getRank() > 0)
      microbatchSize = in.type.getDimSize(0);
  llvm::json::Object plan{{"format", "zb-plan"},
                          {"version", 1},
                          {"model", options.inputFile},
                          {"num_ranks", pipeline.numRanks()},
                          {"num_stages", pipeline.info.numStages},
                          {"num_chunks", pipeline.info.numChunks},
                          {"num_microbatches", pipeline.numMicrobatches},
                          {"microbatch_size", microbatchSize},
                          {"schedule", options.schedule},
                          {"target", pipeline.info.target},
                          {"data", dataPath(options)},
                          {"optimizer", optimizerJSON(options)},
                          {"params", paramsJSON(pipeline)},
                          {"inputs", std::move(*inputs)},
                          {"stages", stagesJSON(pipeline)},
                          {"predicted", predictedJSON(predictions)},
                          {"ranks", ranksJSON(pipeline)}};
  return withOutputFile(path, [&](llvm::raw_ostream &os) {
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(plan))) << "\n";
    return llvm::Error::success();
  });
}

} // namespace zb::driver
