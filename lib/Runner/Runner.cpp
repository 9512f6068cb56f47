//===- Runner.cpp - zb-run: the launcher and the step loop ----------------===//
//
// What all ranks do together outside the step (agreeing on errors, writing
// --save-params and checkpoints through rank 0, gradient norms) is in
// Collective.cpp.
//
//===----------------------------------------------------------------------===//

#include "zb/Runner/Runner.h"

#include "zb/Support/AtomicFile.h"
#include "zb/Support/Limits.h"
#include "zb/Formats/Checkpoint.h"
#include "zb/Runner/Collective.h"
#include "zb/Runner/DataParallel.h"
#include "zb/Runner/Launcher.h"
#include "zb/Runner/Layout.h"
#include "zb/Runner/Replay.h"
#include "zb/Runner/Report.h"
#include "zb/Runner/Watched.h"

#include "zbrt/Trace.h"
#include "zbrt/zbrt.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <mpi.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

using namespace llvm;
using namespace zb::runner;
using namespace zb::formats;

namespace {

Error makeError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// The launcher's way to fail: "zb-run: error: <message>", exit code 1.
int reportError(Error err) {
  std::fflush(stdout);
  errs() << "zb-run: error: " << toString(std::move(err)) << "\n";
  errs().flush();
  return 1;
}

void fatalSignalHandler(int sig) {
  char buf[160];
  int len = std::snprintf(buf, sizeof(buf),
                          "zb-run: rank %d: fatal signal %d (%s) in the rank "
                          "program or runtime\n",
                          zbrt_rank(), sig, strsignal(sig));
  if (len > 0)
    (void)!write(2, buf, (size_t)len);
  _exit(128 + sig);
}

double nowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// "1" when the launcher's stdout is a terminal, else "0" (set by the
/// launcher for its ranks).
constexpr const char *kTerminalEnv = "ZB_RUN_STDOUT_IS_TERMINAL";

/// What a run trains with beyond the plan: a resumed checkpoint, the
/// optimizer settings and AdamW's weight-decay groups.
struct RunSetup {
  std::optional<CheckpointInfo> resumed;
  TrainingSettings settings;
  std::vector<bool> decay; ///< by plan.json parameter
  /// --checkpoint DIR's lock, held by rank 0 for the whole run.
  CheckpointDirLock checkpointLock;
};

Expected<RunSetup> resolveRunSetup(const RunOptions &o, const Plan &plan,
                                   std::optional<CheckpointInfo> resumed) {
  RunSetup setup;
  const int64_t lastStep = (resumed ? resumed->step : 0) + o.steps;
  Expected<TrainingSettings> settings = resolveTrainingSettings(
      o.training, plan, resumed ? resumed->training : std::nullopt, lastStep);
  if (!settings)
    return settings.takeError();
  Expected<std::vector<bool>> decay =
      weightDecayMask(plan, settings->noDecay);
  if (!decay)
    return decay.takeError();
  setup.resumed = std::move(resumed);
  setup.settings = std::move(*settings);
  setup.decay = std::move(*decay);
  return setup;
}

/// D: --data-parallel, else plan.json's data_parallel.
int32_t dataParallelOf(const RunOptions &o, const Plan &plan) {
  return o.dataParallel > 0 ? o.dataParallel : plan.dataParallel;
}

/// The job's ranks: D pipelines of num_ranks.
int64_t jobRanks(const RunOptions &o, const Plan &plan) {
  return (int64_t)dataParallelOf(o, plan) * plan.numRanks;
}

/// "num_ranks = 2" or "8 ranks: 4 pipelines (data_parallel) of num_ranks =
/// 2".
std::string describeJob(const RunOptions &o, const Plan &plan) {
  const int32_t d = dataParallelOf(o, plan);
  if (d == 1)
    return formatv("num_ranks = {0}", plan.numRanks).str();
  return formatv("{0} ranks: {1} pipelines ({2}) of num_ranks = {3}",
                 jobRanks(o, plan), d,
                 o.dataParallel > 0 ? "--data-parallel" : "data_parallel",
                 plan.numRanks)
      .str();
}

/// Outside MPI: checks the plan against --ranks and every rank's files
/// before anything is launched (one clean line instead of mpirun noise),
/// then runs the job under mpirun and returns its exit code, or returns
/// std::nullopt for a one-rank plan, which runs in this process (an MPI
/// singleton).
Expected<std::optional<int>> launch(const RunOptions &o, const Plan &plan,
                                    int argc, char **argv) {
  if (Expected<Backend> b = resolveBackend(o.backend, plan); !b)
    return b.takeError();
  const int64_t ranks = jobRanks(o, plan);
  if (o.ranksGiven && o.numRanks != ranks)
    return makeError(formatv("--ranks {0}, but {1} needs {2}", o.numRanks,
                             plan.path, describeJob(o, plan)));
  if (!o.ranksGiven && ranks != 1)
    return makeError(formatv(
        "{0} needs {1} ranks{2}: run `zb-run {3} --ranks {1}` or `mpirun -np "
        "{1} zb-run {3}`",
        plan.path, ranks,
        dataParallelOf(o, plan) == 1
            ? std::string()
            : formatv(", {0} pipelines of num_ranks = {1}",
                      dataParallelOf(o, plan), plan.numRanks)
                  .str(),
        o.planDir));
  if (!o.hosts.empty()) {
    const int64_t slots = cantFail(countHostSlots(o.hosts));
    if (slots != ranks)
      return makeError(formatv("--hosts {0} holds {1} slot{2}, but {3} needs "
                               "{4}: give nodes whose slots add up to {5}",
                               o.hosts, slots, slots == 1 ? "" : "s",
                               plan.path, describeJob(o, plan), ranks));
  }
  // The optimizer flags (with a readable checkpoint's settings; the ranks
  // report a bad checkpoint).
  std::optional<CheckpointInfo> resumed;
  if (!o.resumeDir.empty()) {
    Expected<CheckpointInfo> info = findCheckpoint(o.resumeDir);
    if (info)
      resumed = *info;
    else
      consumeError(info.takeError());
  }
  if (Expected<RunSetup> setup = resolveRunSetup(o, plan, resumed); !setup)
    return setup.takeError();
  for (int32_t r = 0; r < plan.numRanks; ++r) {
    auto rp = loadRankProgram(plan, r, o.data, /*forRun=*/false);
    if (!rp)
      return rp.takeError();
  }
  if (o.deterministic) {
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    setenv("OMP_NUM_THREADS", "1", 1);
  }
  // Whether rank 0 writes a progress line: mpirun gives the ranks a pty
  // whatever the launcher's stdout is, so the launcher decides.
  setenv(kTerminalEnv, sys::Process::StandardOutIsDisplayed() ? "1" : "0", 1);
  if (ranks > 1 || !o.hosts.empty()) {
    Expected<int> code = runUnderMpirun(argc, argv, (int)ranks, o.hosts);
    // A rank 0 killed by mpirun (another rank's MPI_Abort) leaves its lock
    // file behind.
    if (!o.checkpointDir.empty())
      zb::support::DirectoryLock::removeStale(o.checkpointDir);
    if (!code)
      return code.takeError();
    return std::optional<int>(*code);
  }
  setenv("OPENBLAS_NUM_THREADS", "1", 0);
  return std::nullopt;
}

/// Hands the message order of every channel from or to `rank` (plan.json
/// ranks[r].sends) to the runtime: the CUDA backend's transport needs it
/// (NCCL has no tags). Plans without "sends" hand nothing over.
void setChannelOrders(const Plan &plan, int32_t rank) {
  for (const RankInfo &from : plan.ranks) {
    if (!from.sends)
      continue;
    for (int32_t to = 0; to < plan.numRanks; ++to) {
      if (to == from.rank || (to != rank && from.rank != rank))
        continue;
      std::vector<int64_t> order;
      for (const SentMessage &m : *from.sends)
        if (m.peer == to)
          order.insert(order.end(), {m.tag, m.bytes});
      zbrt_set_channel_order(from.rank, to, order.data(),
                             (int64_t)order.size() / 2);
    }
  }
}

/// Inside MPI: the plan, the job's size and the backend, then this rank's
/// program, each agreed on by all ranks. nullptr when any rank failed.
std::unique_ptr<RankProgram> setUpRank(const RunOptions &o,
                                       Expected<Plan> &plan, bool inMPI,
                                       int32_t worldRank, int32_t worldSize,
                                       RunSetup &setup) {
  int32_t rank = worldRank;
  if (!agree(plan.takeError()))
    return nullptr;
  Error job = Error::success();
  if (inMPI && o.ranksGiven && o.numRanks != worldSize)
    job = makeError(formatv("--ranks {0}, but this MPI job has {1} ranks",
                            o.numRanks, worldSize));
  else if (worldSize != jobRanks(o, *plan))
    job = makeError(formatv("{0} needs {1}, but this MPI job has {2} ranks "
                            "(mpirun -np {3})",
                            plan->path, describeJob(o, *plan), worldSize,
                            jobRanks(o, *plan)));
  if (!agree(std::move(job)))
    return nullptr;
  // D pipelines: from here on `rank` is this rank's place in its pipeline,
  // the rank program it runs (zb/Runner/Layout.h).
  rank = initLayout(plan->numRanks).stageRank;
  Expected<Backend> backend = resolveBackend(o.backend, *plan);
  if (!agree(backend ? Error::success() : backend.takeError()))
    return nullptr;
  // The rank's device, streams, cuBLAS and NCCL, and every buffer in
  // managed memory, before the first one; then the channels' orders.
  if (*backend == Backend::Cuda) {
    zbrt_cuda_start(
        (plan->target == zb::Target::CudaEmu ? ZBRT_CUDA_HOST_KERNELS : 0) |
        (plan->allowTf32 ? ZBRT_CUDA_ALLOW_TF32 : 0) |
        (o.deterministic ? ZBRT_CUDA_DETERMINISTIC : 0) |
        (o.cudaGraphs ? 0 : ZBRT_CUDA_NO_GRAPHS) |
        (plan->hostReadsDeviceMemory ? 0 : ZBRT_CUDA_HOST_CODE_LAUNCHES_ONLY));
    setChannelOrders(*plan, rank);
  }
  std::string paramsFile;
  DataOptions data = o.data;
  std::optional<CheckpointInfo> resumed;
  if (!o.resumeDir.empty()) {
    Expected<CheckpointInfo> info = findCheckpoint(o.resumeDir);
    Error e = info ? checkResumable(*info, *plan, o.data.seed)
                   : info.takeError();
    if (!e)
      e = verifyCheckpointFiles(*info);
    if (!agree(std::move(e)))
      return nullptr;
    resumed = *info;
    paramsFile = info->dir + "/params.bin";
    data.seed = info->seed;
  }
  Expected<RunSetup> resolved = resolveRunSetup(o, *plan, resumed);
  if (!agree(resolved ? Error::success() : resolved.takeError()))
    return nullptr;
  setup = std::move(*resolved);
  if (!o.checkpointDir.empty() &&
      !lockCheckpointDir(o.checkpointDir, setup.checkpointLock))
    return nullptr;
  auto rp = loadRankProgram(*plan, rank, data, /*forRun=*/true, paramsFile);
  if (!agree(rp ? Error::success() : rp.takeError()))
    return nullptr;
  (*rp)->pipeline = layout().pipeline;
  (*rp)->dataParallel = layout().dataParallel;
  if (resumed && resumed->optimizer == zb::Optimizer::AdamW) {
    Error e = readParamLayout(**rp, resumed->dir + "/adam_m.bin", (*rp)->adamM);
    if (!e)
      e = readParamLayout(**rp, resumed->dir + "/adam_v.bin", (*rp)->adamV);
    if (!agree(std::move(e)))
      return nullptr;
  }
  return std::move(*rp);
}

/// The loss rank's `value` (a sum over its pipeline's microbatches) as the
/// mean over the D pipelines, so that `value / m` is the mean over the
/// step's D*m microbatches. Collective over the loss ranks' data-parallel
/// group (every pipeline's last stage); `value` itself for D = 1.
double meanOverPipelines(double value, const char *what) {
  const Layout &l = layout();
  if (l.dataParallel == 1)
    return value;
  double sum = 0;
  std::string waited =
      formatv("the other pipelines' {0} (all-reduce)", what).str();
  watched::allreduce(&value, &sum, 1, MPI_DOUBLE, MPI_SUM, l.groupComm,
                     waited.c_str());
  return sum / (double)l.dataParallel;
}

/// World rank 0: every world rank's node (MPI_Get_processor_name), the
/// ranks it shares memory with (MPI_COMM_TYPE_SHARED), its CUDA device and
/// transports, for the report; empty elsewhere. Collective over all ranks.
std::vector<RankPlacement> gatherPlacement() {
  struct Mine {
    char node[MPI_MAX_PROCESSOR_NAME];
    int32_t sharedMemoryGroup, cudaDevice;
    uint64_t ncclPeers, hostStagedPeers;
    char allReduce[sizeof(ZbrtCudaStats::allReduce)];
  } mine;
  std::memset(&mine, 0, sizeof mine);
  int len = 0;
  MPI_Get_processor_name(mine.node, &len);
  const Layout &l = layout();
  MPI_Comm shared = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, l.worldRank,
                      MPI_INFO_NULL, &shared);
  int32_t group = l.worldRank;
  watched::allreduce(&l.worldRank, &group, 1, MPI_INT32_T, MPI_MIN, shared,
                     "the ranks of this node (all-reduce)");
  MPI_Comm_free(&shared);
  mine.sharedMemoryGroup = group;
  mine.cudaDevice = -1;
  if (zbrt_cuda_started()) {
    ZbrtCudaStats c{};
    zbrt_cuda_stats(&c);
    mine.cudaDevice = c.device;
    mine.ncclPeers = c.ncclPeers;
    mine.hostStagedPeers = c.hostStagedPeers;
    std::memcpy(mine.allReduce, c.allReduce, sizeof mine.allReduce);
    mine.allReduce[sizeof mine.allReduce - 1] = 0;
  }
  std::vector<Mine> all(l.reports() ? (size_t)l.worldSize : 0);
  watched::gather(&mine, (int)sizeof mine, MPI_BYTE, all.data(),
                  (int)sizeof mine, MPI_BYTE, 0, MPI_COMM_WORLD,
                  "the other ranks' nodes and devices (gather)");
  std::vector<RankPlacement> placement;
  for (const Mine &m : all) {
    RankPlacement p;
    p.node.assign(m.node, strnlen(m.node, sizeof m.node));
    p.sharedMemoryGroup = m.sharedMemoryGroup;
    p.cudaDevice = m.cudaDevice;
    p.ncclPeers = m.ncclPeers;
    p.hostStagedPeers = m.hostStagedPeers;
    p.cudaAllReduce = m.allReduce;
    placement.push_back(std::move(p));
  }
  return placement;
}

