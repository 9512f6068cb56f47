//===- RankProgram.h - zb-run: one rank's program and buffers ---*- C++ -*-===//
//
// What one MPI rank of zb-run holds: its rank program (rank<R>.so, loaded
// with dlopen), its parameters (from params.bin), gradient and optimizer
// buffers, and its training data, with the memref descriptors it passes to
// the program's entry (docs/plan-json.md, "Calling a rank program"). No MPI
// here: the step loop (Runner.h) drives it.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_RUNNER_RANKPROGRAM_H
#define ZB_RUNNER_RANKPROGRAM_H

#include "zb/Runner/Data.h"
#include "zb/Runner/Tokens.h"
#include "zb/Formats/Plan.h"
#include "zbrt/Symbols.h"

#include "llvm/ADT/Hashing.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace zb::runner {

// The plan's types and readers (lib/Formats), which the runner speaks.
using formats::OptimizerInfo;
using formats::Plan;

/// Where the training data comes from (zb-run --data, --inputs,
/// --text-vocab, --seed; docs/plan-json.md, "Data").
struct DataOptions {
  std::string data;   ///< --data DIR|FILE ("" when not given)
  std::string inputs; ///< --inputs DIR ("" when not given)
  TextVocab textVocab = TextVocab::Bytes;
  /// --data-dtype: the ids of a raw token file (Tokens.h).
  TokenDType dataDType = TokenDType::UInt16;
  uint64_t seed = 0; ///< of the text and token batches
  /// --target-shift: input 1 (the targets) holds the tokens `targetShift`
  /// places after input 0's: 1 for models whose graph compares logits with
  /// the given targets (nanoGPT, llm.c, zb's examples), 0 for Hugging Face
  /// causal LMs, whose exported graph shifts `labels` = `input_ids` itself.
  int64_t targetShift = 1;
  /// --val-data DIR|FILE: the validation data, in the form of --data ("":
  /// none, or the --val-split part of --data).
  std::string valData;
  /// --val-split F: the last fraction F of a text or token file is
  /// validation data, the rest training data (0: none).
  double valSplit = 0;
  bool hasValidation() const { return !valData.empty() || valSplit > 0; }
};

/// The data directory or text file: DataOptions::data or ::inputs, else
/// plan.json "data" (relative to the plan directory). Errors: both given,
/// or none at all.
llvm::Expected<std::string> dataPath(const Plan &plan,
                                     const DataOptions &options);

/// 64-byte aligned storage of `n` elements of `elemBytes` bytes each,
/// zero-initialised (zbrt_host_buffer_alloc: managed memory under the CUDA
/// backend), or a view of part of another buffer's storage. Copies share the
/// storage, which lives as long as a buffer or view of it does. Out of
/// memory ends the process with
/// "zb-run: error: out of memory allocating N bytes".
class Buffer {
public:
  Buffer() = default;
  explicit Buffer(int64_t n, int64_t elemBytes = 4);
  /// `n` elements at byte `offsetBytes` of `arena`'s storage (which must
  /// hold them; a multiple of 64 keeps the view 64-byte aligned).
  Buffer(const Buffer &arena, uint64_t offsetBytes, int64_t n,
         int64_t elemBytes = 4);
  /// The elements as floats (parameters, gradients, float32 inputs).
  float *data() const { return reinterpret_cast<float *>(ptr); }
  char *bytes() const { return ptr; }
  int64_t size() const { return count; }
  uint64_t byteSize() const { return (uint64_t)(count * elemBytes); }
  /// What a step does to a buffer, in order with the backend's work and
  /// without the host touching its pages (zbrt_buffer_zero, _upload,
  /// _download): zero it; copy byteSize() bytes from / to host memory.
  void zero();
  void upload(const void *from);
  void download(void *to) const;

private:
  std::shared_ptr<char> storage;
  char *ptr = nullptr;
  int64_t count = 0, elemBytes = 4;
};

/// The memref descriptor of a buffer of `shape`:
///   { T *allocated; T *aligned; int64_t offset; int64_t sizes[R];
///     int64_t strides[R]; }
/// with row-major strides and offset 0, as int64 words.
std::vector<int64_t> makeDescriptor(void *data,
                                    const std::vector<int64_t> &shape);

