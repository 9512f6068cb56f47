//===- zb-run.cpp - Host driver for compiled zb pipeline programs ---------===//
//
//   zb-run DIR [--ranks N] [--steps S] [--data DIR] [--lr F] [--trace FILE]
//              [--profile FILE] [--backend cpu|cuda] [--print-every K]
//              [--report-gradients] [--report-format text|json]
//              [--text-vocab bytes|chars] [--dump-batch FILE]
//
// DIR is a zb-compile output directory (plan.json, params.bin, rank<R>.so;
// docs/plan-json.md). Outside an MPI job, `--ranks N` runs zb-run under
// `mpirun -np N`; inside one, each process runs its rank: it loads its rank
// program, feeds it the step's samples, calls it once per training step,
// applies the optimizer to its parameters, and rank 0 reports loss and time
// per step, then the predicted (plan.json) and realized bubble rates.
//
//===----------------------------------------------------------------------===//

#include "Data.h"
#include "Launcher.h"
#include "Plan.h"

#include "zb/Schedule/Formats.h"
#include "zb/Schedule/Schedule.h"
#include "zbrt/Trace.h"
#include "zbrt/zbrt.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <mpi.h>

#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>

using namespace llvm;
using namespace zb::run;

namespace {

cl::OptionCategory runCategory("zb-run options");

cl::opt<std::string> planDir(cl::Positional, cl::Required,
                             cl::desc("<zb-compile output directory>"),
                             cl::cat(runCategory));
cl::opt<int> numRanksOpt(
    "ranks",
    cl::desc("Number of ranks: launches `mpirun -np N` unless already inside "
             "an MPI job (must equal plan.json num_ranks)"),
    cl::value_desc("N"), cl::init(0), cl::cat(runCategory));
cl::opt<int> numSteps("steps", cl::desc("Training steps (default 20)"),
                      cl::value_desc("S"), cl::init(20), cl::cat(runCategory));
cl::opt<std::string>
    dataDir("data",
            cl::desc("Training data: a directory with input_<i>.pb, or a text "
                     "file whose bytes or characters (--text-vocab) are "
                     "tokens (inputs 0 and 1 = tokens and targets, shifted "
                     "by one; docs/plan-json.md). "
                     "Default: plan.json \"data\""),
            cl::value_desc("DIR|FILE"), cl::cat(runCategory));
cl::opt<TextVocab> textVocab(
    "text-vocab",
    cl::desc("Tokens of --data FILE (text): bytes, or the file's UTF-8 "
             "characters numbered in the sorted order of its distinct code "
             "points (the model's vocabulary must cover them)"),
    cl::values(clEnumValN(TextVocab::Bytes, "bytes",
                          "one token per byte, vocabulary 256 (default)"),
               clEnumValN(TextVocab::Chars, "chars",
                          "one token per character; --save-params FILE also "
                          "writes FILE.vocab.json (the characters)")),
    cl::init(TextVocab::Bytes), cl::cat(runCategory));
cl::opt<std::string> dumpBatch(
    "dump-batch",
    cl::desc("Write the inputs rank 0 feeds its program in step 1 as JSON "
             "({\"step\": 1, \"inputs\": {NAME: [[sample]...]}})"),
    cl::value_desc("FILE"), cl::cat(runCategory));
cl::opt<std::string> inputsDir(
    "inputs",
    cl::desc("Directory with input_<i>.pb (the same as --data DIR)"),
    cl::value_desc("DIR"), cl::cat(runCategory));
cl::opt<uint64_t> seedOpt(
    "seed",
    cl::desc("Seed of the text batches (--data FILE.txt); default 0"),
    cl::value_desc("K"), cl::init(0), cl::cat(runCategory));
cl::opt<bool> deterministic(
    "deterministic",
    cl::desc("Fix everything that could vary between runs: one BLAS/OpenMP "
             "thread per rank, reports reduced in rank order (the data order "
             "and gradient sums are fixed anyway)"),
    cl::init(false), cl::cat(runCategory));
cl::opt<double> lrOpt("lr",
                      cl::desc("Learning rate (overrides plan.json optimizer)"),
                      cl::value_desc("F"), cl::init(0.0), cl::cat(runCategory));
cl::opt<std::string>
    traceFile("trace",
              cl::desc("Write a Chrome/Perfetto trace of the last step"),
              cl::value_desc("FILE"), cl::cat(runCategory));
cl::opt<std::string> profileFile(
    "profile",
    cl::desc("Write measured per-stage costs (T_F, T_B, T_W, T_comm in ms; "
             "mean over steps 2..S) as JSON, for zb-compile --profile"),
    cl::value_desc("FILE"), cl::cat(runCategory));
enum class Backend { Cpu, Cuda };
cl::opt<Backend> backend("backend", cl::desc("Execution backend"),
                         cl::values(clEnumValN(Backend::Cpu, "cpu",
                                               "CPU: MPI + OpenBLAS (default)"),
                                    clEnumValN(Backend::Cuda, "cuda",
                                               "CUDA: needs a GPU and driver")),
                         cl::init(Backend::Cpu), cl::cat(runCategory));
cl::opt<int> printEvery("print-every",
                        cl::desc("Print the loss every K steps (default 1)"),
                        cl::value_desc("K"), cl::init(1), cl::cat(runCategory));
cl::opt<bool> reportGradients(
    "report-gradients",
    cl::desc("Evaluate one step without an optimizer step; print the loss "
             "and the L2 norm of every parameter's (mean) gradient"),
    cl::init(false), cl::cat(runCategory));
cl::opt<std::string> saveParams(
    "save-params",
    cl::desc("After training, write every parameter's final value to FILE "
             "in the params.bin layout (float32 at plan.json offset_bytes)"),
    cl::value_desc("FILE"), cl::cat(runCategory));
enum class ReportFormat { Text, Json };
cl::opt<ReportFormat> reportFormat(
    "report-format", cl::desc("Output format"),
    cl::values(clEnumValN(ReportFormat::Text, "text", "human-readable lines"),
               clEnumValN(ReportFormat::Json, "json",
                          "one JSON document on stdout at the end")),
    cl::init(ReportFormat::Text), cl::cat(runCategory));

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

[[noreturn]] void exitWithError(const Twine &message) {
  std::fflush(stdout);
  errs() << "zb-run: error: " << message << "\n";
  errs().flush();
  std::exit(1);
}

Error makeError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// Inside MPI: every rank passes its (possibly successful) setup result; if
/// any rank failed, the lowest failing rank prints its message and all ranks
/// exit(1) after MPI_Finalize (no rank is left waiting).
void agreeOrExit(Error err) {
  int rank = zbrt_rank(), size = zbrt_world_size();
  std::string message;
  if (err)
    message = toString(std::move(err));
  int mine = message.empty() ? size : rank, first = size;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == size)
    return;
  if (rank == first) {
    std::fflush(stdout);
    std::fprintf(stderr, "zb-run: rank %d: %s\n", rank, message.c_str());
    std::fflush(stderr);
  }
  zbrt_finalize();
  std::exit(1);
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

//===----------------------------------------------------------------------===//
// Buffers and memref descriptors
//===----------------------------------------------------------------------===//

/// 64-byte aligned storage of `n` elements of `elemBytes` bytes each,
/// zero-initialised.
class Buffer {
public:
  Buffer() = default;
  explicit Buffer(int64_t n, int64_t elemBytes = 4)
      : count(n), elemBytes(elemBytes) {
    size_t bytes =
        ((size_t)std::max<int64_t>(n, 1) * elemBytes + 63) / 64 * 64;
    ptr.reset(static_cast<char *>(std::aligned_alloc(64, bytes)));
    if (!ptr)
      exitWithError(formatv("out of memory allocating {0} bytes", bytes));
    std::memset(ptr.get(), 0, bytes);
  }
  /// The elements as floats (parameters, gradients, float32 inputs).
  float *data() const { return reinterpret_cast<float *>(ptr.get()); }
  char *bytes() const { return ptr.get(); }
  int64_t size() const { return count; }
  void zero() { std::memset(ptr.get(), 0, (size_t)(count * elemBytes)); }

private:
  struct Free {
    void operator()(char *p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> ptr;
  int64_t count = 0, elemBytes = 4;
};
using FloatBuffer = Buffer;

/// { T *allocated; T *aligned; int64_t offset; int64_t sizes[R];
///   int64_t strides[R]; } with row-major strides and offset 0.
std::vector<int64_t> makeDescriptor(void *data,
                                    const std::vector<int64_t> &shape) {
  std::vector<int64_t> d;
  d.push_back((int64_t)(intptr_t)data);
  d.push_back((int64_t)(intptr_t)data);
  d.push_back(0);
  d.insert(d.end(), shape.begin(), shape.end());
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  d.insert(d.end(), strides.begin(), strides.end());
  return d;
}

//===----------------------------------------------------------------------===//
// One rank's program and state
//===----------------------------------------------------------------------===//

using EntryFn = void (*)(void **);

std::string resolvePath(StringRef base, StringRef path) {
  if (sys::path::is_absolute(path))
    return path.str();
  SmallString<256> p(base);
  sys::path::append(p, path);
  return std::string(p);
}

/// The data directory or text file: --data / --inputs, else plan.json
/// "data" (relative to DIR).
Expected<std::string> dataDirectory(const Plan &plan) {
  if (!dataDir.empty() && !inputsDir.empty())
    return makeError("give --data or --inputs, not both");
  if (!dataDir.empty())
    return dataDir.getValue();
  if (!inputsDir.empty())
    return inputsDir.getValue();
  if (!plan.data.empty())
    return resolvePath(plan.dir, plan.data);
  return makeError(plan.path +
                   ": no \"data\" directory given: pass --data DIR");
}

struct RankState {
  const Plan *plan = nullptr;
  int32_t rank = 0;
  void *handle = nullptr;
  EntryFn entry = nullptr;
  std::map<int64_t, FloatBuffer> params, grads; // by parameter index
  std::map<int64_t, FloatBuffer> adamM, adamV;  // AdamW state by index
  std::map<int64_t, Dataset> datasets;          // by input index
  std::map<int64_t, Buffer> inputs;             // by input index
  std::unique_ptr<TextData> text; ///< text data instead of datasets
  FloatBuffer loss{1};
  bool hasLoss = false;
  std::vector<std::vector<int64_t>> descriptors;
  std::vector<void *> argv;