/// Combines all ranks' accumulators on rank 0 (collective).
void reduceOnRankZero(StageProfile &profile) {
  auto red = [&](std::vector<double> &v, MPI_Op op) {
    std::vector<double> out(v.size());
    watched::reduce(v.data(), out.data(), (int)v.size(), MPI_DOUBLE, op, 0,
                    layout().pipelineComm,
                    "the other ranks' pass times (reduce)");
    if (layout().stageRank == 0)
      v = out;
  };
  red(profile.sumMs, MPI_SUM);
  red(profile.sumSqMs, MPI_SUM);
  red(profile.count, MPI_SUM);
  red(profile.rank, MPI_MAX);
  red(profile.minRecvMs, MPI_MIN);
}

/// What every rank sends to rank 0 after a step.
struct StepSample {
  double loss;       ///< loss buffer (sum over microbatches) or 0
  double hasLoss;    ///< 1 on the loss rank
  double timeMs;     ///< this rank's step wall time
  double bubble;     ///< realized bubble rate of this step
  double numActions; ///< F/B/W actions traced in this step
  /// The step's global gradient norm and whether it was skipped, from a
  /// rank that decided the step within it (GradSync::lastDecision); NaN
  /// and -1 from the others.
  double gradNorm;
  double skipped;
};
constexpr int kSampleDoubles = 7;
static_assert(sizeof(StepSample) == kSampleDoubles * sizeof(double),
              "packed");

