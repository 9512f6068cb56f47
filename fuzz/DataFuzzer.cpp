//===- DataFuzzer.cpp - libFuzzer target for zb-run's training data -------===//
//
// Arbitrary bytes as zb-run's data: an input_<i>.pb TensorProto
// (zb::runner::parseDataset, for float32, int64 and int32 inputs of sample
// shape [2] and [3, 2]) and a text file (zb::runner::makeText, bytes and UTF-8
// characters). An accepted dataset holds exactly numSamples x
// sampleElements elements. Seed corpus fuzz/corpus/data.
//
//===----------------------------------------------------------------------===//

#include "zb/Runner/Data.h"

#include <cstdint>
#include <cstdlib>

using namespace zb::runner;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  for (DType dtype : {DType::Float32, DType::Int64, DType::Int32})
    for (const std::vector<int64_t> &shape :
         {std::vector<int64_t>{2}, std::vector<int64_t>{3, 2}}) {
      auto ds = parseDataset(bytes, "fuzz/input_0.pb", "x", shape, dtype);
      if (!ds) {
        llvm::consumeError(ds.takeError());
        continue;
      }
      int64_t elements = 1;
      for (int64_t d : shape)
        elements *= d;
      if (ds->numSamples < 1 || ds->sampleElements != elements ||
          (int64_t)ds->bytes.size() != ds->numSamples * ds->sampleBytes())
        std::abort();
    }
  for (TextVocab mode : {TextVocab::Bytes, TextVocab::Chars}) {
    auto text = makeText(bytes, "fuzz.txt", 4, mode);
    if (!text) {
      llvm::consumeError(text.takeError());
      continue;
    }
    for (int32_t t : text->tokens)
      if (t < 0 || t >= text->vocabSize())
        std::abort();
  }
  return 0;
}
