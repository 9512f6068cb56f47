//===- zb-compile.cpp - model file -> per-rank native programs ------------===//
//
// zb-compile MODEL -o DIR [--stages P] [--microbatches M] [--schedule NAME]
//
// Imports the model (ONNX, JAX StableHLO, or a zb-dialect .mlir file), runs
// the compiler (docs/design.md: autodiff, B/W split, stage partition,
// schedule, per-rank lowering, CPU codegen) and writes DIR/plan.json,
// DIR/params.bin, DIR/rank<R>.so (native code, entry `zb_rank_main`),
// DIR/pipeline.mlir, DIR/schedule.json and DIR/schedule.svg. zb-run executes
// the result. The phases live in lib/Driver (include/zb/Driver/Driver.h);
// this file parses the options.
//
//===----------------------------------------------------------------------===//
#include "zb/Driver/Driver.h"
#include "zb/Support/FatalErrors.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;
using zb::driver::CompileOptions;

static cl::OptionCategory category("zb-compile options");
static const CompileOptions defaults;

// Each flag writes its CompileOptions field (cl::location); the defaults and
// meanings are documented there. --target, --optimizer and --optimizer-sync
// are text here, parsed into their enums by driver::parseTextOptions.
static CompileOptions options;
static cl::opt<std::string, true>
    inputFile(cl::Positional, cl::desc("<model.onnx | model.mlir>"),
              cl::Required, cl::location(options.inputFile), cl::cat(category));
static cl::opt<std::string, true> outputDir("o", cl::desc("Output directory"),
                                            cl::value_desc("dir"), cl::Required,
                                            cl::location(options.outputDir),
                                            cl::cat(category));
static cl::opt<int64_t, true> numStages(
    "stages",
    cl::desc("Pipeline ranks P (default 2); the model is cut into P x "
             "--virtual-stages stages"),
    cl::location(options.numRanks), cl::init(defaults.numRanks),
    cl::cat(category));
static cl::opt<int64_t, true> virtualStages(
    "virtual-stages",
    cl::desc("Chunks (virtual stages) per rank (default: 2 for 1f1b-i, "
             "zb-v, v-half, v-min; 1 otherwise)"),
    cl::location(options.virtualStages), cl::init(defaults.virtualStages),
    cl::cat(category));
static cl::opt<int64_t, true>
    microbatches("microbatches",
                 cl::desc("Microbatches per training step (default 8, at most 512)"),
                 cl::location(options.microbatches),
                 cl::init(defaults.microbatches), cl::cat(category));
static cl::opt<int64_t, true> dataParallel(
    "data-parallel",
    cl::desc("D: copies of the pipeline trained side by side, each on M of "
             "the step's D*M microbatches, gradients all-reduced across them "
             "(zb-run then needs --ranks D*P; default 1)"),
    cl::location(options.dataParallel), cl::init(defaults.dataParallel),
    cl::cat(category));
static cl::opt<double, true> dpBandwidth(
    "dp-bandwidth",
    cl::desc("With --data-parallel: the all-reduce's bus bandwidth in GB/s "
             "for the predicted step (default 100)"),
    cl::location(options.dpBandwidthGBps), cl::init(defaults.dpBandwidthGBps),
    cl::cat(category));
static cl::opt<int64_t, true> dpBucketBytes(
    "dp-bucket-bytes",
    cl::desc("Gradient all-reduce buckets: in a stage's last W the "
             "independent gradient computations run one group after the "
             "other and each bucket of at least this many bytes starts its "
             "all-reduce as soon as it is computed (the Zero Bubble paper, "
             "Appendix A; 0: every group alone; default 4194304)"),
    cl::location(options.dpBucketBytes), cl::init(defaults.dpBucketBytes),
    cl::cat(category));
static cl::opt<double, true> dpLatency(
    "dp-latency",
    cl::desc("With --data-parallel: the latency of one all-reduce in ms for "
             "the predicted step (default 0.02)"),
    cl::location(options.dpLatencyMs), cl::init(defaults.dpLatencyMs),
    cl::cat(category));
