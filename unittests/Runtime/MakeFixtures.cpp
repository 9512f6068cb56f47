//===- MakeFixtures.cpp - Writes params.bin and input_0.pb fixtures -------===//
//
//   zbrt-make-fixtures DIR...
//
// Writes DIR/params.bin (float32 little-endian) and DIR/input_0.pb (an ONNX
// TensorProto, float32, shape [kNumSamples, kSampleSize]) for the zb-run
// tests, with the values of FakeData.h. params.bin is as long as
// DIR/plan.json's parameters (zb-run refuses a longer one).
//
//===----------------------------------------------------------------------===//

#include "FakeData.h"

#include <onnx/onnx_pb.h>

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

using namespace zbtest;

int main(int argc, char **argv) {
  for (int a = 1; a < argc; ++a) {
    std::string dir = argv[a];
    std::vector<float> params = fakeParams();
    // The plan's parameters end at max(offset_bytes + 4 * elements).
    if (auto text = llvm::MemoryBuffer::getFile(dir + "/plan.json")) {
      if (auto plan = llvm::json::parse((*text)->getBuffer())) {
        size_t end = 0;
        if (const llvm::json::Array *ps =
                plan->getAsObject()->getArray("params"))
          for (const llvm::json::Value &p : *ps) {
            const llvm::json::Object *o = p.getAsObject();
            size_t n = 1;
            if (const llvm::json::Array *shape = o->getArray("shape"))
              for (const llvm::json::Value &d : *shape)
                n *= (size_t)d.getAsInteger().value_or(1);
            end = std::max(end, (size_t)o->getInteger("offset_bytes")
                                        .value_or(0) / 4 + n);
          }
        if (end > 0 && end < params.size())
          params.resize(end);
      } else {
        llvm::consumeError(plan.takeError());
      }
    }
    std::ofstream pb(dir + "/params.bin", std::ios::binary);
    pb.write(reinterpret_cast<const char *>(params.data()),
             params.size() * sizeof(float));
    onnx::TensorProto tensor;
    tensor.set_name("x");
    tensor.set_data_type(onnx::TensorProto::FLOAT);
    tensor.add_dims(kNumSamples);
    tensor.add_dims(kSampleSize);
    for (int64_t s = 0; s < kNumSamples; ++s)
      for (int64_t i = 0; i < kSampleSize; ++i)
        tensor.add_float_data(fakeSample(s, i));
    std::ofstream in(dir + "/input_0.pb", std::ios::binary);
    if (!pb || !tensor.SerializeToOstream(&in) || !in) {
      std::fprintf(stderr, "zbrt-make-fixtures: cannot write into %s\n",
                   dir.c_str());
      return 1;
    }
  }
  return 0;
}