/// One rank's loaded program and state.
struct RankProgram {
  const Plan *plan = nullptr;
  int32_t rank = 0; ///< the stage rank: this program's rank in the plan
  /// Data parallelism (zb/Runner/Layout.h): this rank's pipeline d of D.
  /// fillInputs gives it microbatches d*m .. d*m+m-1 of the step's D*m;
  /// the mean gradient is the sum over the D*m microbatches / (D*m).
  int32_t pipeline = 0, dataParallel = 1;
  /// D * m: the microbatches of a step across all pipelines.
  int64_t globalMicrobatches() const;
  uint64_t seed = 0; ///< of the text batches
  int64_t targetShift = 1; ///< DataOptions::targetShift
  void *handle = nullptr;
  zbrt::symbols::RankEntryFn entry = nullptr; ///< plan.json "entry"
  std::map<int64_t, Buffer> params, grads; ///< by parameter index
  /// The previous step's gradients after swapGradientBuffers() (empty
  /// until the first swap).
  std::map<int64_t, Buffer> gradsPrevious;
  /// The storage of grads (views at 64-byte aligned offsets) and of
  /// gradsPrevious: a step zeroes its gradients with one call.
  Buffer gradArena, gradArenaPrevious;
  std::map<int64_t, Buffer> adamM, adamV;  ///< AdamW state by index
  std::map<int64_t, Dataset> datasets;     ///< by input index
  std::map<int64_t, Buffer> inputs;        ///< by input index
  /// Text data (its vocabulary; the tokens are trainTokens').
  std::shared_ptr<const TextData> text;
  /// A language model's tokens (text or a token file) instead of datasets:
  /// the training part and, with DataOptions::hasValidation, the
  /// validation part.
  std::optional<TokenSource> trainTokens, valTokens;
  /// Validation datasets (--val-data DIR), by input index.
  std::map<int64_t, Dataset> valDatasets;
  Buffer loss{1};
  bool hasLoss = false;
  std::vector<std::vector<int64_t>> descriptors;
  std::vector<void *> argv; ///< argv[i] = descriptors[i].data()

  RankProgram() = default;
  RankProgram(const RankProgram &) = delete;
  RankProgram &operator=(const RankProgram &) = delete;
  ~RankProgram();

  /// Runs one training step: entry(argv).
  void call() { entry(argv.data()); }
  /// A hash of every descriptor (buffer addresses, sizes, strides): steps
  /// with equal keys pass the same arguments (zbrt_cuda_step_variant).
  uint64_t argumentsKey() const {
    llvm::hash_code h = llvm::hash_value(descriptors.size());
    for (const std::vector<int64_t> &d : descriptors)
      h = llvm::hash_combine(h, llvm::hash_combine_range(d.begin(), d.end()));
    return (uint64_t)(size_t)h;
  }
  /// Makes the next step write its gradients into a second set of buffers
  /// and keeps the current ones in gradsPrevious (the descriptors are
  /// updated; no data is copied). Post-validation needs the previous step's
  /// gradients to roll its optimizer step back during the next step.
  void swapGradientBuffers();
};

/// Loads everything rank `rank` needs: the program, its parameters, the
/// data of its inputs, the descriptors. `forRun` selects RTLD_GLOBAL (the
/// real run) versus a side-effect-free check (the launcher validating every
/// rank before starting mpirun). Errors name the file and the plan field.
/// `paramsFile`: where the parameters come from instead of the plan's
/// params.bin (a checkpoint's), "" for the plan's.
llvm::Expected<std::unique_ptr<RankProgram>>
loadRankProgram(const Plan &plan, int32_t rank, const DataOptions &data,
                bool forRun, llvm::StringRef paramsFile = "");

/// Reads the tensors of this rank's parameters from `file` (the params.bin
/// layout) into `into` (one buffer per parameter of rp.params): a
/// checkpoint's AdamW moments. Errors name the file and the parameter.
llvm::Error readParamLayout(const RankProgram &rp, llvm::StringRef file,
                            std::map<int64_t, Buffer> &into);

/// Which data fillInputs takes.
enum class Split { Train, Validation };

/// Copies the samples of step `step` (0-based) of the training data, or of
/// validation batch `step` (0-based within an evaluation; the same batches
/// at every evaluation), into the input buffers (docs/plan-json.md,
/// "Data"). Errors: a token file that cannot be read, a token outside the
/// model's vocabulary; both name the file.
llvm::Error fillInputs(RankProgram &rp, int64_t step,
                       Split split = Split::Train);

/// Applies the optimizer to every parameter with a gradient, with gradient
/// scale 1 / num_microbatches (zbrt_sgd_step / zbrt_adamw_step; `step` is
/// 0-based).
void applyOptimizer(RankProgram &rp, const OptimizerInfo &opt, int64_t step);

/// Zeroes the gradients and the loss before a step (two calls:
/// zbrt_buffer_zero of the gradient arena and of the loss).
void clearOutputs(RankProgram &rp);

} // namespace zb::runner

#endif // ZB_RUNNER_RANKPROGRAM_H
