//===- zb-run.cpp - Host driver for compiled zb pipeline programs ---------===//
//
//   zb-run DIR [--ranks N] [--steps S] [--data DIR] [--lr F] [--trace FILE]
//              [--profile FILE] [--backend auto|cpu|cuda] [--print-every K]
//              [--cuda-graphs on|off]
//              [--report-gradients] [--report-format text|json]
//              [--text-vocab bytes|chars] [--dump-batch FILE] [--grad-clip NORM]
//              [--optimizer-sync post-validation|all-reduce]
//              [--nonfinite skip|stop|ignore] [--inject-nan STEP:RANK]
//              [--lr-schedule constant|cosine|linear] [--warmup-steps N]
//              [--decay-steps N] [--min-lr F] [--weight-decay F]
//              [--betas B1,B2] [--eps F] [--no-decay SPEC]
//              [--data-dtype uint16|uint32] [--val-data FILE|DIR]
//              [--val-split F] [--eval-every N] [--eval-steps K]
//              [--metrics FILE.jsonl] [--config FILE.toml|FILE.json]
//
// DIR is a zb-compile output directory (plan.json, params.bin, rank<R>.so;
// docs/plan-json.md). Outside an MPI job, `--ranks N` runs zb-run under
// `mpirun -np N`; inside one, each process runs its rank: it loads its rank
// program, feeds it the step's samples, calls it once per training step,
// applies the optimizer to its parameters, and rank 0 reports loss and time
// per step, then the predicted (plan.json) and realized bubble rates.
// Option parsing only: the runner is lib/Runner (zb/Runner/Runner.h).
//
//===----------------------------------------------------------------------===//

#include "zb/Runner/Config.h"
#include "zb/Runner/Runner.h"

#include "llvm/Support/CommandLine.h"

#include <cmath>
#include <tuple>

using namespace llvm;
using namespace zb::runner;

