//===- Data.h - zb-run: parameters and training data ------------*- C++ -*-===//
//
// params.bin (float32 little-endian at each parameter's offset_bytes) and
// the dataset DATA/input_<i>.pb (serialized ONNX TensorProto, shape
// [N] + sample_shape). See docs/plan-json.md.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_TOOLS_ZBRUN_DATA_H
#define ZB_TOOLS_ZBRUN_DATA_H

#include "Plan.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace zb {
namespace run {

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

/// Text training data for language models: the bytes of a text file are
/// the tokens (vocabulary 256; the model's vocabulary must be >= 256).
struct TextData {
  std::string path;
  std::vector<uint8_t> bytes;
};

/// Reads a text file for sequences of `seqLen` tokens; the file must hold
/// at least seqLen + 2 bytes.
llvm::Expected<TextData> readText(llvm::StringRef path, int64_t seqLen);

/// Offset of sequence `index` (0-based within the step) of training step
/// `step` (0-based) in a text of `numBytes` bytes:
///   splitmix64(seed * 0x9E3779B97F4A7C15 + step * 1000003 + index)
///     mod (numBytes - seqLen)   (arithmetic mod 2^64).
/// splitmix64 is Steele, Lea and Flood's SplittableRandom finaliser
/// (OOPSLA 2014), so the batches are a pure function of (seed, step, index)
/// whatever the number of ranks.
int64_t textOffset(uint64_t seed, int64_t step, int64_t index,
                   int64_t numBytes, int64_t seqLen);

/// Writes `count` sequences of step `step` into `out` (count x seqLen
/// elements of `dtype`): tokens are bytes [off, off + seqLen) of the text
/// and, with `shift` = 1, targets are bytes [off + 1, off + seqLen + 1).
void cutText(const TextData &text, uint64_t seed, int64_t step, int64_t count,
             int64_t seqLen, int64_t shift, DType dtype, char *out);

/// Reads `count` floats at `offsetBytes` of an open params.bin image.
/// `bytes` is the whole file; errors name the file and parameter.
llvm::Error readParam(llvm::StringRef file, llvm::StringRef bytes,
                      llvm::StringRef paramName, int64_t offsetBytes,
                      int64_t count, float *out);

} // namespace run
} // namespace zb

#endif // ZB_TOOLS_ZBRUN_DATA_H