/// The training steps of one rank and what rank 0 makes of them.
class StepLoop {
public:
  StepLoop(const RunOptions &o, const Plan &plan, RankProgram &rp,
           int32_t worldSize, const RunSetup &setup);
  /// Announces text data, runs every step, then reports. Returns the exit
  /// code.
  int run();

private:
  void announceText();
  void announceSettings();
  void runStep(int64_t step);
  void evaluate(int64_t stepsDone);
  void openMetrics();
  void writeMetrics(const json::Object &line);
  void dumpBatch();
  void gatherTrace(int64_t step, bool measured);
  void gatherOverlappedSteps();
  void recordStep(int64_t step, bool measured);
  int finishGradients();
  int finishTraining();

  const RunOptions &o;
  const Plan &plan;
  RankProgram &rp;
  const int32_t rank, worldSize;
  const int64_t numSteps;
  /// Steps done before this run (--resume): steps are numbered from
  /// firstStep + 1, the data continues there.
  const int64_t firstStep;
  void checkpoint(int64_t stepsDone);
  const TrainingSettings &settings;
  /// Parameters AdamW decays (RunSetup::decay).
  const int64_t decayed;
  /// Token ids per step (language models on text or token data), else 0.
  int64_t tokensPerStep = 0;
  /// Rank 0: the --metrics file; the wall clock when the run's steps began
  /// (the progress line's ETA); whether stdout is a terminal.
  std::unique_ptr<raw_fd_ostream> metrics;
  double runStartMs = 0;
  bool terminal = false;
  std::vector<StepSample> samples; ///< rank 0: this step's, per rank
  /// --overlap-steps: this rank's samples of every step (gathered at the
  /// end) and its wall clock from the start of step 2 to the last step's
  /// end.
  std::vector<StepSample> mySamples;
  double wallStart = 0, wallEnd = 0;
  StageProfile profile;
  /// Peak bytes of the memory pool (the generated code's heap buffers:
  /// activations, stashes, temporaries) over all steps.
  int64_t myPeakHeap = 0;
  /// Replay of every measured step (rank 0; needs the trace of all ranks).
  std::optional<PlannedSchedule> planned;
  int replayWanted = 0;
  std::vector<double> bubbleTotal, replayTotal;
  std::vector<int64_t> bubbleSteps;
  RunReport report; ///< rank 0
  GradSync gradSync;
  /// D pipelines: the gradients' all-reduce, started as each is final.
  GradientAllReduce allReduce;
};