/// --schedule's help from the schedule table.
static const std::string &scheduleHelp() {
  static const std::string help =
      "Schedule: " + llvm::join(zb::sched::scheduleNames(), " ") +
      " (default " + zb::sched::scheduleName(defaults.schedule).str() + ")";
  return help;
}
static cl::opt<std::string>
    schedule("schedule", cl::desc(scheduleHelp()),
             cl::init(zb::sched::scheduleName(defaults.schedule).str()),
             cl::cat(category));
static cl::list<std::string, std::vector<std::string>> trainable(
    "trainable",
    cl::desc("Train only the parameters whose model names match these glob "
             "patterns (comma-separated, e.g. 'blocks.*,lm_head'); the others "
             "are constants with their values from the model"),
    cl::CommaSeparated, cl::location(options.trainable), cl::cat(category));
static cl::list<std::string, std::vector<std::string>> frozen(
    "frozen",
    cl::desc("Do not train the parameters whose model names match these glob "
             "patterns (buffers such as 'rope_*' or a mask): they become "
             "constants with their values from the model"),
    cl::CommaSeparated, cl::location(options.frozen), cl::cat(category));
static cl::opt<std::string, true> scheduleFile(
    "schedule-file",
    cl::desc("Compile a schedule from a file instead of --schedule: the "
             "PyTorch pipelining CSV (torch.distributed.pipelining "
             "_dump_csv; compute actions F/I/W/B, with or without "
             "communication, FSDP and OVERLAP_F_B actions) or zb's schedule "
             "JSON (zb-sched --format json); its rows/ranks must be --stages "
             "and its microbatches --microbatches; it is verified"),
    cl::value_desc("FILE"), cl::location(options.scheduleFile), cl::init(""),
    cl::cat(category));
static cl::opt<int64_t, true> maxOpsPerStage(
    "max-ops-per-stage",
    cl::desc("Refuse models with more operations than this per stage, up "
             "front (default 4096): compile time grows faster than linearly "
             "with a stage's size"),
    cl::location(options.maxOpsPerStage), cl::init(defaults.maxOpsPerStage),
    cl::cat(category));
static cl::opt<std::string> optimizerSync(
    "optimizer-sync",
    cl::desc("post-validation (default): each rank program validates the "
             "previous optimizer step where the schedule expects the fully "
             "reduced gradient norm / finite flag (the Zero Bubble paper, "
             "Section 4; zb-run --grad-clip); none: zb-run validates "
             "between steps"),
    cl::init(zb::sched::optimizerSyncName(defaults.optimizerSync).str()),
    cl::cat(category));
static cl::opt<std::string, true>
    loss("loss",
         cl::desc("ONNX models whose output is logits [N..., C]: append this "
                  "loss (cross-entropy: the mean over N...; needs --targets)"),
         cl::value_desc("cross-entropy"), cl::location(options.loss),
         cl::cat(category));
static cl::opt<std::string, true> targets(
    "targets",
    cl::desc("With --loss: the integer targets [N...] (a graph input, or a "
             "new data argument of this name after the graph inputs)"),
    cl::value_desc("NAME"), cl::location(options.targets), cl::cat(category));
static cl::list<std::string, std::vector<std::string>> dataArgs(
    "data-args",
    cl::desc("StableHLO models: arguments that are batch inputs, not "
             "parameters (names, or prefixes ending in '.', e.g. batch.); "
             "integer arguments are always data"),
    cl::CommaSeparated, cl::location(options.dataArgs), cl::cat(category));
static cl::list<double, std::vector<double>> memoryLimit(
    "memory-limit",
    cl::desc("Activation memory limit in bytes: one value for every rank, or "
             "a comma-separated list with one per rank (0 = none)"),
    cl::CommaSeparated, cl::location(options.memoryLimits),
    cl::cat(category));