namespace {

RunOptions opts;
std::string configPath;
cl::OptionCategory runCategory("zb-run options");

cl::opt<std::string, true> planDir(cl::Positional, cl::Required,
                                   cl::desc("<zb-compile output directory>"),
                                   cl::location(opts.planDir),
                                   cl::cat(runCategory));
cl::opt<int, true> numRanks(
    "ranks",
    cl::desc("Number of ranks: launches `mpirun -np N` unless already inside "
             "an MPI job (must equal D x plan.json num_ranks, D the "
             "data-parallel pipelines)"),
    cl::value_desc("N"), cl::location(opts.numRanks), cl::init(0),
    cl::cat(runCategory));
cl::opt<int, true> dataParallel(
    "data-parallel",
    cl::desc("D: copies of the pipeline, each on its share of the step's "
             "batch, gradients all-reduced across them (default: plan.json "
             "data_parallel, from zb-compile --data-parallel). Pipeline d "
             "runs on ranks d*P .. d*P+P-1 and takes microbatches d*m .. "
             "d*m+m-1 of the step's D*m"),
    cl::value_desc("D"), cl::location(opts.dataParallel), cl::init(0),
    cl::cat(runCategory));
cl::opt<std::string, true> hosts(
    "hosts",
    cl::desc("With --ranks: the nodes of the job, passed to mpirun as "
             "--host LIST; NAME[:SLOTS] entries separated by commas, their "
             "slots adding up to the ranks, filled in order (node1:8,node2:8 "
             "runs ranks 0-7 on node1). Open MPI starts the other nodes' "
             "processes through ssh (or OMPI_MCA_plm_rsh_agent; "
             "docs/training.md, \"Across nodes\")"),
    cl::value_desc("LIST"), cl::location(opts.hosts), cl::cat(runCategory));
cl::opt<int, true> numSteps("steps", cl::desc("Training steps (default 20)"),
                            cl::value_desc("S"), cl::location(opts.steps),
                            cl::init(20), cl::cat(runCategory));
cl::opt<std::string, true>
    dataDir("data",
            cl::desc("Training data: a directory with input_<i>.pb, a token "
                     "file (FILE.bin: uint16 ids as nanoGPT's train.bin, or "
                     "llm.c's format; FILE.npy; docs/training.md), or a text "
                     "file whose bytes or characters (--text-vocab) are "
                     "tokens (inputs 0 and 1 = tokens and targets, shifted "
                     "by one; docs/plan-json.md). "
                     "Default: plan.json \"data\""),
            cl::value_desc("DIR|FILE"), cl::location(opts.data.data),
            cl::cat(runCategory));
cl::opt<TextVocab, true> textVocab(
    "text-vocab",
    cl::desc("Tokens of --data FILE (text): bytes, or the file's UTF-8 "
             "characters numbered in the sorted order of its distinct code "
             "points (the model's vocabulary must cover them)"),
    cl::values(clEnumValN(TextVocab::Bytes, "bytes",
                          "one token per byte, vocabulary 256 (default)"),
               clEnumValN(TextVocab::Chars, "chars",
                          "one token per character; --save-params FILE also "
                          "writes FILE.vocab.json (the characters)")),
    cl::location(opts.data.textVocab), cl::init(TextVocab::Bytes),
    cl::cat(runCategory));
cl::opt<std::string, true> dumpBatch(
    "dump-batch",
    cl::desc("Write the inputs rank 0 feeds its program in step 1 as JSON "
             "({\"step\": 1, \"inputs\": {NAME: [[sample]...]}})"),
    cl::value_desc("FILE"), cl::location(opts.dumpBatch), cl::cat(runCategory));
cl::opt<std::string, true>
    inputsDir("inputs",
              cl::desc("Directory with input_<i>.pb (the same as --data DIR)"),
              cl::value_desc("DIR"), cl::location(opts.data.inputs),
              cl::cat(runCategory));
cl::opt<uint64_t, true>
    seed("seed",
         cl::desc("Seed of the text batches (--data FILE.txt); default 0"),
         cl::value_desc("K"), cl::location(opts.data.seed), cl::init(0),
         cl::cat(runCategory));
cl::opt<bool, true> deterministic(
    "deterministic",
    cl::desc("Fix everything that could vary between runs: one BLAS/OpenMP "
             "thread per rank, reports reduced in rank order (the data order "
             "and gradient sums are fixed anyway)"),
    cl::location(opts.deterministic), cl::init(false), cl::cat(runCategory));
cl::opt<TokenDType, true> dataDType(
    "data-dtype", cl::desc("Token ids of a raw token file (--data FILE.bin)"),
    cl::values(clEnumValN(TokenDType::UInt16, "uint16",
                          "2 bytes per id, nanoGPT's train.bin (default)"),
               clEnumValN(TokenDType::UInt32, "uint32",
                          "4 bytes per id (vocabularies over 65536)")),
    cl::location(opts.data.dataDType), cl::init(TokenDType::UInt16),
    cl::cat(runCategory));
cl::opt<int64_t, true> targetShift(
    "target-shift",
    cl::desc("Text and token data: the targets (input 1) are the tokens N "
             "places after input 0's: 1 (default) for models that compare "
             "logits with the given targets (nanoGPT, llm.c); 0 for Hugging "
             "Face causal LMs, whose graph shifts labels = input_ids itself"),
    cl::value_desc("0|1"), cl::location(opts.data.targetShift), cl::init(1),
    cl::cat(runCategory));
cl::opt<std::string, true> configFile(
    "config",
    cl::desc("Read settings from a TOML (or .json) file: its keys are these "
             "flags' names; flags on the command line win"),
    cl::value_desc("FILE"), cl::location(configPath), cl::cat(runCategory));
cl::opt<std::string, true> metricsFile(
    "metrics",
    cl::desc("Write one JSON line per step (step, loss, lr, grad_norm, "
             "tokens_per_s, time_ms, skipped) and per evaluation (step, "
             "val_loss) to FILE; appended to when resuming"),
    cl::value_desc("FILE"), cl::location(opts.metricsFile),
    cl::cat(runCategory));

cl::OptionCategory optimizerCategory(
    "Optimizer and learning-rate schedule (over plan.json's optimizer; a "
    "resumed checkpoint's settings continue unless given)");
cl::opt<double> lr("lr",
                   cl::desc("Base (peak) learning rate (overrides plan.json "
                            "optimizer)"),
                   cl::value_desc("F"), cl::init(0.0),
                   cl::cat(optimizerCategory));
cl::opt<zb::formats::LrScheduleKind> lrSchedule(
    "lr-schedule", cl::desc("The learning rate after the warmup"),
    cl::values(clEnumValN(zb::formats::LrScheduleKind::Constant, "constant",
                          "the base lr (default)"),
               clEnumValN(zb::formats::LrScheduleKind::Cosine, "cosine",
                          "half a cosine down to --min-lr at --decay-steps"),
               clEnumValN(zb::formats::LrScheduleKind::Linear, "linear",
                          "a straight line down to --min-lr at "
                          "--decay-steps")),
    cl::cat(optimizerCategory));
cl::opt<int64_t> warmupSteps(
    "warmup-steps",
    cl::desc("Linear warmup: step s <= N trains with lr * s / N (default 0)"),
    cl::value_desc("N"), cl::cat(optimizerCategory));
cl::opt<int64_t> decaySteps(
    "decay-steps",
    cl::desc("The step at which cosine and linear decay reach --min-lr "
             "(default: the run's last step; give it for a run you will "
             "resume)"),
    cl::value_desc("N"), cl::cat(optimizerCategory));
cl::opt<double> minLr("min-lr",
                      cl::desc("The floor of the decay (default 0)"),
                      cl::value_desc("F"), cl::cat(optimizerCategory));
cl::opt<double> weightDecay(
    "weight-decay",
    cl::desc("AdamW's decoupled weight decay (default: plan.json's)"),
    cl::value_desc("F"), cl::cat(optimizerCategory));
cl::opt<std::string> betas("betas",
                           cl::desc("AdamW's beta1,beta2 (default: "
                                    "plan.json's, e.g. 0.9,0.999)"),
                           cl::value_desc("B1,B2"),
                           cl::cat(optimizerCategory));
cl::opt<double> eps("eps", cl::desc("AdamW's epsilon (default: plan.json's)"),
                    cl::value_desc("F"), cl::cat(optimizerCategory));
cl::opt<std::string> noDecay(
    "no-decay",
    cl::desc("Parameters AdamW does not decay: a comma list of 1d "
             "(biases, norm scales), embeddings (names *emb*, *wte*, *wpe*) "
             "and name globs; '' decays all (default 1d,embeddings)"),
    cl::value_desc("SPEC"), cl::cat(optimizerCategory));

cl::OptionCategory evalCategory("Evaluation");
cl::opt<std::string, true> valData(
    "val-data",
    cl::desc("Validation data, in the form of --data (a token or text file, "
             "or a directory of input_<i>.pb)"),
    cl::value_desc("FILE|DIR"), cl::location(opts.data.valData),
    cl::cat(evalCategory));
cl::opt<double, true> valSplit(
    "val-split",
    cl::desc("Validate on the last fraction F of the --data file and train "
             "on the rest"),
    cl::value_desc("F"), cl::location(opts.data.valSplit), cl::init(0.0),
    cl::cat(evalCategory));
cl::opt<int64_t, true> evalEvery(
    "eval-every",
    cl::desc("Every N steps and after the last: the mean loss over "
             "--eval-steps validation batches (no optimizer step)"),
    cl::value_desc("N"), cl::location(opts.evalEvery), cl::init(0),
    cl::cat(evalCategory));
cl::opt<int64_t, true> evalSteps(
    "eval-steps",
    cl::desc("Validation batches per evaluation (default 10; the same "
             "batches every time)"),
    cl::value_desc("K"), cl::location(opts.evalSteps), cl::init(10),
    cl::cat(evalCategory));
cl::opt<std::string, true> traceFile(
    "trace", cl::desc("Write a Chrome/Perfetto trace of the last step"),
    cl::value_desc("FILE"), cl::location(opts.traceFile), cl::cat(runCategory));
cl::opt<std::string, true> profileFile(
    "profile",
    cl::desc("Write measured per-stage costs (T_F, T_B, T_W, T_comm in ms; "
             "mean over steps 2..S) as JSON, for zb-compile --profile"),
    cl::value_desc("FILE"), cl::location(opts.profileFile),
    cl::cat(runCategory));
cl::opt<Backend, true> backend(
    "backend", cl::desc("Execution backend"),
    cl::values(clEnumValN(Backend::Auto, "auto",
                          "The plan's target: cuda for --target cuda plans, "
                          "else cpu (default)"),
               clEnumValN(Backend::Cpu, "cpu", "CPU: MPI + OpenBLAS"),
               clEnumValN(Backend::Cuda, "cuda",
                          "CUDA: one device per rank (local rank), kernels "
                          "and cuBLAS GEMMs on a compute stream, NCCL "
                          "messages on their own streams; needs a GPU, its "
                          "driver and a --target cuda plan (a cuda-emu plan "
                          "runs its kernels on the host)")),
    cl::location(opts.backend), cl::init(Backend::Auto), cl::cat(runCategory));
enum class Toggle { Off, On };
cl::opt<Toggle> cudaGraphs(
    "cuda-graphs",
    cl::desc("CUDA backend: capture the second step's kernels and GEMMs as "
             "CUDA graphs and replay them in later steps (default on; the "
             "report's cuda.graphs says whether they ran and why not)"),
    cl::values(clEnumValN(Toggle::On, "on", "Replay steps as CUDA graphs"),
               clEnumValN(Toggle::Off, "off",
                          "Launch every kernel and GEMM from the host")),
    cl::init(Toggle::On), cl::cat(runCategory));
cl::opt<int, true>
    printEvery("print-every",
               cl::desc("Print the loss every K steps (default 1)"),
               cl::value_desc("K"), cl::location(opts.printEvery), cl::init(1),
               cl::cat(runCategory));
cl::opt<std::string, true> checkpointDir(
    "checkpoint",
    cl::desc("Write checkpoints (parameters, AdamW moments and step, data "
             "position, seed) to DIR/step-<S>, atomically, after the last "
             "step and every --checkpoint-every steps; the two newest stay. "
             "Rank 0 writes them (the other ranks send it their tensors); "
             "--resume reads them on every rank, like the plan directory"),
    cl::value_desc("DIR"), cl::location(opts.checkpointDir), cl::init(""),
    cl::cat(runCategory));
cl::opt<int64_t, true> checkpointEvery(
    "checkpoint-every",
    cl::desc("With --checkpoint: also after every N steps (0: only at the "
             "end)"),
    cl::value_desc("N"), cl::location(opts.checkpointEvery), cl::init(0),
    cl::cat(runCategory));
cl::opt<std::string, true> resumeDir(
    "resume",
    cl::desc("Continue from a checkpoint (a --checkpoint DIR: its newest, or "
             "one DIR/step-<S>): --steps more steps, numbered from S+1, "
             "bit-identical to an uninterrupted run"),
    cl::value_desc("DIR"), cl::location(opts.resumeDir), cl::init(""),
    cl::cat(runCategory));
cl::opt<double, true> commTimeout(
    "comm-timeout",
    cl::desc("End the job when a rank has waited this many seconds for a "
             "message or the other ranks (a stopped, dead or deadlocked "
             "peer), naming the rank, the message and the peer; 0 waits "
             "forever (default 300)"),
    cl::value_desc("SECONDS"), cl::location(opts.commTimeoutSeconds),
    cl::init(300), cl::cat(runCategory));
cl::opt<bool, true> overlapSteps(
    "overlap-steps",
    cl::desc("Start each rank's next step as soon as its own optimizer step "
             "is done, as a training loop does (no barrier between steps; "
             "the step lines print at the end; no --trace or replay): the "
             "report adds the wall-clock time per step, where iterations "
             "overlap and an --optimizer-sync all-reduce costs what the "
             "paper measures"),
    cl::location(opts.overlapSteps), cl::init(false), cl::cat(runCategory));
cl::opt<bool, true> reportGradients(
    "report-gradients",
    cl::desc("Evaluate one step without an optimizer step; print the loss "
             "and the L2 norm of every parameter's (mean) gradient"),
    cl::location(opts.reportGradients), cl::init(false), cl::cat(runCategory));
cl::opt<std::string, true> saveParams(
    "save-params",
    cl::desc("After training, write every parameter's final value to FILE "
             "in the params.bin layout (float32 at plan.json offset_bytes), "
             "or as safetensors where FILE ends in .safetensors, "
             "written by rank 0 (no shared file system needed)"),
    cl::value_desc("FILE"), cl::location(opts.saveParams),
    cl::cat(runCategory));
cl::opt<ReportFormat, true> reportFormat(
    "report-format", cl::desc("Output format"),
    cl::values(clEnumValN(ReportFormat::Text, "text", "human-readable lines"),
               clEnumValN(ReportFormat::Json, "json",
                          "one JSON document on stdout at the end")),
    cl::location(opts.reportFormat), cl::init(ReportFormat::Text),
    cl::cat(runCategory));

cl::OptionCategory syncCategory(
    "Gradient clipping and non-finite gradients (Zero Bubble paper, "
    "Section 4)");
cl::opt<double, true> gradClip(
    "grad-clip",
    cl::desc("Clip the global L2 norm of the mean gradient (all parameters "
             "of all ranks, tied copies once) to NORM; 0 = off"),
    cl::value_desc("NORM"), cl::location(opts.gradSync.clipNorm),
    cl::init(0.0), cl::cat(syncCategory));
cl::opt<OptimizerSync, true> optimizerSync(
    "optimizer-sync",
    cl::desc("How the ranks agree on the norm and the finite flag"),
    cl::values(clEnumValN(OptimizerSync::PostValidation, "post-validation",
                          "step eagerly, validate with the reduced state "
                          "before the next step, roll back in place when "
                          "needed (default)"),
               clEnumValN(OptimizerSync::AllReduce, "all-reduce",
                          "wait for the reduced state, then step")),
    cl::location(opts.gradSync.sync), cl::init(OptimizerSync::PostValidation),
    cl::cat(syncCategory));
cl::opt<NonFinite, true> nonFinite(
    "nonfinite", cl::desc("A NaN or Inf in a gradient"),
    cl::values(clEnumValN(NonFinite::Skip, "skip",
                          "skip the step, report it (default)"),
               clEnumValN(NonFinite::Stop, "stop",
                          "stop the job naming the step, rank, parameter"),
               clEnumValN(NonFinite::Ignore, "ignore",
                          "no check (the optimizer steps anyway)")),
    cl::location(opts.gradSync.nonFinite), cl::init(NonFinite::Skip),
    cl::cat(syncCategory));
cl::opt<std::string> injectNan(
    "inject-nan",
    cl::desc("Fault injection: a NaN in RANK's first gradient at STEP"),
    cl::value_desc("STEP:RANK"), cl::cat(syncCategory));
cl::opt<std::string> injectGradScale(
    "inject-grad-scale",
    cl::desc("Fault injection: every gradient of STEP times FACTOR"),
    cl::value_desc("STEP:FACTOR"), cl::cat(syncCategory));

} // namespace