StepLoop::StepLoop(const RunOptions &o, const Plan &plan, RankProgram &rp,
                   int32_t worldSize, const RunSetup &setup)
    : o(o), plan(plan), rp(rp), rank(rp.rank), worldSize(worldSize),
      numSteps(o.reportGradients ? 1 : o.steps),
      firstStep(setup.resumed ? setup.resumed->step : 0),
      settings(setup.settings), decayed(llvm::count(setup.decay, true)),
      samples(rp.rank == 0 ? worldSize : 0),
      profile(plan.numStages), bubbleTotal(worldSize, 0.0),
      replayTotal(worldSize, 0.0), bubbleSteps(worldSize, 0),
      gradSync(o.gradSync, rp, setup.settings, setup.decay, rank, worldSize,
               // One rank prints (not every pipeline's rank 0).
               o.reportFormat == ReportFormat::Text && layout().reports()
                   ? &outs()
                   : nullptr),
      allReduce(rp) {
  const std::optional<CheckpointInfo> &resumed = setup.resumed;
  report.dataParallel = layout().dataParallel;
  Expected<std::string> data = dataPath(plan, o.data);
  if (data && sys::fs::is_regular_file(*data) && !plan.inputs.empty())
    tokensPerStep = rp.globalMicrobatches() * plan.microbatchSize *
                    plan.inputs[0].sampleElements();
  else if (!data)
    consumeError(data.takeError());
  // Only the launcher knows (inside a user's own mpirun every rank has a
  // pty, wherever mpirun's output goes): no progress line without it.
  const char *isTerminal = std::getenv(kTerminalEnv);
  terminal = layout().reports() && o.reportFormat == ReportFormat::Text && isTerminal &&
             StringRef(isTerminal) == "1";
  gradSync.setClearLine(terminal);
  // Pipeline 0's trace is replayed (the others run the same schedule).
  if (layout().reports())
    planned = readPlannedSchedule(plan);
  replayWanted = planned ? 1 : 0;
  watched::bcast(&replayWanted, 1, MPI_INT, 0, layout().pipelineComm,
                 "rank 0's word on the planned schedule (broadcast)");
  if (resumed)
    gradSync.setOptimizerStep(resumed->optimizerStep);
}

void StepLoop::checkpoint(int64_t stepsDone) {
  gradSync.settleBetweenSteps();
  zbrt_cuda_synchronize();
  CheckpointInfo info;
  info.step = stepsDone;
  info.optimizerStep = gradSync.optimizerStep();
  info.optimizer = settings.optimizer;
  info.training = settings;
  info.seed = rp.seed;
  info.numRanks = worldSize;
  info.planHash = planHash(plan);
  if (!checkPipelinesAgree(rp, stepsDone) ||
      !writeCheckpoint(rp, plan, o.checkpointDir, info))
    zbrt_fatal("--checkpoint failed (see above)");
  if (layout().reports() && o.reportFormat == ReportFormat::Text) {
    outs() << "checkpoint " << o.checkpointDir << "/"
           << checkpointDirName(stepsDone) << "\n";
    outs().flush();
  }
}

int StepLoop::run() {
  announceText();
  announceSettings();
  openMetrics();
  runStartMs = nowMs();
  const int64_t last = firstStep + numSteps;
  for (int64_t step = firstStep; step < last; ++step) {
    runStep(step);
    const int64_t done = step + 1;
    if (o.reportGradients)
      continue;
    if (o.evalEvery > 0 && (done % o.evalEvery == 0 || done == last))
      evaluate(done);
    if (!o.checkpointDir.empty() &&
        ((o.checkpointEvery > 0 && done % o.checkpointEvery == 0) ||
         done == last))
      checkpoint(done);
  }
  return o.reportGradients ? finishGradients() : finishTraining();
}

/// Rank 0: the optimizer, its lr schedule and weight-decay groups, in one
/// line (stderr under --report-format json); nothing for SGD at a constant
/// lr.
void StepLoop::announceSettings() {
  const zb::formats::LrSchedule &lr = settings.lr;
  // Plain SGD at a constant lr says nothing beyond the plan.
  if (!layout().reports() || o.reportGradients ||
      (settings.optimizer == zb::Optimizer::Sgd &&
       lr.kind == zb::formats::LrScheduleKind::Constant &&
       lr.warmupSteps == 0))
    return;
  raw_ostream &os = o.reportFormat == ReportFormat::Json ? errs() : outs();
  os << zb::optimizerName(settings.optimizer)
     << formatv(" lr {0}", llvm::format("%g", lr.lr));
  if (lr.warmupSteps > 0)
    os << formatv(", warmup {0} step{1}", lr.warmupSteps,
                  lr.warmupSteps == 1 ? "" : "s");
  if (lr.kind != zb::formats::LrScheduleKind::Constant)
    os << ", " << zb::formats::lrScheduleName(lr.kind)
       << formatv(" decay to {0} at step {1}", llvm::format("%g", lr.minLr),
                  lr.decaySteps);
  if (settings.optimizer == zb::Optimizer::AdamW) {
    os << format(", betas %g,%g, eps %g", settings.beta1, settings.beta2,
                 settings.eps);
    if (settings.weightDecay > 0) {
      os << format(", weight decay %g", settings.weightDecay)
         << formatv(" on {0} of {1} parameters (--no-decay '{2}')", decayed,
                    plan.params.size(), settings.noDecay);
    }
  }
  os << "\n";
  os.flush();
}