static cl::opt<std::string>
    target("target",
           cl::desc("cpu (default) | cuda (GPU kernels, H100 costs; run "
                    "with zb-run --backend cuda) | cuda-emu (the cuda "
                    "kernels emulated on the CPU with GPU semantics, to "
                    "check them; runs with zb-run on the CPU) | h100 (CPU "
                    "code, H100 costs)"),
           cl::init(zb::targetName(defaults.target).str()),
           cl::cat(category));
static cl::opt<std::string, true>
    gpuArch("gpu-arch", cl::desc("GPU architectures of --target cuda, "
                                 "comma-separated in increasing order: one "
                                 "fatbin with a cubin for each plus the "
                                 "first one's PTX (default sm_90)"),
            cl::location(options.cuda.arch), cl::init(defaults.cuda.arch),
            cl::cat(category));
static cl::opt<bool, true> gpuCosts(
    "gpu-costs",
    cl::desc("With --target cuda/cuda-emu (default true; without --profile "
             "or --schedule-file): schedule with the GPU kernels' roofline "
             "T_F/T_B/T_W (the stages are lowered to kernels once to measure "
             "them; OUTDIR/gpu_costs.json) instead of the zb-level cost "
             "model; --gpu-costs=false keeps the cost model"),
    cl::location(options.cuda.costs), cl::init(true), cl::cat(category));
static cl::opt<bool, true> allowTf32(
    "allow-tf32",
    cl::desc("With --target cuda/cuda-emu: fp32 GEMMs may run on TF32 tensor "
             "cores (cuBLAS TF32 math; 10-bit mantissa products, fp32 "
             "accumulation; plan.json allow_tf32; the GPU report times GEMMs "
             "at the TF32 peak)"),
    cl::location(options.cuda.allowTf32), cl::init(false), cl::cat(category));
static cl::opt<int64_t, true> gpuBlockSize(
    "gpu-block-size",
    cl::desc("Threads per block of the elementwise kernels of --target "
             "cuda/cuda-emu (a multiple of 32, default 256)"),
    cl::location(options.cuda.blockSize), cl::init(defaults.cuda.blockSize),
    cl::cat(category));
static cl::opt<int64_t, true> gpuReductionThreads(
    "gpu-reduction-threads",
    cl::desc("Most threads of a block reduction of --target cuda/cuda-emu (a "
             "power of two, default 256; 0: one thread per output row with a "
             "serial loop, the CPU backend's arithmetic)"),
    cl::location(options.cuda.reductionThreads),
    cl::init(defaults.cuda.reductionThreads), cl::cat(category));
static cl::opt<bool, true> gpuAttentionKernel(
    "gpu-attention-kernel",
    cl::desc("With --target cuda/cuda-emu: run each attention with "
             "bfloat16 operands, no mask and head dims that are multiples of "
             "16 up to 128 as fused FlashAttention-2 kernels on tensor cores "
             "(mma.sync; F one kernel, B two; default true; false: "
             "decomposed into GEMMs and softmax kernels)"),
    cl::location(options.cuda.attentionKernel),
    cl::init(defaults.cuda.attentionKernel), cl::cat(category));
static cl::opt<bool, true> gpuAttentionTokenMajor(
    "gpu-attention-token-major",
    cl::desc("With --target cuda/cuda-emu and the attention kernels: read "
             "q, k and v and write the result and its gradients in place in "
             "the [B T, H D] projections the model's head transposes are "
             "views of (as FlashAttention takes [B, T, H, D]; default true; "
             "false: each transpose is a copy kernel)"),
    cl::location(options.cuda.attentionTokenMajor),
    cl::init(defaults.cuda.attentionTokenMajor), cl::cat(category));
static cl::opt<bool, true> gpuNormKernel(
    "gpu-norm-kernel",
    cl::desc("With --target cuda/cuda-emu: run each float32 layer norm and "
             "RMS norm as one kernel, a warp per row, that also writes the "
             "bfloat16 copy autocast makes of its result (default true; "
             "false, or --gpu-reduction-threads 0: decomposed into five "
             "reduction and elementwise kernels)"),
    cl::location(options.cuda.normKernel),
    cl::init(defaults.cuda.normKernel), cl::cat(category));
