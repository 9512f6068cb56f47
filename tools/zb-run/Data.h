//===- Data.h - zb-run: parameters and training data ------------*- C++ -*-===//
//
// params.bin (float32 little-endian at each parameter's offset_bytes) and
// the dataset DATA/input_<i>.pb (serialized ONNX TensorProto, shape
// [N] + sample_shape). See docs/plan-json.md.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_TOOLS_ZBRUN_DATA_H
#define ZB_TOOLS_ZBRUN_DATA_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace zb {
namespace run {

/// A dataset tensor: numSamples samples of sampleElements floats each.
struct Dataset {
  std::string path;
  int64_t numSamples = 0;
  int64_t sampleElements = 0;
  std::vector<float> values; ///< numSamples * sampleElements, row-major
};

/// Reads a TensorProto file and checks its shape against
/// [N] + sampleShape (N >= 1). Element types: FLOAT; INT32 and INT64 are
/// accepted and converted to float (token ids). `inputName` names the graph
/// input in messages.
llvm::Expected<Dataset> readDataset(llvm::StringRef path,
                                    llvm::StringRef inputName,
                                    const std::vector<int64_t> &sampleShape);

/// Reads `count` floats at `offsetBytes` of an open params.bin image.
/// `bytes` is the whole file; errors name the file and parameter.
llvm::Error readParam(llvm::StringRef file, llvm::StringRef bytes,
                      llvm::StringRef paramName, int64_t offsetBytes,
                      int64_t count, float *out);

} // namespace run
} // namespace zb

#endif // ZB_TOOLS_ZBRUN_DATA_H