  ~RankState() {
    if (handle)
      dlclose(handle);
  }
};

/// Loads everything rank `rank` needs. `forRun` selects RTLD_GLOBAL (the
/// real run) versus a side-effect-free check (the launcher validating every
/// rank before starting mpirun).
Expected<std::unique_ptr<RankState>> setupRank(const Plan &plan, int32_t rank,
                                               bool forRun) {
  auto st = std::make_unique<RankState>();
  st->plan = &plan;
  st->rank = rank;
  const RankInfo &info = plan.ranks[rank];

  // Rank program.
  std::string lib = resolvePath(plan.dir, info.library);
  if (!sys::fs::exists(lib))
    return makeError(formatv("{0}: ranks[{1}].library: '{2}' not found",
                             plan.path, rank, lib));
  dlerror();
  // RTLD_DEEPBIND: the program's own functions win over same-named ones
  // already loaded (libc exports `step`, for one); zbrt_* still resolve
  // from the libzbrt.so zb-run is linked with.
  st->handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_DEEPBIND |
                                       (forRun ? RTLD_GLOBAL : RTLD_LOCAL));
  if (!st->handle) {
    const char *why = dlerror();
    return makeError(formatv("{0}: cannot load rank program: {1}", lib,
                             why ? why : "unknown error"));
  }
  st->entry = reinterpret_cast<EntryFn>(dlsym(st->handle, info.entry.c_str()));
  if (!st->entry)
    return makeError(formatv("{0}: entry symbol '{1}' (ranks[{2}].entry) "
                             "not found",
                             lib, info.entry, rank));