/// Rank 0: opens --metrics (appending when resuming, so that the file holds
/// the whole run).
void StepLoop::openMetrics() {
  if (!layout().reports() || o.metricsFile.empty() || o.reportGradients)
    return;
  std::error_code ec;
  metrics = std::make_unique<raw_fd_ostream>(
      o.metricsFile, ec,
      firstStep > 0 ? sys::fs::OF_Append : sys::fs::OF_None);
  if (ec)
    zbrt_fatal(("--metrics " + o.metricsFile + ": cannot write: " +
                ec.message())
                   .c_str());
  // A run killed mid-line left a fragment: the resumed run's lines start on
  // a line of their own (zb.read_metrics skips the fragment).
  if (firstStep > 0)
    if (auto existing = MemoryBuffer::getFile(o.metricsFile, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
        existing && !(*existing)->getBuffer().empty() &&
        !(*existing)->getBuffer().ends_with("\n"))
      *metrics << "\n";
}

void StepLoop::writeMetrics(const json::Object &line) {
  if (!metrics)
    return;
  *metrics << json::Value(json::Object(line)) << "\n";
  metrics->flush();
  if (metrics->has_error()) {
    std::string why = metrics->error().message();
    metrics->clear_error();
    zbrt_fatal(("--metrics " + o.metricsFile + ": cannot write: " + why)
                   .c_str());
  }
}

/// The CUDA step-graph variant of evaluations: apart from training steps'.
constexpr uint64_t kEvaluationVariant = 0x6576616c75617465ull;

/// --eval-every: the mean loss of --eval-steps validation batches, each a
/// whole step's batch through the same program (its gradients are
/// discarded; no optimizer step). The pending optimizer step is settled
/// first, so the loss is that of the parameters after step `stepsDone`.
void StepLoop::evaluate(int64_t stepsDone) {
  gradSync.settleBetweenSteps();
  zbrt_cuda_synchronize();
  double sum = 0;
  for (int64_t k = 0; k < o.evalSteps; ++k) {
    if (Error e = fillInputs(rp, k, Split::Validation))
      zbrt_fatal(("validation data: " + toString(std::move(e))).c_str());
    clearOutputs(rp);
    // As a training step: the memory pool hands out the same blocks to the
    // same requests, and the step's CUDA graphs (its own: a training step's
    // validation may launch the previous step's optimizer inside the step,
    // an evaluation's never does) hold from one call to the next.
    zbrt_pool_reset_counters();
    zbrt_cuda_step_variant(rp.argumentsKey() ^ kEvaluationVariant);
    zbrt::traceBeginStep();
    rp.call();
    zbrt_step_end();
    zbrt_cuda_synchronize();
    if (rp.hasLoss) {
      float loss = 0;
      rp.loss.download(&loss);
      sum += (double)loss / (double)plan.numMicrobatches;
    }
  }
  double mine = rp.hasLoss ? meanOverPipelines(sum, "validation loss") : 0,
         total = 0;
  watched::reduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, 0,
                  layout().pipelineComm,
                  "the other ranks' validation losses (reduce)");
  if (!layout().reports())
    return;
  EvalResult ev{stepsDone, total / (double)o.evalSteps, o.evalSteps};
  report.evals.push_back(ev);
  if (o.reportFormat == ReportFormat::Text) {
    if (terminal)
      outs() << "\r\033[K";
    outs() << format("step %3lld  val loss %.6f  (%lld batches)\n",
                     (long long)ev.step, ev.loss, (long long)ev.batches);
    outs().flush();
  }
  writeMetrics(json::Object{{"step", ev.step},
                            {"val_loss", jsonNumber(ev.loss)},
                            {"val_batches", ev.batches}});
}

void StepLoop::announceText() {
  if (!layout().reports() || !rp.trainTokens)
    return;
  raw_ostream &os = o.reportFormat == ReportFormat::Json ? errs() : outs();
  os << describeSource(*rp.trainTokens);
  if (rp.valTokens && rp.valTokens->path() == rp.trainTokens->path())
    os << formatv("; training on [0, {0}), validating on [{0}, {1})",
                  rp.trainTokens->end, rp.valTokens->end);
  else if (rp.valTokens)
    os << "; validating on " << describeSource(*rp.valTokens);
  os << "\n";
  os.flush();
  if (rp.text && !o.saveParams.empty() &&
      o.data.textVocab == TextVocab::Chars)
    if (Error e = writeVocabularyJson(*rp.text, o.saveParams + ".vocab.json"))
      zbrt_fatal(toString(std::move(e)).c_str());
}

void StepLoop::dumpBatch() {
  std::vector<BatchInput> ins;
  std::vector<std::vector<char>> host;
  host.reserve(rp.inputs.size());
  for (auto &[index, buf] : rp.inputs) {
    host.emplace_back(buf.byteSize());
    buf.download(host.back().data());
    ins.push_back({&plan.inputs[index], host.back().data()});
  }
  if (Error e = writeBatchJson(o.dumpBatch, 1,
                               plan.numMicrobatches * plan.microbatchSize, ins))
    zbrt_fatal(toString(std::move(e)).c_str());
}

