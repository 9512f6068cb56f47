//===- Data.h - zb-run: parameters and training data ------------*- C++ -*-===//
//
// params.bin (float32 little-endian at each parameter's offset_bytes), the
// dataset DATA/input_<i>.pb (serialized ONNX TensorProto, shape
// [N] + sample_shape) and text data for language models (bytes or UTF-8
// characters as tokens). See docs/plan-json.md. Part of ZBRunner
// (compiled with exceptions: the ONNX protobuf classes need them).
//
//===----------------------------------------------------------------------===//
#ifndef ZB_RUNNER_DATA_H
#define ZB_RUNNER_DATA_H

#include "zb/Formats/Plan.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace zb::runner {

// The plan's types and readers (lib/Formats), which the runner speaks.
using formats::DType;
using formats::InputInfo;
using formats::ParamInfo;
using formats::Plan;
using formats::dtypeBytes;

/// A dataset tensor: numSamples samples of sampleElements elements of
/// `dtype` each, stored little-endian/native in `bytes`.
struct Dataset {
  std::string path;
  DType dtype = DType::Float32;
  int64_t numSamples = 0;
  int64_t sampleElements = 0;
  std::vector<char> bytes; ///< numSamples * sampleElements elements
  int64_t sampleBytes() const { return sampleElements * dtypeBytes(dtype); }
};

/// Reads a TensorProto file and checks its shape against
/// [N] + sampleShape (N >= 1), converting its elements to `dtype` (the
/// graph input's element type in plan.json):
///   file FLOAT        -> float32 only (an integer input given floats is an
///                        error);
///   file INT32/INT64  -> int64 or int32 (values outside int32 are an
///                        error), or float32 (converted).
/// `inputName` names the graph input in messages.
llvm::Expected<Dataset> readDataset(llvm::StringRef path,
                                    llvm::StringRef inputName,
                                    const std::vector<int64_t> &sampleShape,
                                    DType dtype = DType::Float32);
/// The same from the file's bytes (`path` names it in messages).
llvm::Expected<Dataset> parseDataset(llvm::StringRef bytes,
                                     llvm::StringRef path,
                                     llvm::StringRef inputName,
                                     const std::vector<int64_t> &sampleShape,
                                     DType dtype = DType::Float32);

/// How the bytes of a text data file become tokens (zb-run --text-vocab).
enum class TextVocab {
  Bytes, ///< token = byte value (vocabulary 256)
  Chars  ///< token = index of the UTF-8 code point in the sorted set of the
         ///< file's distinct code points
};

/// Text training data for language models: one token per byte (Bytes) or
/// per UTF-8 code point (Chars).
struct TextData {
  std::string path;
  TextVocab mode = TextVocab::Bytes;
  std::vector<int32_t> tokens; ///< one per byte / code point, in file order
  /// Chars: the sorted distinct code points (token t is vocabulary[t]).
  /// Bytes: empty (the vocabulary is the 256 byte values).
  std::vector<uint32_t> vocabulary;
  /// Number of possible token ids: 256 (Bytes) or vocabulary.size().
  int64_t vocabSize() const;
  /// Largest token id in the file (-1 when empty).
  int32_t maxToken() const;
};

/// Decodes strict UTF-8 (RFC 3629: no overlong forms, no surrogates
/// U+D800..U+DFFF, nothing above U+10FFFF, no truncated sequences) into
/// code points. Errors name `path` and the byte offset of the first
/// offending byte.
llvm::Expected<std::vector<uint32_t>> decodeUtf8(llvm::StringRef bytes,
                                                 llvm::StringRef path);

/// Builds the tokens of `contents` (the file's bytes) in mode `mode`.
/// Errors: empty text, invalid UTF-8 (Chars), fewer than seqLen + 2 tokens
/// for sequences of `seqLen` tokens; all name `path`.
llvm::Expected<TextData> makeText(llvm::StringRef contents,
                                  llvm::StringRef path, int64_t seqLen,
                                  TextVocab mode = TextVocab::Bytes);

/// Reads a text file and calls makeText.
llvm::Expected<TextData> readText(llvm::StringRef path, int64_t seqLen,
                                  TextVocab mode = TextVocab::Bytes);

/// The parameter zb-run takes as the token embedding of a language model:
/// the first parameter of rank 2 in plan.json order (the model's order; the
/// token embedding comes first in gen_gpt2.py, examples/gpt and the
/// torch.onnx exports of GPT-2). Its first dimension is the model's
/// vocabulary. nullptr when the plan has no 2-D parameter.
const ParamInfo *tokenEmbedding(const Plan &plan);

/// Checks that every token id of `text` indexes a row of the model's token
/// embedding (tokenEmbedding(plan)): Chars needs rows >= vocabSize(), Bytes
/// needs rows > the largest byte of the file. The error names the file, the
/// parameter and both numbers. No check when the plan has no 2-D parameter.
llvm::Error checkTextVocabulary(const TextData &text, const Plan &plan);

/// The vocabulary of Chars text as a JSON array of one-character strings
/// (token t = element t), written to `path`; decodes samples of a model
/// trained with --text-vocab=chars.
llvm::Error writeVocabularyJson(const TextData &text, llvm::StringRef path);

/// The line zb-run prints for text data:
///   "text FILE: N characters, vocabulary V" (Chars) or
///   "text FILE: N bytes, vocabulary 256"    (Bytes).
std::string describeText(const TextData &text);

/// One graph input's buffer for writeBatchJson: `data` holds
/// batch * info->sampleElements() elements of info->dtype.
struct BatchInput {
  const InputInfo *info = nullptr;
  const char *data = nullptr;
};

/// Writes the inputs of training step `step` (1-based, for the reader) as
///   {"step": S, "inputs": {"<name>": [[sample 0 elements], ...], ...}}
/// (each sample flattened; integers as JSON integers, float32 as numbers).
llvm::Error writeBatchJson(llvm::StringRef path, int64_t step, int64_t batch,
                           llvm::ArrayRef<BatchInput> inputs);

/// Offset (in tokens: bytes or code points) of sequence `index` (0-based
/// within the step) of training step `step` (0-based) in a text of
/// `numTokens` tokens:
///   splitmix64(seed * 0x9E3779B97F4A7C15 + step * 1000003 + index)
///     mod (numTokens - seqLen)   (arithmetic mod 2^64).
/// splitmix64 is Steele, Lea and Flood's SplittableRandom finaliser
/// (OOPSLA 2014), so the batches are a pure function of (seed, step, index)
/// whatever the number of ranks.
int64_t textOffset(uint64_t seed, int64_t step, int64_t index,
                   int64_t numTokens, int64_t seqLen);

/// Writes `count` sequences of step `step` into `out` (count x seqLen
/// elements of `dtype`): tokens are text.tokens[off, off + seqLen) and, with
/// `shift` = 1, targets are text.tokens[off + 1, off + seqLen + 1).
void cutText(const TextData &text, uint64_t seed, int64_t step, int64_t count,
             int64_t seqLen, int64_t shift, DType dtype, char *out);

/// Reads `count` floats at `offsetBytes` of an open params.bin image.
/// `bytes` is the whole file; errors name the file and parameter: a
/// negative offset or count, floats past the end (sizes checked in 64 bits
/// without overflow), a NaN or Inf value.
llvm::Error readParam(llvm::StringRef file, llvm::StringRef bytes,
                      llvm::StringRef paramName, int64_t offsetBytes,
                      int64_t count, float *out);

} // namespace zb::runner

#endif // ZB_RUNNER_DATA_H
