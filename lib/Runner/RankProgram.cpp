//===- RankProgram.cpp - zb-run: one rank's program and buffers -----------===//

#include "zb/Runner/RankProgram.h"

#include "zb/Support/Checksum.h"

#include "zbrt/zbrt.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace llvm;
using namespace zb::runner;
using namespace zb::formats;

namespace {

Error makeError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

std::string resolvePath(StringRef base, StringRef path) {
  if (sys::path::is_absolute(path))
    return path.str();
  SmallString<256> p(base);
  sys::path::append(p, path);
  return std::string(p);
}

// AddressSanitizer refuses RTLD_DEEPBIND (it would bypass its interceptors):
// sanitized builds (scripts/test-sanitized.sh) load without it.
#if defined(__SANITIZE_ADDRESS__)
constexpr int kDeepBind = 0;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr int kDeepBind = 0;
#else
constexpr int kDeepBind = RTLD_DEEPBIND;
#endif
#else
constexpr int kDeepBind = RTLD_DEEPBIND;
#endif

/// ranks[rank].library: dlopen and the entry symbol.
Error loadLibrary(RankProgram &rp, const Plan &plan, bool forRun) {
  const RankInfo &info = plan.ranks[rp.rank];
  std::string lib = resolvePath(plan.dir, info.library);
  if (!sys::fs::exists(lib))
    return makeError(formatv("{0}: ranks[{1}].library: '{2}' not found",
                             plan.path, rp.rank, lib));
  // No symlink out of the plan directory: the program's real path must be
  // inside the directory's.
  SmallString<256> realLib, realDir;
  if (sys::fs::real_path(lib, realLib) ||
      sys::fs::real_path(plan.dir.empty() ? "." : plan.dir, realDir) ||
      sys::path::parent_path(realLib) != realDir)
    return makeError(formatv("{0}: ranks[{1}].library: '{2}' resolves to "
                             "'{3}', outside the plan directory",
                             plan.path, rp.rank, info.library, realLib));
  dlerror();
  // RTLD_DEEPBIND: the program's own functions win over same-named ones
  // already loaded (libc exports `step`, for one); zbrt_* still resolve
  // from the libzbrt.so zb-run is linked with.
  rp.handle = dlopen(lib.c_str(), RTLD_NOW | kDeepBind |
                                      (forRun ? RTLD_GLOBAL : RTLD_LOCAL));
  if (!rp.handle) {
    const char *why = dlerror();
    return makeError(formatv("{0}: cannot load rank program: {1}", lib,
                             why ? why : "unknown error"));
  }
  // A program from zb-compile says what it was compiled for; hand-written
  // ones (the runtime's test fixtures) carry no fingerprint.
  if (const auto *fingerprint = static_cast<const char *>(
          dlsym(rp.handle, zbrt::symbols::RankFingerprint)))
    if (Error e = checkRankFingerprint(plan, rp.rank, fingerprint))
      return e;
  rp.entry = reinterpret_cast<zbrt::symbols::RankEntryFn>(dlsym(rp.handle, info.entry.c_str()));
  if (!rp.entry)
    return makeError(formatv("{0}: entry symbol '{1}' (ranks[{2}].entry) "
                             "not found",
                             lib, info.entry, rp.rank));
  return Error::success();
}

/// Parameters (initial values from params.bin), gradient and AdamW buffers.
/// A params.bin-layout file must be exactly as long as the plan's
/// parameters (a longer one is another model's, or a plan edited to fewer
/// parameters).
static Error checkParamsFileSize(StringRef file, StringRef bytes,
                                 const Plan &plan) {
  int64_t end = 0;
  for (const ParamInfo &p : plan.params)
    end = std::max(end, p.offsetBytes + 4 * p.numElements());
  if ((int64_t)bytes.size() > end)
    return makeError(formatv("{0}: {1} bytes, but plan.json's parameters end "
                             "at byte {2} (a file of another model?)",
                             file, bytes.size(), end)
                         .str());
  return Error::success();
}

/// One buffer for every gradient of `grads`, each a view of it at a 64-byte
/// aligned offset (in the order of the parameter indices).
Buffer gradientArena(const Plan &plan, std::map<int64_t, Buffer> &grads) {
  auto padded = [](int64_t n) { return (uint64_t)(4 * n + 63) / 64 * 64; };
  uint64_t total = 0;
  for (auto &[index, g] : grads)
    total += padded(plan.params[index].numElements());
  Buffer arena((int64_t)(total / 4));
  uint64_t at = 0;
  for (auto &[index, g] : grads) {
    int64_t n = plan.params[index].numElements();
    g = Buffer(arena, at, n);
    at += padded(n);
  }
  return arena;
}

Error loadParams(RankProgram &rp, const Plan &plan, StringRef paramsFile) {
  std::unique_ptr<MemoryBuffer> paramsBin;
  std::string paramsPath = paramsFile.empty()
                               ? resolvePath(plan.dir, "params.bin")
                               : paramsFile.str();
  for (const ArgInfo &a : plan.ranks[rp.rank].args) {
    if (a.kind != ArgKind::Param && a.kind != ArgKind::Grad)
      continue;
    const ParamInfo &p = plan.params[a.index];
    if (a.kind == ArgKind::Grad) {
      if (!rp.grads.count(a.index))
        rp.grads.emplace(a.index, Buffer()); // a view of the arena, below
      continue;
    }
    if (rp.params.count(a.index))
      continue;
    if (!paramsBin) {
      auto buf = MemoryBuffer::getFile(paramsPath, /*IsText=*/false,
                                       /*RequiresNullTerminator=*/false);
      if (!buf)
        return makeError(paramsPath +
                         ": cannot read: " + buf.getError().message());
      paramsBin = std::move(*buf);
      if (Error e = checkParamsFileSize(paramsPath, paramsBin->getBuffer(),
                                        plan))
        return e;
    }
    Buffer buf(p.numElements());
    if (Error e = readParam(paramsPath, paramsBin->getBuffer(), p.name,
                            p.offsetBytes, p.numElements(), buf.data()))
      return e;
    rp.params.emplace(a.index, std::move(buf));
  }
  // The plan's own params.bin as zb-compile wrote it (a checkpoint's files
  // have their own checksums); after the size and value checks, whose
  // messages say more.
  if (paramsBin && paramsFile.empty() && !plan.paramsChecksum.empty()) {
    std::string sum = zb::support::xxh3Hex(paramsBin->getBuffer());
    if (sum != plan.paramsChecksum)
      return makeError(formatv(
          "{0}: damaged: its checksum is {1}, {2} records {3} (the file "
          "changed after zb-compile wrote it; compile the plan again)",
          paramsPath, sum, plan.path, plan.paramsChecksum));
  }
  rp.gradArena = gradientArena(plan, rp.grads);
  for (auto &[index, g] : rp.grads) {
    if (!rp.params.count(index))
      return makeError(formatv("{0}: ranks[{1}] has a grad argument for "
                               "parameter {2} ('{3}') but no param argument",
                               plan.path, rp.rank, index,
                               plan.params[index].name));
    if (plan.optimizer.kind == zb::Optimizer::AdamW) {
      rp.adamM.emplace(index, Buffer(g.size()));
      rp.adamV.emplace(index, Buffer(g.size()));
    }
  }
  return Error::success();
}

/// Checks that the plan is a language model fed by token data: two inputs
/// (tokens, targets) of sample shape [seq].
Error checkLanguageModel(const Plan &plan, StringRef file) {
  if (plan.inputs.size() != 2 || plan.inputs[0].sampleShape.size() != 1 ||
      plan.inputs[0].sampleShape != plan.inputs[1].sampleShape)
    return makeError(formatv(
        "{0}: text and token data need a language model with two inputs "
        "(tokens, targets) of sample shape [seq]; {1} has {2} input(s)",
        file, plan.path, plan.inputs.size()));
  return Error::success();
}

/// The tokens of a text or token file (Tokens.h): input 0 = tokens, input
/// 1 = the same shifted by one.
Expected<TokenSource> loadTokens(const Plan &plan, StringRef file,
                                 const DataOptions &data) {
  const int64_t seqLen = plan.inputs[0].sampleShape[0];
  if (isTokenFile(file)) {
    Expected<std::unique_ptr<TokenFile>> f = TokenFile::open(file, data.dataDType);
    if (!f)
      return f.takeError();
    if ((*f)->numTokens() < seqLen + 2)
      return makeError(formatv("{0}: {1} token ids, but sequences of {2} "
                               "tokens need at least {3}",
                               file, (*f)->numTokens(), seqLen, seqLen + 2));
    return wholeSource(std::shared_ptr<const TokenFile>(std::move(*f)));
  }
  Expected<TextData> text = readText(file, seqLen, data.textVocab);
  if (!text)
    return text.takeError();
  if (Error e = checkTextVocabulary(*text, plan))
    return std::move(e);
  return wholeSource(std::make_shared<const TextData>(std::move(*text)));
}

/// The training (and validation) tokens of a language model, once per rank.
Error loadTokenData(RankProgram &rp, const Plan &plan, StringRef file,
                    const DataOptions &data) {
  if (Error e = checkLanguageModel(plan, file))
    return e;
  if (rp.trainTokens)
    return Error::success();
  Expected<TokenSource> all = loadTokens(plan, file, data);
  if (!all)
    return all.takeError();
  rp.text = all->text;
  const int64_t seqLen = plan.inputs[0].sampleShape[0];
  if (data.valSplit > 0) {
    if (!data.valData.empty())
      return makeError("give --val-data or --val-split, not both");
    auto parts = splitSource(*all, data.valSplit, seqLen);
    if (!parts)
      return parts.takeError();
    rp.trainTokens = std::move(parts->first);
    rp.valTokens = std::move(parts->second);
    return Error::success();
  }
  rp.trainTokens = std::move(*all);
  if (data.valData.empty())
    return Error::success();
  if (!sys::fs::is_regular_file(data.valData))
    return makeError(formatv("--val-data {0}: the training data is a file, "
                             "so the validation data must be one too",
                             data.valData));
  if (rp.text && data.textVocab == TextVocab::Chars)
    return makeError("--val-data with --text-vocab chars: the characters "
                     "would be numbered differently; use --val-split");
  Expected<TokenSource> val = loadTokens(plan, data.valData, data);
  if (!val)
    return val.takeError();
  rp.valTokens = std::move(*val);
  return Error::success();
}

/// Reads DIR/input_<index>.pb for input `index` and checks its values
/// against the input's index range.
Expected<Dataset> loadDataset(const Plan &plan, StringRef dir, int64_t index) {
  const InputInfo &in = plan.inputs[index];
  std::string path = resolvePath(dir, formatv("input_{0}.pb", index).str());
  Expected<Dataset> ds = readDataset(path, in.name, in.sampleShape, in.dtype);
  if (!ds)
    return ds.takeError();
  if (in.indexRange > 0 && in.dtype != DType::Float32) {
    // An index outside the table would read (or write) outside it.
    for (int64_t i = 0, n = ds->numSamples * ds->sampleElements; i < n; ++i) {
      int64_t v = in.dtype == DType::Int64
                      ? reinterpret_cast<const int64_t *>(ds->bytes.data())[i]
                      : reinterpret_cast<const int32_t *>(ds->bytes.data())[i];
      if ((v < 0 || v >= in.indexRange) && v != in.indexIgnore)
        return makeError(formatv(
            "{0}: sample {1} position {2}: value {3} of input '{4}' is "
            "outside [0, {5}) (the rows or classes it indexes){6}",
            path, i / ds->sampleElements, i % ds->sampleElements, v, in.name,
            in.indexRange,
            in.indexIgnore
                ? formatv(" and is not the ignored label {0}", *in.indexIgnore)
                      .str()
                : std::string()));
    }
  }
  return ds;
}

/// Training data: input_<i>.pb datasets, or a text or token file; and the
/// validation data of the same form.
Error loadData(RankProgram &rp, const Plan &plan, const DataOptions &data) {
  for (const ArgInfo &a : plan.ranks[rp.rank].args) {
    if (a.kind != ArgKind::Input || rp.inputs.count(a.index))
      continue;
    Expected<std::string> dir = dataPath(plan, data);
    if (!dir)
      return dir.takeError();
    const InputInfo &in = plan.inputs[a.index];
    rp.inputs.emplace(
        a.index,
        Buffer(plan.numMicrobatches * plan.microbatchSize * in.sampleElements(),
               dtypeBytes(in.dtype)));
    if (sys::fs::is_regular_file(*dir)) {
      if (Error e = loadTokenData(rp, plan, *dir, data))
        return e;
      continue;
    }
    if (data.valSplit > 0)
      return makeError(formatv("--val-split needs text or token data, not "
                               "the directory {0} (give --val-data DIR)",
                               *dir));
    Expected<Dataset> ds = loadDataset(plan, *dir, a.index);
    if (!ds)
      return ds.takeError();
    rp.datasets.emplace(a.index, std::move(*ds));
    if (data.valData.empty())
      continue;
    if (!sys::fs::is_directory(data.valData))
      return makeError(formatv("--val-data {0}: the training data is the "
                               "directory {1}, so the validation data must be "
                               "one too (input_<i>.pb)",
                               data.valData, *dir));
    Expected<Dataset> val = loadDataset(plan, data.valData, a.index);
    if (!val)
      return val.takeError();
    rp.valDatasets.emplace(a.index, std::move(*val));
  }
  return Error::success();
}

/// Memref descriptors, in argument order.
void buildDescriptors(RankProgram &rp, const Plan &plan) {
  for (const ArgInfo &a : plan.ranks[rp.rank].args) {
    void *data = nullptr;
    switch (a.kind) {
    case ArgKind::Param:
      data = rp.params.at(a.index).data();
      break;
    case ArgKind::Grad:
      data = rp.grads.at(a.index).data();
      break;
    case ArgKind::Input:
      data = rp.inputs.at(a.index).bytes();
      break;
    case ArgKind::Loss:
      data = rp.loss.data();
      rp.hasLoss = true;
      break;
    }
    rp.descriptors.push_back(makeDescriptor(data, plan.argShape(a)));
  }
  for (auto &d : rp.descriptors)
    rp.argv.push_back(d.data());
}

} // namespace