void StepLoop::runStep(int64_t step) {
  // Post-validation: the previous step is validated here or, when the
  // program validates, its gradients are kept for the validation.
  gradSync.beforeStep();
  if (Error e = fillInputs(rp, step))
    zbrt_fatal(("training data: " + toString(std::move(e))).c_str());
  if (step == firstStep && layout().reports() && !o.dumpBatch.empty())
    dumpBatch();
  clearOutputs(rp);

  zbrt_pool_reset_counters();
  if (!o.overlapSteps) {
    MPI_Request barrier;
    MPI_Ibarrier(MPI_COMM_WORLD, &barrier);
    std::string what =
        formatv("the other ranks at the barrier before step {0}", step + 1)
            .str();
    zbrt_wait(&barrier, what.c_str());
  }
  zbrt_cuda_step_variant(rp.argumentsKey());
  zbrt::traceBeginStep();
  double t0 = nowMs();
  if (step == firstStep + std::min<int64_t>(1, numSteps - 1))
    wallStart = t0;
  allReduce.arm();
  rp.call();
  zbrt_step_end();
  if (gradSync.redoStep()) {
    // The previous step was amended after this step's passes had started:
    // run them again on the corrected parameters (every rank does).
    allReduce.discard();
    allReduce.arm();
    clearOutputs(rp);
    zbrt::traceBeginStep();
    t0 = nowMs();
    rp.call();
    zbrt_step_end();
  }
  // D pipelines: every gradient summed over the step's D*m microbatches.
  allReduce.finish(step);
  if (!o.reportGradients)
    gradSync.afterStep(step);
  // The optimizer's kernels (CUDA backend) before the host reads anything.
  zbrt_cuda_synchronize();
  double t1 = nowMs();

  zbrt::BubbleStats bubble = zbrt::computeBubble(zbrt::traceEvents(), rank);
  ZbrtPoolStats pool;
  zbrt_pool_stats(&pool);
  myPeakHeap = std::max(myPeakHeap, pool.peakBytesInUse);
  float loss = 0;
  if (rp.hasLoss)
    rp.loss.download(&loss);
  const GradSync::Decision &decided = gradSync.lastDecision();
  const bool decidedNow = decided.step == step + 1;
  StepSample mine{rp.hasLoss ? meanOverPipelines(loss, "loss") : 0.0,
                  rp.hasLoss ? 1.0 : 0.0,
                  t1 - t0,
                  bubble.bubbleRate,
                  (double)bubble.numActions,
                  decidedNow ? decided.norm
                             : std::numeric_limits<double>::quiet_NaN(),
                  decidedNow ? (decided.skipped ? 1.0 : 0.0) : -1.0};
  // Step 1 warms up caches and MPI connections and is left out of the
  // measurements when there is more than one step.
  const bool measured = numSteps == 1 || step > firstStep;
  if (measured)
    profile.add(zbrt::traceEvents(), rank);
  if (o.overlapSteps) { // no collective between steps
    mySamples.push_back(mine);
    wallEnd = t1;
    return;
  }
  {
    std::string what =
        formatv("the other ranks' times of step {0} (gather)", step + 1).str();
    watched::gather(&mine, kSampleDoubles, MPI_DOUBLE, samples.data(),
                    kSampleDoubles, MPI_DOUBLE, 0, layout().pipelineComm,
                    what.c_str());
  }
  gatherTrace(step, measured);
  if (layout().reports())
    recordStep(step, measured);
}

/// --overlap-steps: every step's samples on rank 0 at the end, recorded as
/// runStep would have; the wall clock per step (the slowest rank).
void StepLoop::gatherOverlappedSteps() {
  std::vector<StepSample> all(rank == 0 ? numSteps * worldSize : 0);
  watched::gather(mySamples.data(), kSampleDoubles * numSteps, MPI_DOUBLE,
                  all.data(), kSampleDoubles * numSteps, MPI_DOUBLE, 0,
                  layout().pipelineComm,
                  "the other ranks' step times (gather)");
  double span = wallEnd - wallStart, maxSpan = 0;
  watched::reduce(&span, &maxSpan, 1, MPI_DOUBLE, MPI_MAX, 0,
                  layout().pipelineComm, "the other ranks' run times (reduce)");
  if (!layout().reports())
    return;
  for (int64_t i = 0; i < numSteps; ++i) {
    for (int32_t r = 0; r < worldSize; ++r)
      samples[r] = all[r * numSteps + i];
    recordStep(firstStep + i, numSteps == 1 || i > 0);
  }
  report.wallStepTimeMs = maxSpan / (double)std::max<int64_t>(1, numSteps - 1);
}

/// All ranks' events on rank 0 (one collective), for the replay of every
/// measured step and the --trace file of the last one.
void StepLoop::gatherTrace(int64_t step, bool measured) {
  const bool replayThis = replayWanted && measured;
  const bool traceThis =
      step + 1 == firstStep + numSteps && !o.traceFile.empty();
  // Pipeline 0's (every pipeline of the job runs the same schedule).
  if ((!replayThis && !traceThis) || layout().pipeline != 0)
    return;
  std::vector<zbrt::TraceEvent> all = zbrt::gatherTrace(zbrt::traceEvents(), 0);
  if (rank != 0)
    return;
  if (replayThis) {
    std::vector<double> b = replayStep(*planned, all);
    if (b.size() == (size_t)worldSize) {
      for (int32_t r = 0; r < worldSize; ++r)
        replayTotal[r] += b[r];
      ++report.replaySteps;
    }
  }
  if (traceThis) {
    Error err = zb::support::writeFileAtomically(o.traceFile, [&](raw_ostream &os) {
      std::ostringstream trace;
      zbrt::writeChromeTrace(trace, all, worldSize, step + 1);
      os << trace.str();
      return Error::success();
    });
    if (err)
      zbrt_fatal(("--trace: " + toString(std::move(err))).c_str());
    report.traceFile = o.traceFile;
  }
}

