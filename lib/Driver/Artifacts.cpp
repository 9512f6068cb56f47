//===- Artifacts.cpp - pipeline.mlir, params.bin, schedule, plan.json -----===//
#include "Phases.h"
#include "zb/Support/AtomicFile.h"
#include "zb/Schedule/IO.h"
#include "zb/Formats/Plan.h"
#include "zbrt/Symbols.h"

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
  // Atomic: a temporary file renamed over `path` (zb/Support/AtomicFile.h).
  return zb::support::writeFileAtomically(path, write);
}

llvm::Error writeText(llvm::StringRef path, llvm::StringRef text) {
  return withOutputFile(path, [&](llvm::raw_ostream &os) {
    os << text;
    return llvm::Error::success();
  });
}

llvm::Error writeModule(llvm::StringRef path, ModuleOp module) {
  return withOutputFile(path, [&](llvm::raw_ostream &os) {
    module.print(os);
    return llvm::Error::success();
  });
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
  // With post-validation: two iterations, the state messages and the
  // validation points the rank programs use.
  std::optional<sched::OptimizerSyncTiming> sync;
  if (!pipeline.validateBefore.empty()) {
    sched::OptimizerSyncOptions options;
    auto timing = sched::simulateOptimizerSync(pipeline.problem,
                                               pipeline.schedule, options);
    if (!timing)
      return timing.takeError();
    sync = std::move(*timing);
  }
  return withOutputFile(path, [&](llvm::raw_ostream &os) {
    sched::writeSVG(os, pipeline.problem, pipeline.schedule,
                    pipeline.simulation, sync ? &*sync : nullptr);
    return llvm::Error::success();
  });
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
      // A parameter exported in bfloat16 is a float32 master weight under
      // --precision bf16 (zb-autocast): its values widen exactly.
      bool widen = value && value.getElementType().isBF16() &&
                   value.getType().getShape() == p.type.getShape();
      if (!value || (value.getType() != p.type && !widen))
        return llvm::createStringError(
            "no value of type " + llvm::formatv("{0}", p.type).str() +
            " for parameter '" + p.name + "' in zb.param_values");
      if (widen) {
        for (llvm::APFloat f : value.getValues<llvm::APFloat>()) {
          bool lost = false;
          f.convert(llvm::APFloat::IEEEsingle(),
                    llvm::APFloat::rmNearestTiesToEven, &lost);
          writeFloat(os, f.convertToFloat());
        }
        continue;
      }
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

/// plan.json "params": name, shape, first stage and its rank, byte offset in
/// params.bin; tied parameters list every copy.
static std::vector<formats::ParamInfo> planParams(const LoweredPipeline &pipeline) {
  const std::vector<int> &stageToRank = pipeline.schedule.stageToRank;
  std::vector<formats::ParamInfo> params;
  int64_t offset = 0;
  for (const ModelValueInfo &p : pipeline.info.params) {
    int64_t stage = p.stages.empty() ? 0 : p.stages.front();
    formats::ParamInfo entry;
    entry.name = p.name;
    entry.shape.assign(p.type.getShape().begin(), p.type.getShape().end());
    entry.stage = static_cast<int32_t>(stage);
    entry.rank = stageToRank[stage];
    entry.offsetBytes = offset;
    if (p.stages.size() > 1) // tied: one copy per stage, same values
      for (int64_t s : p.stages)
        entry.tiedCopies.push_back(
            {static_cast<int32_t>(s), static_cast<int32_t>(stageToRank[s])});
    params.push_back(std::move(entry));
    offset += p.type.getNumElements() * 4;
  }
  return params;
}

/// plan.json "inputs": name, dtype, shape of one sample, stage and rank.
static llvm::Expected<std::vector<formats::InputInfo>>
planInputs(const LoweredPipeline &pipeline) {
  std::vector<formats::InputInfo> inputs;
  for (const ModelValueInfo &in : pipeline.info.inputs) {
    llvm::Expected<std::string> dtype = inputDType(in);
    if (!dtype)
      return dtype.takeError();
    int64_t stage = in.stages.empty() ? 0 : in.stages.front();
    llvm::ArrayRef<int64_t> shape = in.type.getShape();
    if (!shape.empty())
      shape = shape.drop_front();
    formats::InputInfo entry;
    entry.name = in.name;
    entry.dtype = *formats::dtypeFromName(*dtype);
    entry.sampleShape.assign(shape.begin(), shape.end());
    entry.stage = static_cast<int32_t>(stage);
    entry.rank = pipeline.schedule.stageToRank[stage];
    auto range = pipeline.indexRanges.find(in.index);
    if (range != pipeline.indexRanges.end() &&
        !isa<FloatType>(in.type.getElementType()))
    {
      entry.indexRange = range->second;
      auto ignore = pipeline.indexIgnores.find(in.index);
      if (ignore != pipeline.indexIgnores.end())
        entry.indexIgnore = ignore->second;
    }
    inputs.push_back(std::move(entry));
  }
  return inputs;
}

/// plan.json "stages": rank, T_F/T_B/T_W/T_comm (ms), M_B/M_W (bytes).
static std::vector<formats::StageCostInfo>
planStages(const LoweredPipeline &pipeline) {
  std::vector<formats::StageCostInfo> stages;
  for (const StageInfo &s : pipeline.info.stages)
    stages.push_back({static_cast<int32_t>(s.stage),
                      pipeline.schedule.stageToRank[s.stage], s.tF, s.tB,
                      s.tW, s.tComm, s.mB, s.mW});
  return stages;
}

/// plan.json "predicted": per schedule, the simulated bubble rates (and the
/// jitter).
static std::vector<formats::PredictedInfo>
planPredicted(llvm::ArrayRef<Prediction> predictions) {
  std::vector<formats::PredictedInfo> predicted;
  for (const Prediction &p : predictions) {
    formats::PredictedInfo entry;
    entry.schedule = p.schedule;
    entry.bubbleRate = p.simulation.bubbleRate;
    entry.makespanMs = p.simulation.makespan;
    entry.rankBubbleRate = p.simulation.rankBubbleRate;
    if (p.jitter)
      entry.jitter = formats::JitterInfo{p.jitter->samples, p.jitter->bubbleRate,
                                      p.jitter->makespan,
                                      p.jitter->rankBubbleRate};
    if (const std::optional<sched::DataParallelTiming> &dp = p.dataParallel)
      entry.dataParallel = formats::DataParallelPrediction{
          dp->model.numReplicas,      dp->model.bandwidthGBps,
          dp->model.latencyMs,        dp->overlapped.stepTime,
          dp->overlapped.bubbleRate,  dp->overlapped.exposed,
          dp->afterBackward.stepTime, dp->afterBackward.exposed};
    predicted.push_back(std::move(entry));
  }
  llvm::sort(predicted, [](const auto &a, const auto &b) {
    return a.schedule < b.schedule;
  });
  return predicted;
}

/// plan.json "ranks": the library, entry and step arguments of every rank.
static std::vector<formats::RankInfo> planRanks(const LoweredPipeline &pipeline) {
  std::vector<formats::RankInfo> ranks;
  for (auto [r, rankArgs] : llvm::enumerate(pipeline.rankArgs)) {
    formats::RankInfo rank;
    rank.rank = static_cast<int32_t>(r);
    rank.library = llvm::formatv("rank{0}.so", r).str();
    rank.entry = zbrt::symbols::RankEntry;
    for (const RankArg &a : rankArgs)
      rank.args.push_back(
          {*formats::argKindFromName(a.kind), a.index ? *a.index : -1});
    if (r < pipeline.rankSends.size())
      rank.sends = pipeline.rankSends[r];
    ranks.push_back(std::move(rank));
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

static formats::OptimizerInfo planOptimizer(const CompileOptions &options) {
  formats::OptimizerInfo opt; // AdamW's betas, eps and weight decay: defaults
  opt.kind = options.optimizer;
  opt.lr = options.learningRate;
  return opt;
}

llvm::Expected<formats::Plan> buildPlan(const CompileOptions &options,
                                     const LoweredPipeline &pipeline,
                                     llvm::ArrayRef<Prediction> predictions) {
  llvm::Expected<std::vector<formats::InputInfo>> inputs = planInputs(pipeline);
  if (!inputs)
    return inputs.takeError();
  formats::Plan plan;
  for (const ModelValueInfo &in : pipeline.info.inputs)
    if (in.type.getRank() > 0)
      plan.microbatchSize = in.type.getDimSize(0);
  plan.model = options.inputFile;
  plan.numRanks = static_cast<int32_t>(pipeline.numRanks());
  plan.numStages = static_cast<int32_t>(pipeline.info.numStages);
  plan.numChunks = pipeline.info.numChunks;
  plan.directions = pipeline.schedule.directions;
  plan.numMicrobatches = pipeline.numMicrobatches;
  plan.dataParallel = static_cast<int32_t>(options.dataParallel);
  plan.schedule = options.scheduleName();
  // The code target (cuda: rank programs with GPU kernels, for zb-run
  // --backend cuda; cuda-emu: those kernels emulated on the CPU; cpu; h100:
  // CPU code scheduled with H100 costs).
  plan.target = options.target;
  if (options.target == Target::Cuda) {
    llvm::SmallVector<llvm::StringRef> archs;
    llvm::StringRef(options.cuda.arch).split(archs, ',', -1, false);
    for (llvm::StringRef a : archs)
      plan.gpuArchs.push_back(a.trim().str());
  }
  plan.allowTf32 = options.gpuKernels() && options.cuda.allowTf32;
  plan.precision = options.precision;
  // The GPU pipeline's host check refuses host loads and stores of element
  // data (Pipelines.cpp, CheckHostLoopsPass).
  plan.hostReadsDeviceMemory = options.target != Target::Cuda;
  plan.data = dataPath(options);
  plan.optimizerSync = options.optimizerSync;
  plan.optimizer = planOptimizer(options);
  plan.params = planParams(pipeline);
  plan.inputs = std::move(*inputs);
  plan.stages = planStages(pipeline);
  plan.predicted = planPredicted(predictions);
  plan.ranks = planRanks(pipeline);
  return plan;
}

llvm::Error writePlan(llvm::StringRef path, const CompileOptions &options,
                      const LoweredPipeline &pipeline,
                      llvm::ArrayRef<Prediction> predictions) {
  llvm::Expected<formats::Plan> plan = buildPlan(options, pipeline, predictions);
  if (!plan)
    return plan.takeError();
  return formats::writePlan(*plan, path);
}

} // namespace zb::driver