Expected<std::string> zb::runner::dataPath(const Plan &plan,
                                         const DataOptions &options) {
  if (!options.data.empty() && !options.inputs.empty())
    return makeError("give --data or --inputs, not both");
  if (!options.data.empty())
    return options.data;
  if (!options.inputs.empty())
    return options.inputs;
  if (!plan.data.empty())
    return resolvePath(plan.dir, plan.data);
  return makeError(plan.path +
                   ": no \"data\" directory given: pass --data DIR");
}

Buffer::Buffer(int64_t n, int64_t elemBytes) : count(n), elemBytes(elemBytes) {
  // Zeroed and 64-byte aligned; CUDA managed memory under --backend cuda.
  storage.reset(static_cast<char *>(zbrt_host_buffer_alloc(
                    (uint64_t)std::max<int64_t>(n, 1) * elemBytes)),
                zbrt_host_buffer_free);
  ptr = storage.get();
}

Buffer::Buffer(const Buffer &arena, uint64_t offsetBytes, int64_t n,
               int64_t elemBytes)
    : storage(arena.storage), ptr(arena.ptr + offsetBytes), count(n),
      elemBytes(elemBytes) {
  if (offsetBytes + byteSize() > arena.byteSize())
    zbrt_fatal("zb-run: a buffer view past the end of its storage");
}