static cl::opt<double, true> gpuLaunchUs(
    "gpu-launch-us",
    cl::desc("With --target cuda/cuda-emu: microseconds added to every "
             "kernel launch and GEMM in the GPU report and the --gpu-costs "
             "T_F/T_B/T_W (the host's cost of issuing a launch and the gap "
             "between kernels; default 3, 0: the pure roofline)"),
    cl::location(options.cuda.launchUs), cl::init(defaults.cuda.launchUs),
    cl::cat(category));
static cl::opt<bool, true> gpuReport(
    "gpu-report",
    cl::desc("With --target cuda/cuda-emu: print every kernel and GEMM of "
             "each rank program (grid, block, bytes, FLOPs, H100 roofline "
             "time) and the T_F/T_B/T_W sums per stage; also written to "
             "gpu_report.txt and gpu_report.json"),
    cl::location(options.cuda.report), cl::init(false), cl::cat(category));
static cl::opt<std::string, true>
    cudaPath("cuda-path",
             cl::desc("CUDA toolkit root for --target cuda (default: the "
                      "toolkit zb was built with)"),
             cl::location(options.cuda.toolkitPath), cl::init(defaults.cuda.toolkitPath),
             cl::cat(category));
static cl::opt<std::string>
    optimizer("optimizer", cl::desc("sgd | adamw (default sgd)"),
              cl::init(zb::optimizerName(defaults.optimizer).str()),
              cl::cat(category));
static cl::opt<std::string> precision(
    "precision",
    cl::desc("fp32 (default) | bf16: train as torch.autocast(dtype="
             "torch.bfloat16) does: matmuls on bfloat16 with float32 "
             "accumulation, softmax, norms, reductions and the loss in "
             "float32, bfloat16 activations; float32 master weights, "
             "gradients and optimizer"),
    cl::init(zb::precisionName(defaults.precision).str()), cl::cat(category));
static cl::opt<double, true> learningRate("lr", cl::desc("Learning rate"),
                                          cl::location(options.learningRate),
                                          cl::init(defaults.learningRate),
                                          cl::cat(category));
static cl::opt<std::string, true>
    dataDir("data",
            cl::desc("Default training data for zb-run: a directory with "
                     "input_<i>.pb, or a text file (bytes as tokens); "
                     "default: the 'data' directory next to the model"),
            cl::location(options.dataDir), cl::init(defaults.dataDir),
            cl::cat(category));
static cl::opt<uint64_t, true>
    initSeed("init-seed",
             cl::desc("Seed of the parameter initialisation used when the "
                      "model stores no parameter values"),
             cl::location(options.initSeed), cl::init(defaults.initSeed),
             cl::cat(category));
static cl::opt<bool, true> keepIntermediates(
    "keep-intermediates",
    cl::desc("Also write rank<R>.llvm.mlir (the LLVM dialect), rank<R>.o "
             "(the stage functions, at --opt-level) and rank<R>.step.o (the "
             "step function, one basic block per action, at -O0)"),
    cl::location(options.keepIntermediates),
    cl::init(defaults.keepIntermediates), cl::cat(category));
static cl::opt<std::string, true> profileFile(
    "profile",
    cl::desc("Schedule with the per-stage T_F/T_B/T_W/T_comm measured by "
             "`zb-run --profile FILE` instead of the cost model"),
    cl::value_desc("FILE"), cl::location(options.profile),
    cl::init(defaults.profile), cl::cat(category));
static cl::opt<int, true>
    optLevel("opt-level",
             cl::desc("LLVM optimisation of the rank programs: 0 none, 1 "
                      "scalar cleanups + loop vectoriser (default; fast to "
                      "compile), 2 or 3 LLVM's -O2/-O3"),
             cl::location(options.optLevel), cl::init(defaults.optLevel),
             cl::cat(category));