/// --config FILE in argv (either spelling), or "".
std::string findConfigFlag(int argc, char **argv) {
  std::string path;
  for (int i = 1; i < argc; ++i) {
    StringRef a = argv[i];
    if (a == "--")
      break;
    for (StringRef flag : {"--config", "-config"}) {
      if (a == flag && i + 1 < argc)
        path = argv[i + 1];
      else if (a.starts_with((flag + "=").str()))
        path = a.drop_front(flag.size() + 1).str();
    }
  }
  return path;
}

/// `out` = the flag's value when it was given (on the command line or in
/// --config).
template <typename T, typename Out>
void ifGiven(const cl::opt<T> &flag, std::optional<Out> &out) {
  if (flag.getNumOccurrences())
    out = flag;
}

/// The optimizer flags that were given, into opts.training.
bool collectTrainingFlags() {
  TrainingFlags &t = opts.training;
  ifGiven(lr, t.lr);
  ifGiven(lrSchedule, t.lrSchedule);
  ifGiven(warmupSteps, t.warmupSteps);
  ifGiven(decaySteps, t.decaySteps);
  ifGiven(minLr, t.minLr);
  ifGiven(weightDecay, t.weightDecay);
  ifGiven(eps, t.eps);
  ifGiven(noDecay, t.noDecay);
  if (betas.getNumOccurrences()) {
    auto [b1, b2] = StringRef(betas).split(',');
    double x = 0, y = 0;
    if (b1.trim().getAsDouble(x) || b2.trim().getAsDouble(y)) {
      llvm::errs() << "zb-run: error: --betas: expected B1,B2 (e.g. "
                      "0.9,0.95), got '"
                   << betas << "'\n";
      return false;
    }
    t.beta1 = x;
    t.beta2 = y;
  }
  return true;
}

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(
      {&runCategory, &optimizerCategory, &evalCategory, &syncCategory});
  // --config FILE: its settings as flags before the command line's.
  std::vector<std::string> configArgs;
  std::vector<char *> args(argv, argv + argc);
  if (std::string config = findConfigFlag(argc, argv); !config.empty()) {
    auto &registered = cl::getRegisteredOptions();
    auto parsed = configArguments(config, [&](StringRef name) {
      return registered.count(name) > 0;
    });
    if (!parsed) {
      llvm::errs() << "zb-run: error: " << llvm::toString(parsed.takeError())
                   << "\n";
      return 1;
    }
    configArgs = std::move(*parsed);
    std::vector<char *> withConfig{argv[0]};
    for (std::string &a : configArgs)
      withConfig.push_back(a.data());
    withConfig.insert(withConfig.end(), argv + 1, argv + argc);
    args = std::move(withConfig);
  }
  cl::ParseCommandLineOptions(
      (int)args.size(), args.data(),
      "zb-run: run a zb-compile output directory on MPI ranks\n\n"
      "  zb-run DIR --ranks N          launches mpirun -np N zb-run DIR\n"
      "  zb-run DIR --ranks N --hosts node1:4,node2:4\n"
      "                                the same across nodes (mpirun --host)\n"
      "  mpirun -np N zb-run DIR       runs inside an existing MPI job\n"
      "  zb-run DIR --config run.toml  flags from a TOML file "
      "(docs/training.md)\n");
  opts.ranksGiven = numRanks.getNumOccurrences() > 0;
  if (hosts.getNumOccurrences() && opts.hosts.empty()) {
    llvm::errs() << "zb-run: error: --hosts needs NAME[:SLOTS],... (e.g. "
                    "node1:8,node2:8)\n";
    return 1;
  }
  opts.cudaGraphs = cudaGraphs == Toggle::On;
  if (!collectTrainingFlags())
    return 1;
  if (!(opts.gradSync.clipNorm >= 0) || !std::isfinite(opts.gradSync.clipNorm)) {
    llvm::errs() << "zb-run: error: --grad-clip must be a finite number >= 0\n";
    return 1;
  }
  for (auto [flag, text, isRank] :
       {std::tuple{"inject-nan", &injectNan, true},
        std::tuple{"inject-grad-scale", &injectGradScale, false}}) {
    if (text->empty())
      continue;
    auto parsed = parseStepValue(flag, *text);
    if (!parsed) {
      llvm::errs() << "zb-run: error: " << llvm::toString(parsed.takeError())
                   << "\n";
      return 1;
    }
    if (isRank)
      opts.gradSync.injectNan = {parsed->first, (int32_t)parsed->second};
    else
      opts.gradSync.injectGradScale = *parsed;
  }
  int code = runZbRun(opts, argc, argv);
  // A report that could not be written (a full disk) is an error, not an
  // exit 0 (or LLVM's fatal "IO failure" when outs() is destroyed).
  llvm::outs().flush();
  if (llvm::outs().has_error()) {
    llvm::errs() << "zb-run: error: cannot write the job's output to "
                    "standard output: "
                 << llvm::outs().error().message() << "\n";
    llvm::outs().clear_error();
    return code ? code : 1;
  }
  return code;
}