void Buffer::zero() { zbrt_buffer_zero(ptr, byteSize()); }

void Buffer::upload(const void *from) {
  zbrt_buffer_upload(ptr, from, byteSize());
}

void Buffer::download(void *to) const {
  zbrt_buffer_download(to, ptr, byteSize());
}

std::vector<int64_t>
zb::runner::makeDescriptor(void *data, const std::vector<int64_t> &shape) {
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

RankProgram::~RankProgram() {
  if (handle)
    dlclose(handle);
}

Expected<std::unique_ptr<RankProgram>>
zb::runner::loadRankProgram(const Plan &plan, int32_t rank,
                          const DataOptions &data, bool forRun,
                          StringRef paramsFile) {
  auto rp = std::make_unique<RankProgram>();
  rp->plan = &plan;
  rp->rank = rank;
  rp->seed = data.seed;
  rp->targetShift = data.targetShift;
  if (Error e = loadLibrary(*rp, plan, forRun))
    return std::move(e);
  if (Error e = loadParams(*rp, plan, paramsFile))
    return std::move(e);
  if (Error e = loadData(*rp, plan, data))
    return std::move(e);
  buildDescriptors(*rp, plan);
  return std::move(rp);
}

/// The seed of the validation batches: apart from the training batches'.
static constexpr uint64_t kValidationSeedSalt = 0x76616c6964617465ull;

int64_t RankProgram::globalMicrobatches() const {
  return (int64_t)dataParallel * plan->numMicrobatches;
}

Error zb::runner::fillInputs(RankProgram &rp, int64_t step, Split split) {
  const Plan &plan = *rp.plan;
  // This pipeline's part [first, first + batch) of the step's samples.
  const int64_t batch = plan.numMicrobatches * plan.microbatchSize;
  const int64_t first = rp.pipeline * batch;
  const int64_t globalBatch = rp.dataParallel * batch;
  const bool val = split == Split::Validation;
  // Cut on the host, then one copy into the buffer (on a GPU, host writes
  // into managed memory would move its pages to the host every step).
  std::vector<char> host;
  for (auto &[index, buf] : rp.inputs) {
    host.assign(buf.byteSize(), 0);
    const InputInfo &in = plan.inputs[index];
    if (rp.trainTokens) {
      const TokenSource &source = val ? *rp.valTokens : *rp.trainTokens;
      if (Error e = cutTokens(source, val ? rp.seed ^ kValidationSeedSalt : rp.seed,
                              step, batch, in.sampleShape[0],
                              /*shift=*/index * rp.targetShift, in.dtype,
                              host.data(),
                              in.indexRange, in.name, first))
        return e;
    } else {
      const Dataset &ds = (val ? rp.valDatasets : rp.datasets).at(index);
      for (int64_t t = 0; t < batch; ++t) {
        int64_t sample = (step * globalBatch + first + t) % ds.numSamples;
        std::memcpy(host.data() + t * ds.sampleBytes(),
                    ds.bytes.data() + sample * ds.sampleBytes(),
                    (size_t)ds.sampleBytes());
      }
    }
    buf.upload(host.data());
  }
  return Error::success();
}

void zb::runner::applyOptimizer(RankProgram &rp, const OptimizerInfo &opt,
                              int64_t step) {
  const float gradScale = 1.0f / (float)rp.globalMicrobatches();
  for (auto &[index, g] : rp.grads) {
    Buffer &p = rp.params.at(index);
    if (opt.kind == zb::Optimizer::AdamW)
      zbrt_adamw_step(p.data(), g.data(), rp.adamM.at(index).data(),
                      rp.adamV.at(index).data(), g.size(), step + 1,
                      (float)opt.lr, (float)opt.beta1, (float)opt.beta2,
                      (float)opt.eps, (float)opt.weightDecay, gradScale);
    else
      zbrt_sgd_step(p.data(), g.data(), g.size(), (float)opt.lr, gradScale);
  }
}

Error zb::runner::readParamLayout(const RankProgram &rp, StringRef file,
                                std::map<int64_t, Buffer> &into) {
  auto buf = MemoryBuffer::getFile(file, /*IsText=*/false,
                                   /*RequiresNullTerminator=*/false);
  if (!buf)
    return makeError(file + ": cannot read: " + buf.getError().message());
  if (Error e = checkParamsFileSize(file, (*buf)->getBuffer(), *rp.plan))
    return e;
  for (const auto &[index, p] : rp.params) {
    const ParamInfo &info = rp.plan->params[index];
    Buffer out(info.numElements());
    if (Error e = readParam(file, (*buf)->getBuffer(), info.name,
                            info.offsetBytes, info.numElements(), out.data()))
      return e;
    into[index] = std::move(out);
  }
  return Error::success();
}

void RankProgram::swapGradientBuffers() {
  if (!gradArenaPrevious.bytes()) { // the first swap (also with no gradients)
    for (auto &[index, g] : grads)
      gradsPrevious[index] = Buffer();
    gradArenaPrevious = gradientArena(*plan, gradsPrevious);
  }
  std::swap(grads, gradsPrevious);
  std::swap(gradArena, gradArenaPrevious);
  const auto &args = plan->ranks[rank].args;
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].kind == ArgKind::Grad) {
      // { allocated, aligned, offset, sizes..., strides... }
      auto data = (int64_t)(intptr_t)grads.at(args[i].index).data();
      descriptors[i][0] = data;
      descriptors[i][1] = data;
    }
}

void zb::runner::clearOutputs(RankProgram &rp) {
  rp.gradArena.zero();
  rp.loss.zero();
}