  // Parameters (initial values) and gradient buffers.
  std::unique_ptr<MemoryBuffer> paramsBin;
  std::string paramsPath = resolvePath(plan.dir, "params.bin");
  auto needParams = [&]() -> Error {
    if (paramsBin)
      return Error::success();
    auto buf = MemoryBuffer::getFile(paramsPath, /*IsText=*/false,
                                     /*RequiresNullTerminator=*/false);
    if (!buf)
      return makeError(paramsPath +
                       ": cannot read: " + buf.getError().message());
    paramsBin = std::move(*buf);
    return Error::success();
  };
  for (const ArgInfo &a : info.args) {
    if (a.kind != ArgKind::Param && a.kind != ArgKind::Grad)
      continue;
    const ParamInfo &p = plan.params[a.index];
    if (a.kind == ArgKind::Grad) {
      if (!st->grads.count(a.index))
        st->grads.emplace(a.index, FloatBuffer(p.numElements()));
      continue;
    }
    if (st->params.count(a.index))
      continue;
    if (Error e = needParams())
      return std::move(e);
    FloatBuffer buf(p.numElements());
    if (Error e = readParam(paramsPath, paramsBin->getBuffer(), p.name,
                            p.offsetBytes, p.numElements(), buf.data()))
      return std::move(e);
    st->params.emplace(a.index, std::move(buf));
  }
  for (auto &[index, g] : st->grads) {
    if (!st->params.count(index))
      return makeError(formatv("{0}: ranks[{1}] has a grad argument for "
                               "parameter {2} ('{3}') but no param argument",
                               plan.path, rank, index,
                               plan.params[index].name));
    if (plan.optimizer.name == "adamw") {
      st->adamM.emplace(index, FloatBuffer(g.size()));
      st->adamV.emplace(index, FloatBuffer(g.size()));
    }
  }

  // Training data: input_<i>.pb datasets, or a text file.
  for (const ArgInfo &a : info.args) {
    if (a.kind != ArgKind::Input || st->inputs.count(a.index))
      continue;
    Expected<std::string> dir = dataDirectory(plan);
    if (!dir)
      return dir.takeError();
    const InputInfo &in = plan.inputs[a.index];
    st->inputs.emplace(a.index,
                       Buffer(plan.numMicrobatches * plan.microbatchSize *
                                  in.sampleElements(),
                              dtypeBytes(in.dtype)));
    if (sys::fs::is_regular_file(*dir)) {
      // Text: input 0 = tokens, input 1 = the same bytes shifted by one.
      if (plan.inputs.size() != 2 || plan.inputs[0].sampleShape.size() != 1 ||
          plan.inputs[0].sampleShape != plan.inputs[1].sampleShape)
        return makeError(formatv(
            "{0}: text data needs a language model with two inputs (tokens, "
            "targets) of sample shape [seq]; {1} has {2} input(s)",
            *dir, plan.path, plan.inputs.size()));
      if (!st->text) {
        Expected<TextData> text =
            readText(*dir, plan.inputs[0].sampleShape[0], textVocab);
        if (!text)
          return text.takeError();
        if (Error e = checkTextVocabulary(*text, plan))
          return std::move(e);
        st->text = std::make_unique<TextData>(std::move(*text));
      }
      continue;
    }
    std::string path =
        resolvePath(*dir, formatv("input_{0}.pb", a.index).str());
    Expected<Dataset> ds =
        readDataset(path, in.name, in.sampleShape, in.dtype);
    if (!ds)
      return ds.takeError();
    st->datasets.emplace(a.index, std::move(*ds));
  }

  // Memref descriptors, in argument order.
  for (const ArgInfo &a : info.args) {
    void *data = nullptr;
    switch (a.kind) {
    case ArgKind::Param:
      data = st->params.at(a.index).data();
      break;
    case ArgKind::Grad:
      data = st->grads.at(a.index).data();
      break;
    case ArgKind::Input:
      data = st->inputs.at(a.index).bytes();
      break;
    case ArgKind::Loss:
      data = st->loss.data();
      st->hasLoss = true;
      break;
    }
    st->descriptors.push_back(makeDescriptor(data, plan.argShape(a)));
  }
  for (auto &d : st->descriptors)
    st->argv.push_back(d.data());
  return std::move(st);
}

/// Copies the samples of step `step` (0-based) into the input buffers.
void fillInputs(RankState &st, int64_t step) {
  const Plan &plan = *st.plan;
  const int64_t batch = plan.numMicrobatches * plan.microbatchSize;
  for (auto &[index, buf] : st.inputs) {
    if (st.text) {
      const InputInfo &in = plan.inputs[index];
      cutText(*st.text, seedOpt, step, batch, in.sampleShape[0],
              /*shift=*/index, in.dtype, buf.bytes());
      continue;
    }
    const Dataset &ds = st.datasets.at(index);
    for (int64_t t = 0; t < batch; ++t) {
      int64_t sample = (step * batch + t) % ds.numSamples;
      std::memcpy(buf.bytes() + t * ds.sampleBytes(),
                  ds.bytes.data() + sample * ds.sampleBytes(),
                  (size_t)ds.sampleBytes());
    }
  }
}

void applyOptimizer(RankState &st, const OptimizerInfo &opt, int64_t step) {
  const float gradScale = 1.0f / (float)st.plan->numMicrobatches;
  for (auto &[index, g] : st.grads) {
    FloatBuffer &p = st.params.at(index);
    if (opt.name == "adamw")
      zbrt_adamw_step(p.data(), g.data(), st.adamM.at(index).data(),
                      st.adamV.at(index).data(), g.size(), step + 1,
                      (float)opt.lr, (float)opt.beta1, (float)opt.beta2,
                      (float)opt.eps, (float)opt.weightDecay, gradScale);
    else
      zbrt_sgd_step(p.data(), g.data(), g.size(), (float)opt.lr, gradScale);
  }
}

double nowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

//===----------------------------------------------------------------------===//
// Launcher (outside MPI)
//===----------------------------------------------------------------------===//

bool insideMPIJob() {
  const char *size = std::getenv("OMPI_COMM_WORLD_SIZE");
  return size && *size;
}

/// Checks every rank's files before anything is launched, so that the
/// common mistakes give one clean line instead of mpirun noise.
void validateAllRanks(const Plan &plan) {
  for (int32_t r = 0; r < plan.numRanks; ++r) {
    auto st = setupRank(plan, r, /*forRun=*/false);
    if (!st)
      exitWithError(toString(st.takeError()));
  }
}

/// --backend cuda needs a usable driver and device; even then, rank
/// programs are CPU code for now.
Error backendError() {
  if (backend != Backend::Cuda)
    return Error::success();
  char msg[512];
  if (zbrt_cuda_available(msg, sizeof(msg)) != 0)
    return makeError(Twine("--backend cuda: ") + msg);
  return makeError("--backend cuda: the CUDA backend is not implemented yet "
                   "(rank programs are CPU code); use --backend cpu");
}

/// Runs this same command under mpirun (with N ranks) and returns its exit
/// code. Open MPI's multi-line failure banners become one line naming the
/// rank (Launcher.h).
int runUnderMpirun(int argc, char **argv, int ranks) {
  ErrorOr<std::string> mpirun = sys::findProgramByName("mpirun");
  if (!mpirun)
    exitWithError("--ranks " + Twine(ranks) +
                  ": mpirun not found on PATH (install openmpi-bin)");
  std::string self =
      sys::fs::getMainExecutable(argv[0], (void *)&runUnderMpirun);
  if (self.empty())
    exitWithError("cannot determine the path of the zb-run executable");
  std::vector<std::string> args = {
      *mpirun, "--allow-run-as-root", "--oversubscribe",
      "-np",   std::to_string(ranks), self};
  for (int i = 1; i < argc; ++i)
    args.push_back(argv[i]);
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  std::string error;
  int code = runMpirun(args, &error);
  if (code < 0)
    exitWithError("cannot run " + *mpirun + ": " + error);
  return code;
}

//===----------------------------------------------------------------------===//
// Reporting (rank 0)
//===----------------------------------------------------------------------===//

/// What every rank sends to rank 0 after a step.
struct StepSample {
  double loss;       ///< loss buffer (sum over microbatches) or 0
  double hasLoss;    ///< 1 on the loss rank
  double timeMs;     ///< this rank's step wall time
  double bubble;     ///< realized bubble rate of this step
  double numActions; ///< F/B/W actions traced in this step
};

struct StepResult {
  int64_t step; ///< 1-based
  double loss;
  double timeMs; ///< max over ranks
};

/// Per-stage action durations accumulated over the measured steps (the
/// profile of the paper's profile-then-schedule loop, Section 3/Appendix).
struct StageProfile {
  // [stage][kind] for kind 0 = F, 1 = B, 2 = W.
  std::vector<double> sumMs, sumSqMs, count;
  std::vector<double> rank;      // rank that ran the stage (-1 unknown)
  std::vector<double> minRecvMs; // shortest receive by the stage's rank
  explicit StageProfile(int32_t numStages)
      : sumMs(3 * numStages, 0.0), sumSqMs(3 * numStages, 0.0),
        count(3 * numStages, 0.0),
        rank(numStages, -1.0), minRecvMs(numStages, 1e300) {}