static cl::opt<unsigned, true>
    jobs("j",
         cl::desc("Rank programs optimised and emitted in parallel "
                  "(default: the number of hardware threads)"),
         cl::location(options.jobs), cl::init(defaults.jobs),
         cl::cat(category));
static cl::opt<bool, true> fuseElementwise(
    "fuse-elementwise",
    cl::desc("Fuse elementwise linalg chains before bufferization (default "
             "on; --fuse-elementwise=false to measure without)"),
    cl::location(options.fuseElementwise), cl::init(defaults.fuseElementwise),
    cl::cat(category));
static cl::opt<bool, true> fuseAttention(
    "fuse-attention",
    cl::desc("Fuse each attention of the model (matmul, scale, mask, "
             "softmax, matmul) into one zb.attention whose backward pass "
             "recomputes the probabilities from the saved log-sum-exp "
             "(FlashAttention's algorithm; the Tq x Tk probabilities are "
             "not kept between F and B). Default on; --fuse-attention=false "
             "keeps the exported ops"),
    cl::location(options.fuseAttention), cl::init(defaults.fuseAttention),
    cl::cat(category));
static cl::opt<bool, true> fuseCrossEntropy(
    "fuse-cross-entropy",
    cl::desc("Keep each cross-entropy's log-sum-exp (one float per token) "
             "so that its backward pass computes the logits' gradient in "
             "one pass without the probabilities, and read bfloat16 logits "
             "without a float32 copy (the logits kept between F and B are "
             "half the bytes). Default on; --fuse-cross-entropy=false keeps "
             "the exported ops"),
    cl::location(options.fuseCrossEntropy),
    cl::init(defaults.fuseCrossEntropy), cl::cat(category));
static cl::opt<bool, true>
    timing("timing",
           cl::desc("Print the time of every compiler phase (MLIR passes, "
                    "per-rank lowering, LLVM translation, optimisation and "
                    "code generation, linking)"),
           cl::location(options.timing), cl::init(defaults.timing),
           cl::cat(category));
static cl::opt<bool> quiet("quiet", cl::desc("No progress messages"),
                           cl::init(false), cl::cat(category));

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // Out of memory or threads inside LLVM/MLIR: one line, not a stack dump,
  // and OUTDIR as it was.
  zb::support::installFatalErrorHandlers("zb-compile",
                                         zb::driver::removeBuildNow);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "zb-compile: compile a model for zero-bubble pipeline-parallel training\n"
      "\n"
      "Writes OUTDIR/plan.json, params.bin, rank<R>.so (one native program "
      "per\n"
      "rank), pipeline.mlir and schedule.svg; run them with `zb-run OUTDIR`.\n"
      "Example: zb-compile examples/mlp/mlp.onnx --stages 2 --microbatches 8 "
      "--schedule zb-h1 -o out\n");

  if (llvm::Error error = zb::driver::parseTextOptions(
          options, target, optimizer, optimizerSync, precision, schedule)) {
    llvm::errs() << "zb-compile: error: " << llvm::toString(std::move(error))
                 << "\n";
    return 1;
  }
  zb::driver::CompileCallbacks callbacks;
  if (!quiet)
    callbacks.progress = [](llvm::StringRef message) {
      llvm::errs() << "[zb-compile] " << message << "\n";
    };
  callbacks.phaseTime = [](llvm::StringRef phase, double seconds) {
    llvm::errs() << llvm::formatv("[zb-compile] time {0,8:f3} s  ", seconds)
                 << phase << "\n";
  };
  callbacks.gpuReport = [](llvm::StringRef table) { llvm::outs() << table; };
  // Ctrl-C or a kill leaves OUTDIR as it was (no build directory, no lock).
  zb::driver::removeBuildOnInterrupt();
  return failed(zb::driver::compile(options, callbacks)) ? 1 : 0;
}