/// Rank 0: the step's loss, time, lr and gradient norm, the realized bubble
/// (mean over the measured steps), the step line or progress line and the
/// metrics line.
void StepLoop::recordStep(int64_t step, bool measured) {
  StepResult res;
  res.step = step + 1;
  res.lr = settings.lr.at(step + 1);
  for (const StepSample &s : samples) {
    // Every loss rank's sum over its microbatches (DualPipe: two ranks,
    // one per direction).
    if (s.hasLoss != 0)
      res.loss += s.loss / (double)plan.numMicrobatches;
    res.timeMs = std::max(res.timeMs, s.timeMs);
    if (s.skipped >= 0) {
      res.gradNorm = s.gradNorm;
      res.skipped = s.skipped > 0;
    }
  }
  if (tokensPerStep > 0 && res.timeMs > 0)
    res.tokensPerSecond = (double)tokensPerStep / (res.timeMs / 1000);
  const int64_t last = firstStep + numSteps;
  if (!o.overlapSteps && step + 1 < last)
    res.etaSeconds = (nowMs() - runStartMs) / 1000 /
                     (double)(step + 1 - firstStep) *
                     (double)(last - step - 1);
  report.steps.push_back(res);
  if (measured)
    for (int32_t r = 0; r < worldSize; ++r)
      if (samples[r].numActions > 0) {
        bubbleTotal[r] += samples[r].bubble;
        ++bubbleSteps[r];
      }
  const bool lastStep = step + 1 == last;
  if (o.reportFormat == ReportFormat::Text && !o.reportGradients) {
    // A step followed by an evaluation keeps its line above the validation
    // loss.
    const bool line = step == firstStep || lastStep ||
                      (step + 1) % o.printEvery == 0 ||
                      (o.evalEvery > 0 && (step + 1) % o.evalEvery == 0);
    if (line || terminal) {
      if (terminal)
        outs() << "\r\033[K";
      printStepLine(outs(), res, /*newline=*/line);
      outs().flush();
    }
  }
  if (!o.reportGradients)
    writeMetrics(json::Object{
        {"step", res.step},
        {"loss", jsonNumber(res.loss)},
        {"lr", res.lr},
        {"grad_norm", jsonNumber(res.gradNorm ? *res.gradNorm : NAN)},
        {"tokens_per_s",
         jsonNumber(res.tokensPerSecond ? *res.tokensPerSecond : NAN)},
        {"time_ms", jsonNumber(res.timeMs)},
        {"skipped", res.skipped}});
}

int StepLoop::finishGradients() {
  std::vector<double> norms = gradientNorms(rp, plan);
  if (layout().reports()) {
    printGradientReport(outs(), report.steps.back().loss, plan, norms,
                        o.reportFormat == ReportFormat::Json);
    outs().flush();
  }
  return 0;
}

int StepLoop::finishTraining() {
  gradSync.settle();
  zbrt_cuda_synchronize();
  if (o.overlapSteps)
    gatherOverlappedSteps();
  report.gradSync = gradSync.finish();
  // Test hook: a parameter of this world rank changed after the last step,
  // as a data-parallel bug would (checkPipelinesAgree must name it).
  if (const char *r = std::getenv("ZB_RUN_INJECT_DIVERGENCE");
      r && std::atoi(r) == layout().worldRank && !rp.params.empty())
    rp.params.begin()->second.data()[0] += 1.0f;
  if (!checkPipelinesAgree(rp, firstStep + numSteps))
    return 1;
  if (!o.saveParams.empty() && !saveFinalParams(rp, plan, o.saveParams))
    return 1;
  report.peakHeapBytes.assign(worldSize, 0);
  watched::gather(&myPeakHeap, 1, MPI_INT64_T, report.peakHeapBytes.data(),
                  1, MPI_INT64_T, 0, layout().pipelineComm,
                  "the other ranks' peak memory (gather)");
  if (zbrt_cuda_started()) {
    ZbrtCudaStats mine{};
    zbrt_cuda_stats(&mine);
    report.cuda.assign(worldSize, ZbrtCudaStats{});
    watched::gather(&mine, sizeof mine, MPI_BYTE, report.cuda.data(),
                    sizeof mine, MPI_BYTE, 0, layout().pipelineComm,
                    "the other ranks' CUDA counters (gather)");
  }
  reduceOnRankZero(profile);
  report.placement = gatherPlacement();
  for (const RankPlacement &p : report.placement)
    report.nodes.push_back(p.node);
  if (!layout().reports())
    return 0;
  if (planned)
    report.atMeasured = predictAtMeasuredCosts(plan, *planned, profile);
  if (!o.profileFile.empty()) {
    if (Error e =
            writeProfile(profile.toProfile(plan.path, numSteps), o.profileFile))
      zbrt_fatal(("--profile: " + toString(std::move(e))).c_str());
    report.profileFile = o.profileFile;
  }
  for (int32_t r = 0; r < worldSize; ++r) {
    report.realizedBubbleRate.push_back(
        bubbleSteps[r] ? std::optional<double>(bubbleTotal[r] / bubbleSteps[r])
                       : std::nullopt);
    if (report.replaySteps)
      report.replayedBubbleRate.push_back(replayTotal[r] / report.replaySteps);
  }
  if (o.reportFormat == ReportFormat::Json)
    printJsonReport(outs(), plan, report);
  else
    printTextReport(outs(), plan, report);
  outs().flush();
  return 0;
}

} // namespace

Error zb::runner::checkOptions(const RunOptions &o) {
  if (o.steps < 1)
    return makeError("--steps must be >= 1");
  if (o.printEvery < 1)
    return makeError("--print-every must be >= 1");
  if (!(o.commTimeoutSeconds >= 0) || !std::isfinite(o.commTimeoutSeconds))
    return makeError(formatv("--comm-timeout must be a finite number of "
                             "seconds >= 0 (0: wait forever), got {0}",
                             o.commTimeoutSeconds));
  if (o.checkpointEvery < 0)
    return makeError("--checkpoint-every must be >= 0");
  if (o.checkpointEvery > 0 && o.checkpointDir.empty())
    return makeError("--checkpoint-every needs --checkpoint DIR");
  if (o.overlapSteps && (!o.traceFile.empty() || o.reportGradients))
    return makeError("--overlap-steps does not go with --trace or "
                     "--report-gradients (they need the steps aligned)");
  if (o.ranksGiven && o.numRanks < 1)
    return makeError("--ranks must be >= 1");
  if (!o.hosts.empty())
    if (Expected<int64_t> slots = countHostSlots(o.hosts); !slots)
      return slots.takeError();
  if (o.dataParallel < 0 || o.dataParallel > zb::limits::kMaxDataParallel)
    return makeError(formatv("--data-parallel must be in [1, {0}], got {1}",
                             zb::limits::kMaxDataParallel, o.dataParallel));
  if (o.training.lr && !isValidLearningRate(*o.training.lr))
    return makeError(formatv("--lr must be a finite float32 number > 0 (at "
                             "most 3.4e38), got {0}",
                             llvm::format("%g", *o.training.lr)));
  if (o.data.targetShift != 0 && o.data.targetShift != 1)
    return makeError(formatv("--target-shift must be 0 or 1, got {0}",
                             o.data.targetShift));
  if (o.evalEvery < 0)
    return makeError("--eval-every must be >= 0");
  if (o.evalSteps < 1)
    return makeError("--eval-steps must be >= 1");
  if (o.evalEvery > 0 && !o.data.hasValidation())
    return makeError("--eval-every needs validation data: --val-data "
                     "FILE|DIR or --val-split F");
  if (o.data.valSplit != 0 && !(o.data.valSplit > 0 && o.data.valSplit < 1))
    return makeError(formatv("--val-split must be in (0, 1), got {0}",
                             llvm::format("%g", o.data.valSplit)));
  if (o.evalEvery > 0 && o.reportGradients)
    return makeError("--eval-every does not go with --report-gradients");
  return Error::success();
}