  void add(const std::vector<zbrt::TraceEvent> &events, int32_t myRank) {
    double minRecv = 1e300;
    for (const zbrt::TraceEvent &e : events)
      if (e.kind == zbrt::EventKind::Recv && e.endUs >= 0)
        minRecv = std::min(minRecv, (e.endUs - e.beginUs) / 1000.0);
    int32_t numStages = (int32_t)rank.size();
    for (const zbrt::TraceEvent &e : events) {
      int k = (int)e.kind;
      if (k > 2 || e.endUs < 0 || e.stage < 0 || e.stage >= numStages)
        continue;
      double ms = (e.endUs - e.beginUs) / 1000.0;
      sumMs[3 * e.stage + k] += ms;
      sumSqMs[3 * e.stage + k] += ms * ms;
      count[3 * e.stage + k] += 1;
      rank[e.stage] = myRank;
      minRecvMs[e.stage] = std::min(minRecvMs[e.stage], minRecv);
    }
  }

  /// Mean duration (ms) of kind k (0 F, 1 B, 2 W) on `stage`; 0 if none.
  double meanMs(int32_t stage, int k) const {
    double n = count[3 * stage + k];
    return n > 0 ? sumMs[3 * stage + k] / n : 0.0;
  }
  /// Coefficient of variation (population) of those durations; 0 if none.
  double cv(int32_t stage, int k) const {
    double mean = meanMs(stage, k), n = count[3 * stage + k];
    if (n <= 0 || mean <= 0)
      return 0.0;
    double var = std::max(0.0, sumSqMs[3 * stage + k] / n - mean * mean);
    return std::sqrt(var) / mean;
  }
  /// The stage rank's shortest receive (ms), a latency estimate; 0 if none.
  double commMs(int32_t stage) const {
    return minRecvMs[stage] < 1e300 ? minRecvMs[stage] : 0.0;
  }

  /// Combines all ranks' accumulators on rank 0 (collective).
  void reduce() {
    int rankId = zbrt_rank();
    auto red = [&](std::vector<double> &v, MPI_Op op) {
      std::vector<double> out(v.size());
      MPI_Reduce(v.data(), out.data(), (int)v.size(), MPI_DOUBLE, op, 0,
                 MPI_COMM_WORLD);
      if (rankId == 0)
        v = out;
    };
    red(sumMs, MPI_SUM);
    red(sumSqMs, MPI_SUM);
    red(count, MPI_SUM);
    red(rank, MPI_MAX);
    red(minRecvMs, MPI_MIN);
  }

  /// {"format": "zb-profile", "version": 1, "plan": ..., "steps": S,
  ///  "stages": [{"stage", "rank", "t_f", "t_b", "t_w", "t_comm",
  ///              "cv_f", "cv_b", "cv_w", "count_f", "count_b",
  ///              "count_w"}]}, times in ms:
  /// t_x = mean duration of the stage's x actions, cv_x = their coefficient
  /// of variation (population standard deviation / mean, over every action
  /// of every measured step: the pass-to-pass jitter that
  /// zb::sched::estimateJitter turns into an expected bubble), t_comm = the
  /// shortest
  /// receive of the stage's rank (a latency estimate; 0 without receives).
  Error write(StringRef path, const Plan &plan, int64_t steps) const {
    std::error_code ec;
    raw_fd_ostream os(path, ec);
    if (ec)
      return makeError("--profile: cannot open '" + path +
                       "': " + ec.message());
    json::OStream j(os, 2);
    j.object([&] {
      j.attribute("format", "zb-profile");
      j.attribute("version", 1);
      j.attribute("plan", plan.path);
      j.attribute("steps", steps);
      j.attributeArray("stages", [&] {
        for (size_t s = 0; s < rank.size(); ++s)
          j.object([&] {
            j.attribute("stage", (int64_t)s);
            j.attribute("rank", (int64_t)rank[s]);
            const char *names[3] = {"t_f", "t_b", "t_w"};
            for (int k = 0; k < 3; ++k)
              j.attribute(names[k], meanMs((int32_t)s, k));
            j.attribute("t_comm", commMs((int32_t)s));
            const char *cvNames[3] = {"cv_f", "cv_b", "cv_w"};
            for (int k = 0; k < 3; ++k)
              j.attribute(cvNames[k], cv((int32_t)s, k));
            const char *counts[3] = {"count_f", "count_b", "count_w"};
            for (int k = 0; k < 3; ++k)
              j.attribute(counts[k], (int64_t)count[3 * s + k]);
          });
      });
    });
    os << "\n";
    return Error::success();
  }
};

/// The plan's schedule re-simulated at the costs measured in this run
/// (StageProfile means and coefficients of variation, T_comm = shortest
/// receive): separates what the machine did to the pass times (drift
/// between ranks, jitter) from what the runtime adds (communication,
/// synchronisation), which is realized minus this.
struct MeasuredPrediction {
  std::vector<double> rankBubbleRate;       ///< deterministic, mean costs
  std::vector<double> jitterRankBubbleRate; ///< estimateJitter
};

/// The plan's schedule as zb-compile planned it (DIR/schedule.json, the
/// "zb-schedule" JSON of include/zb/Schedule/Formats.h).
struct PlannedSchedule {
  zb::sched::Problem problem;
  zb::sched::Schedule schedule;
};

/// Reads DIR/schedule.json. Returns std::nullopt when it is missing (plans
/// written before it existed) or, with a note on stderr, does not match the
/// plan.
std::optional<PlannedSchedule> readPlannedSchedule(const Plan &plan) {
  SmallString<256> path(plan.dir);
  sys::path::append(path, "schedule.json");
  auto buffer = MemoryBuffer::getFile(path);
  if (!buffer)
    return std::nullopt;
  auto note = [&](const Twine &msg) {
    errs() << "zb-run: note: " << path << ": " << msg
           << " (no simulation of the measured run)\n";
    return std::nullopt;
  };
  PlannedSchedule ps;
  if (Error e =
          zb::sched::readJSON((*buffer)->getBuffer(), ps.problem, ps.schedule))
    return note(toString(std::move(e)));
  if ((int64_t)ps.schedule.stageToRank.size() != plan.numStages ||
      (int64_t)ps.schedule.perRank.size() != plan.numRanks)
    return note("does not match plan.json's stages and ranks");
  return ps;
}

/// Replay of one step: the schedule simulated with the step's measured
/// duration of every F/B/W action and T_comm = 0, so that realized minus
/// replayed is what the runtime adds (communication, synchronisation).
/// Returns the per-rank bubble rates, or an empty vector when an action of
/// the schedule is missing from the trace.
std::vector<double> replayStep(const PlannedSchedule &ps,
                               const std::vector<zbrt::TraceEvent> &events) {
  int numStages = (int)ps.schedule.stageToRank.size();
  int m = ps.problem.numMicrobatches;
  std::vector<double> dur(3 * (size_t)numStages * m, -1.0);
  for (const zbrt::TraceEvent &e : events) {
    int k = (int)e.kind;
    if (k > 2 || e.endUs < 0 || e.stage < 0 || e.stage >= numStages ||
        e.microbatch < 0 || e.microbatch >= m)
      continue;
    dur[((size_t)k * numStages + e.stage) * m + e.microbatch] =
        (e.endUs - e.beginUs) / 1000.0;
  }
  if (llvm::is_contained(dur, -1.0))
    return {};
  zb::sched::Problem problem = ps.problem;
  problem.costComm.assign(numStages, 0.0);
  zb::sched::SimOptions options;
  options.duration = [&](const zb::sched::Action &a) {
    return dur[((size_t)a.kind * numStages + a.stage) * m + a.microbatch];
  };
  zb::sched::SimResult sim = zb::sched::simulate(problem, ps.schedule, options);
  return sim.complete ? sim.rankBubbleRate : std::vector<double>{};
}

/// The schedule simulated at the costs measured in this run (StageProfile
/// means and coefficients of variation, T_comm = shortest receive).
std::optional<MeasuredPrediction>
predictAtMeasuredCosts(const Plan &plan, const PlannedSchedule &ps,
                       const StageProfile &profile) {
  auto note = [&](const Twine &msg) {
    errs() << "zb-run: note: " << msg
           << " (no prediction at the measured costs)\n";
    return std::nullopt;
  };
  zb::sched::Problem problem = ps.problem;
  const zb::sched::Schedule &schedule = ps.schedule;
  problem.costF.assign(plan.numStages, 0.0);
  problem.costB = problem.costW = problem.costComm = problem.costF;
  problem.cvF = problem.cvB = problem.cvW = problem.costF;
  for (int32_t st = 0; st < plan.numStages; ++st) {
    if (profile.count[3 * st] == 0)
      return note(formatv("stage {0} ran no traced action", st).str());
    problem.costF[st] = profile.meanMs(st, 0);
    problem.costB[st] = profile.meanMs(st, 1);
    problem.costW[st] = profile.meanMs(st, 2);
    problem.costComm[st] = profile.commMs(st);
    problem.cvF[st] = profile.cv(st, 0);
    problem.cvB[st] = profile.cv(st, 1);
    problem.cvW[st] = profile.cv(st, 2);
  }
  MeasuredPrediction out;
  zb::sched::SimResult sim = zb::sched::simulate(problem, schedule);
  if (!sim.complete)
    return note("the schedule cannot be simulated");
  out.rankBubbleRate = sim.rankBubbleRate;
  auto est = zb::sched::estimateJitter(problem, schedule);
  if (!est)
    return note(toString(est.takeError()));
  out.jitterRankBubbleRate = est->rankBubbleRate;
  return out;
}

/// --save-params: rank 0 creates FILE (the size of params.bin), then every
/// rank in turn writes its parameters at their offsets (collective).
void saveFinalParams(const RankState &st, const Plan &plan, StringRef path) {
  int64_t size = 0;
  for (const ParamInfo &p : plan.params)
    size = std::max(size, p.offsetBytes + 4 * p.numElements());
  int ok = 1;
  if (zbrt_rank() == 0) {
    FILE *f = std::fopen(path.str().c_str(), "wb");
    ok = f && (size == 0 || (std::fseek(f, size - 1, SEEK_SET) == 0 &&
                             std::fputc(0, f) != EOF));
    if (f)
      ok = (std::fclose(f) == 0) && ok;
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!ok)
    agreeOrExit(makeError("--save-params: cannot write '" + path + "'"));
  for (int32_t r = 0; r < zbrt_world_size(); ++r) {
    if (r == zbrt_rank()) {
      FILE *f = std::fopen(path.str().c_str(), "r+b");
      for (const auto &[index, buf] : st.params)
        if (f && std::fseek(f, plan.params[index].offsetBytes, SEEK_SET) == 0)
          std::fwrite(buf.data(), 4, (size_t)buf.size(), f);
      if (f)
        std::fclose(f);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

void printGradientReport(double loss, const Plan &plan,
                         const std::vector<double> &norms) {
  if (reportFormat == ReportFormat::Json) {
    json::OStream j(outs(), 2);
    j.object([&] {
      j.attribute("loss", loss);
      j.attributeObject("grad_norm", [&] {
        for (size_t i = 0; i < plan.params.size(); ++i)
          j.attribute(plan.params[i].name, norms[i]);
      });
    });
    outs() << "\n";
  } else {
    outs() << "loss " << format("%.9g", loss) << "\n";
    for (size_t i = 0; i < plan.params.size(); ++i)
      outs() << "grad_norm " << plan.params[i].name << " "
             << format("%.9g", norms[i]) << "\n";
  }
  outs().flush();
}

} // namespace

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(runCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "zb-run: run a zb-compile output directory on MPI ranks\n\n"
      "  zb-run DIR --ranks N          launches mpirun -np N zb-run DIR\n"
      "  mpirun -np N zb-run DIR       runs inside an existing MPI job\n");

  if (numSteps < 1)
    exitWithError("--steps must be >= 1");
  if (printEvery < 1)
    exitWithError("--print-every must be >= 1");
  if (numRanksOpt.getNumOccurrences() && numRanksOpt < 1)
    exitWithError("--ranks must be >= 1");
  const int64_t steps = reportGradients ? 1 : numSteps;

  Expected<Plan> planOrErr = loadPlan(planDir);
  const bool inMPI = insideMPIJob();
  if (!inMPI) {
    // Launcher: validate everything, then run directly or under mpirun.
    if (!planOrErr)
      exitWithError(toString(planOrErr.takeError()));
    if (Error e = backendError())
      exitWithError(toString(std::move(e)));
    const Plan &plan = *planOrErr;
    if (numRanksOpt.getNumOccurrences() && numRanksOpt != plan.numRanks)
      exitWithError(formatv("--ranks {0}, but {1} needs num_ranks = {2}",
                            (int)numRanksOpt, plan.path, plan.numRanks));
    if (!numRanksOpt.getNumOccurrences() && plan.numRanks != 1)
      exitWithError(formatv("{0} needs {1} ranks: run `zb-run {2} --ranks "
                            "{1}` or `mpirun -np {1} zb-run {2}`",
                            plan.path, plan.numRanks, planDir));
    validateAllRanks(plan);
    if (deterministic) {
      setenv("OPENBLAS_NUM_THREADS", "1", 1);
      setenv("OMP_NUM_THREADS", "1", 1);
    }
    if (plan.numRanks > 1)
      return runUnderMpirun(argc, argv, plan.numRanks);
    setenv("OPENBLAS_NUM_THREADS", "1", 0);
    // One rank: run in this process (an MPI singleton).
  }

  int32_t worldSize = 0;
  const int32_t rank = zbrt_init(&argc, &argv, &worldSize);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL})
    signal(sig, fatalSignalHandler);