Expected<Backend> zb::runner::resolveBackend(Backend requested,
                                           const Plan &plan) {
  bool cudaPlan = plan.target == zb::Target::Cuda;
  Backend backend =
      requested == Backend::Auto ? (cudaPlan ? Backend::Cuda : Backend::Cpu)
                                 : requested;
  const char *flag = requested == Backend::Auto ? "--backend auto"
                     : backend == Backend::Cuda ? "--backend cuda"
                                                : "--backend cpu";
  if (backend == Backend::Cpu && cudaPlan)
    return makeError(formatv("{0}: {1} was compiled with --target cuda (its "
                             "rank programs launch GPU kernels): run it with "
                             "--backend cuda on a machine with a GPU",
                             flag, plan.path));
  // A cuda-emu plan's kernels run on the host: on the CPU backend, or on
  // the CUDA backend with its GEMMs, messages and memory on the GPU (the
  // runtime's CUDA path without the compiled kernels).
  if (backend == Backend::Cuda && !cudaPlan &&
      plan.target != zb::Target::CudaEmu)
    return makeError(formatv("{0}: {1} was compiled for target '{2}', not "
                             "cuda: recompile with zb-compile --target cuda",
                             flag, plan.path,
                             plan.target ? plan.targetText() : "cpu"));
  if (backend == Backend::Cuda) {
    char msg[512];
    if (zbrt_cuda_available(msg, sizeof(msg)) != 0)
      return makeError(Twine(flag) + ": " + msg);
  }
  return backend;
}

Expected<TrainingSettings> zb::runner::resolveTrainingSettings(
    const TrainingFlags &f, const Plan &plan,
    const std::optional<TrainingSettings> &resumed, int64_t lastStep) {
  TrainingSettings s =
      resumed ? *resumed : zb::formats::trainingSettings(plan.optimizer);
  s.optimizer = plan.optimizer.kind;
  if (f.lr)
    s.lr.lr = *f.lr;
  if (f.lrSchedule)
    s.lr.kind = *f.lrSchedule;
  if (f.warmupSteps)
    s.lr.warmupSteps = *f.warmupSteps;
  if (f.decaySteps)
    s.lr.decaySteps = *f.decaySteps;
  else if (s.lr.kind == zb::formats::LrScheduleKind::Constant)
    s.lr.decaySteps = 0;
  else if (s.lr.decaySteps == 0)
    s.lr.decaySteps = lastStep;
  if (f.minLr)
    s.lr.minLr = *f.minLr;
  for (auto [flag, out] :
       {std::pair{&f.weightDecay, &s.weightDecay}, {&f.beta1, &s.beta1},
        {&f.beta2, &s.beta2}, {&f.eps, &s.eps}})
    if (*flag)
      *out = **flag;
  if (f.noDecay)
    s.noDecay = *f.noDecay;
  if (!f.decaySteps && !(resumed && resumed->lr.decaySteps > 0) &&
      s.lr.kind != zb::formats::LrScheduleKind::Constant &&
      s.lr.decaySteps <= s.lr.warmupSteps)
    return makeError(formatv("the {0} decay ends at the run's last step, "
                             "{1} (the default --decay-steps), which must "
                             "exceed --warmup-steps {2}: give --decay-steps "
                             "or more --steps",
                             zb::formats::lrScheduleName(s.lr.kind),
                             s.lr.decaySteps, s.lr.warmupSteps));
  if (Error e = zb::formats::checkTrainingSettings(s))
    return std::move(e);
  return s;
}

int zb::runner::runZbRun(const RunOptions &o, int argc, char **argv) {
  if (Error e = checkOptions(o))
    return reportError(std::move(e));
  Expected<Plan> plan = loadPlan(o.planDir);
  const bool inMPI = insideMPIJob();
  // --hosts inside a job zb-run did not start (its launcher sets
  // kTerminalEnv): the user's mpirun placed the ranks already.
  if (inMPI && !o.hosts.empty() && !std::getenv(kTerminalEnv)) {
    const char *worldRank = std::getenv("OMPI_COMM_WORLD_RANK");
    if (worldRank && std::string(worldRank) == "0")
      reportError(makeError(
          "--hosts chooses the nodes of the mpirun that zb-run --ranks N "
          "starts; inside your own mpirun give its --host or --hostfile "
          "instead"));
    return 1;
  }
  if (!inMPI) {
    if (!plan)
      return reportError(plan.takeError());
    Expected<std::optional<int>> launched = launch(o, *plan, argc, argv);
    if (!launched)
      return reportError(launched.takeError());
    if (*launched)
      return **launched;
  }

  int32_t worldSize = 0;
  const int32_t rank = zbrt_init(&argc, &argv, &worldSize);
  zbrt_set_comm_timeout(o.commTimeoutSeconds);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL})
    signal(sig, fatalSignalHandler);
  // The rank program stays loaded until after MPI_Finalize.
  RunSetup setup;
  std::unique_ptr<RankProgram> rp =
      setUpRank(o, plan, inMPI, rank, worldSize, setup);
  int code =
      rp ? StepLoop(o, *plan, *rp, layout().pipelineSize, setup).run() : 1;
  finalizeLayout();
  zbrt_finalize();
  return code;
}