  // Setup: any failure on any rank ends every rank cleanly.
  if (!planOrErr)
    agreeOrExit(planOrErr.takeError());
  agreeOrExit(Error::success());
  const Plan &plan = *planOrErr;
  if (inMPI && numRanksOpt.getNumOccurrences() && numRanksOpt != worldSize)
    agreeOrExit(makeError(formatv("--ranks {0}, but this MPI job has {1} "
                                  "ranks",
                                  (int)numRanksOpt, worldSize)));
  if (worldSize != plan.numRanks)
    agreeOrExit(makeError(formatv("{0} needs num_ranks = {1}, but this MPI "
                                  "job has {2} ranks (mpirun -np {1})",
                                  plan.path, plan.numRanks, worldSize)));
  agreeOrExit(backendError());
  auto stOrErr = setupRank(plan, rank, /*forRun=*/true);
  if (!stOrErr)
    agreeOrExit(stOrErr.takeError());
  agreeOrExit(Error::success());
  RankState &st = **stOrErr;

  OptimizerInfo opt = plan.optimizer;
  if (lrOpt.getNumOccurrences())
    opt.lr = lrOpt;

  const bool json = reportFormat == ReportFormat::Json;
  std::vector<StepResult> results;
  std::vector<double> bubbleTotal(worldSize, 0.0);
  std::vector<int64_t> bubbleSteps(worldSize, 0);
  std::vector<StepSample> samples(rank == 0 ? worldSize : 0);
  bool haveTrace = false;
  StageProfile profile(plan.numStages);
  // Peak bytes of the memory pool (the generated code's heap buffers:
  // activations, stashes, temporaries) over all steps, per rank.
  int64_t myPeakHeap = 0;
  std::vector<int64_t> peakHeap(worldSize, 0);
  // Replay of every measured step (rank 0; needs the trace of all ranks).
  std::optional<PlannedSchedule> planned =
      rank == 0 ? readPlannedSchedule(plan) : std::nullopt;
  int replayWanted = planned ? 1 : 0;
  MPI_Bcast(&replayWanted, 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<double> replayTotal(worldSize, 0.0);
  int64_t replaySteps = 0;

  if (rank == 0 && st.text) {
    (json ? errs() : outs()) << describeText(*st.text) << "\n";
    outs().flush();
    if (!saveParams.empty() && textVocab == TextVocab::Chars)
      if (Error e = writeVocabularyJson(*st.text, saveParams + ".vocab.json"))
        zbrt_fatal(toString(std::move(e)).c_str());
  }

  for (int64_t step = 0; step < steps; ++step) {
    fillInputs(st, step);
    if (step == 0 && rank == 0 && !dumpBatch.empty()) {
      std::vector<BatchInput> ins;
      for (auto &[index, buf] : st.inputs)
        ins.push_back({&plan.inputs[index], buf.bytes()});
      if (Error e = writeBatchJson(
              dumpBatch, 1, plan.numMicrobatches * plan.microbatchSize, ins))
        zbrt_fatal(toString(std::move(e)).c_str());
    }
    for (auto &[index, g] : st.grads)
      g.zero();
    st.loss.zero();

    zbrt_pool_reset_counters();
    MPI_Barrier(MPI_COMM_WORLD);
    zbrt::traceBeginStep();
    double t0 = nowMs();
    st.entry(st.argv.data());
    zbrt_step_end();
    if (!reportGradients)
      applyOptimizer(st, opt, step);
    double t1 = nowMs();

    zbrt::BubbleStats bubble = zbrt::computeBubble(zbrt::traceEvents(), rank);
    ZbrtPoolStats pool;
    zbrt_pool_stats(&pool);
    myPeakHeap = std::max(myPeakHeap, pool.peakBytesInUse);
    StepSample mine{st.hasLoss ? (double)st.loss.data()[0] : 0.0,
                    st.hasLoss ? 1.0 : 0.0, t1 - t0, bubble.bubbleRate,
                    (double)bubble.numActions};
    static_assert(sizeof(StepSample) == 5 * sizeof(double), "packed");
    MPI_Gather(&mine, 5, MPI_DOUBLE, samples.data(), 5, MPI_DOUBLE, 0,
               MPI_COMM_WORLD);

    const bool lastStep = step + 1 == steps;
    const bool measured = steps == 1 || step > 0;
    if (measured)
      profile.add(zbrt::traceEvents(), rank);
    // All ranks' events on rank 0 (one collective), for the replay of every
    // measured step and the --trace file of the last one.
    const bool replayThis = replayWanted && measured;
    const bool traceThis = lastStep && !traceFile.empty();
    if (replayThis || traceThis) {
      std::vector<zbrt::TraceEvent> all =
          zbrt::gatherTrace(zbrt::traceEvents(), 0);
      if (rank == 0 && replayThis) {
        std::vector<double> b = replayStep(*planned, all);
        if (b.size() == (size_t)worldSize) {
          for (int32_t r = 0; r < worldSize; ++r)
            replayTotal[r] += b[r];
          ++replaySteps;
        }
      }
      if (rank == 0 && traceThis) {
        std::string err;
        if (!zbrt::writeChromeTraceFile(traceFile, all, worldSize, step + 1,
                                        &err))
          zbrt_fatal(("--trace: " + err).c_str());
        haveTrace = true;
      }
    }

    if (rank != 0)
      continue;
    StepResult res{step + 1, 0.0, 0.0};
    for (const StepSample &s : samples) {
      if (s.hasLoss != 0)
        res.loss = s.loss / (double)plan.numMicrobatches;
      res.timeMs = std::max(res.timeMs, s.timeMs);
    }
    results.push_back(res);
    // Realized bubble: mean over the measured steps (step 1 warms up caches
    // and MPI connections and is left out when there is more than one step).
    if (measured)
      for (int32_t r = 0; r < worldSize; ++r)
        if (samples[r].numActions > 0) {
          bubbleTotal[r] += samples[r].bubble;
          ++bubbleSteps[r];
        }
    if (!json && !reportGradients &&
        (step == 0 || lastStep || (step + 1) % printEvery == 0)) {
      std::printf("step %3lld  loss %.6f  time %.2f ms\n",
                  (long long)(step + 1), res.loss, res.timeMs);
      std::fflush(stdout);
    }
  }

  // Gradient report: L2 norm of grad / num_microbatches per parameter.
  if (reportGradients) {
    std::vector<double> sq(plan.params.size(), 0.0), total(plan.params.size());
    const double scale = 1.0 / (double)plan.numMicrobatches;
    for (auto &[index, g] : st.grads) {
      // A tied parameter has a bit-identical summed gradient on every rank
      // holding a copy: count it once, on the rank of its first copy.
      if (plan.params[index].rank != rank)
        continue;
      double s = 0;
      for (int64_t i = 0; i < g.size(); ++i) {
        double v = (double)g.data()[i] * scale;
        s += v * v;
      }
      sq[index] = s;
    }
    MPI_Reduce(sq.data(), total.data(), (int)sq.size(), MPI_DOUBLE, MPI_SUM, 0,
               MPI_COMM_WORLD);
    if (rank == 0) {
      for (double &t : total)
        t = std::sqrt(t);
      printGradientReport(results.back().loss, plan, total);
    }
    zbrt_finalize();
    return 0;
  }

  if (!saveParams.empty())
    saveFinalParams(st, plan, saveParams);

  MPI_Gather(&myPeakHeap, 1, MPI_INT64_T, peakHeap.data(), 1, MPI_INT64_T, 0,
             MPI_COMM_WORLD);

  bool haveProfile = false;
  profile.reduce();
  std::optional<MeasuredPrediction> atMeasured;
  if (rank == 0 && planned)
    atMeasured = predictAtMeasuredCosts(plan, *planned, profile);
  if (!profileFile.empty()) {
    if (rank == 0) {
      if (Error e = profile.write(profileFile, plan, steps))
        zbrt_fatal(toString(std::move(e)).c_str());
      haveProfile = true;
    }
  }

  if (rank == 0) {
    double meanMs = 0;
    int64_t counted = 0;
    for (const StepResult &r : results)
      if (results.size() == 1 || r.step > 1) {
        meanMs += r.timeMs;
        ++counted;
      }
    meanMs /= std::max<int64_t>(counted, 1);
    std::string stepsRange =
        results.size() == 1 ? "step 1" : formatv("steps 2-{0}", steps).str();

    if (json) {
      json::OStream j(outs(), 2);
      j.object([&] {
        j.attribute("plan", plan.path);
        j.attribute("schedule", plan.schedule);
        j.attribute("num_ranks", plan.numRanks);
        j.attribute("num_stages", plan.numStages);
        j.attribute("num_microbatches", plan.numMicrobatches);
        j.attributeArray("steps", [&] {
          for (const StepResult &r : results)
            j.object([&] {
              j.attribute("step", r.step);
              j.attribute("loss", r.loss);
              j.attribute("time_ms", r.timeMs);
            });
        });
        j.attributeObject("predicted", [&] {
          for (const PredictedInfo &p : plan.predicted)
            j.attributeObject(p.schedule, [&] {
              j.attribute("bubble_rate", p.bubbleRate);
              if (p.makespanMs >= 0)
                j.attribute("makespan_ms", p.makespanMs);
              if (!p.rankBubbleRate.empty())
                j.attribute("rank_bubble_rate",
                            json::Array(p.rankBubbleRate));
              if (p.jitterBubbleRate >= 0)
                j.attributeObject("jitter", [&] {
                  j.attribute("bubble_rate", p.jitterBubbleRate);
                  j.attribute("rank_bubble_rate",
                              json::Array(p.jitterRankBubbleRate));
                });
            });
        });
        j.attribute("mean_step_time_ms", meanMs);
        if (replaySteps)
          j.attributeArray("replayed_bubble_rate", [&] {
            for (int32_t r = 0; r < worldSize; ++r)
              j.value(replayTotal[r] / replaySteps);
          });
        if (atMeasured)
          j.attributeObject("at_measured_costs", [&] {
            j.attribute("rank_bubble_rate",
                        json::Array(atMeasured->rankBubbleRate));
            j.attribute("jitter_rank_bubble_rate",
                        json::Array(atMeasured->jitterRankBubbleRate));
          });
        j.attributeArray("peak_heap_bytes", [&] {
          for (int32_t r = 0; r < worldSize; ++r)
            j.value(peakHeap[r]);
        });
        j.attributeArray("realized_bubble_rate", [&] {
          for (int32_t r = 0; r < worldSize; ++r)
            if (bubbleSteps[r])
              j.value(bubbleTotal[r] / bubbleSteps[r]);
            else
              j.value(nullptr);
        });
        if (haveTrace)
          j.attribute("trace", traceFile);
        if (haveProfile)
          j.attribute("profile", profileFile);
      });
      outs() << "\n";
      outs().flush();
    } else {
      std::printf("schedule %s: %d rank%s, %d stage%s, %lld microbatches of "
                  "%lld\n",
                  plan.schedule.empty() ? "?" : plan.schedule.c_str(),
                  plan.numRanks, plan.numRanks == 1 ? "" : "s", plan.numStages,
                  plan.numStages == 1 ? "" : "s",
                  (long long)plan.numMicrobatches,
                  (long long)plan.microbatchSize);
      size_t width = 0;
      for (const PredictedInfo &p : plan.predicted)
        width = std::max(width, p.schedule.size());
      for (const PredictedInfo &p : plan.predicted) {
        std::printf("predicted bubble rate  %-*s  %.4f", (int)width,
                    p.schedule.c_str(), p.bubbleRate);
        if (p.makespanMs >= 0)
          std::printf("  (makespan %.3f ms)", p.makespanMs);
        std::printf("%s\n",
                    p.schedule == plan.schedule ? "  <- this plan" : "");
      }
      std::printf("realized mean step time %.2f ms (%s)\n", meanMs,
                  stepsRange.c_str());
      // Per rank, next to the realized bubble: this plan's simulated bubble
      // of that rank, and (with a profile) its expectation under the
      // measured pass-time jitter.
      const PredictedInfo *mine = nullptr;
      for (const PredictedInfo &p : plan.predicted)
        if (p.schedule == plan.schedule)
          mine = &p;
      for (int32_t r = 0; r < worldSize; ++r) {
        if (!bubbleSteps[r])
          continue;
        std::printf("realized bubble rate  rank %d  %.4f (mean over %s)", r,
                    bubbleTotal[r] / bubbleSteps[r], stepsRange.c_str());
        if (mine && (size_t)r < mine->rankBubbleRate.size())
          std::printf("  predicted %.4f", mine->rankBubbleRate[r]);
        if (mine && (size_t)r < mine->jitterRankBubbleRate.size())
          std::printf(", with measured jitter %.4f",
                      mine->jitterRankBubbleRate[r]);
        std::printf("\n");
      }
      if (replaySteps) {
        std::printf("this plan replayed with this run's pass times (T_comm = "
                    "0, mean over %lld steps): bubble rate per rank",
                    (long long)replaySteps);
        for (int32_t r = 0; r < worldSize; ++r)
          std::printf(" %.4f", replayTotal[r] / replaySteps);
        std::printf("\n");
      }
      if (atMeasured) {
        std::printf("this plan at this run's mean pass times (%s): bubble "
                    "rate per rank",
                    stepsRange.c_str());
        for (double b : atMeasured->rankBubbleRate)
          std::printf(" %.4f", b);
        std::printf(", with this run's jitter");
        for (double b : atMeasured->jitterRankBubbleRate)
          std::printf(" %.4f", b);
        std::printf("\n");
      }
      std::printf("peak heap per rank (memory pool, bytes):");
      for (int32_t r = 0; r < worldSize; ++r)
        std::printf(" %lld", (long long)peakHeap[r]);
      std::printf("\n");
      if (haveTrace)
        std::printf("trace of step %lld written to %s\n", (long long)steps,
                    traceFile.c_str());
      if (haveProfile)
        std::printf("measured stage costs (%s) written to %s\n",
                    stepsRange.c_str(), profileFile.c_str());
      std::fflush(stdout);
    }
  }
  zbrt_finalize();
  return 0;
}
