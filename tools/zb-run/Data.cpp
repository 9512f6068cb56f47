//===- Data.cpp - zb-run: parameters and training data --------------------===//
//
// Includes ONNX/protobuf headers: compiled with exceptions (LLVM_REQUIRES_EH).
//
//===----------------------------------------------------------------------===//

#include "Data.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/FormatVariadic.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <fstream>

using namespace llvm;
using namespace zb::run;

namespace {

Error fail(StringRef path, const Twine &message) {
  return createStringError(inconvertibleErrorCode(), path + ": " + message);
}

std::string shapeString(ArrayRef<int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

} // namespace

Expected<Dataset>
zb::run::readDataset(StringRef path, StringRef inputName,
                     const std::vector<int64_t> &sampleShape) {
  std::ifstream in(path.str(), std::ios::binary);
  if (!in)
    return fail(path, "cannot open (data for graph input '" + inputName + "')");
  onnx::TensorProto tensor;
  if (!tensor.ParseFromIstream(&in))
    return fail(path, "not a serialized ONNX TensorProto");

  std::vector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
  std::vector<int64_t> expected = {-1};
  expected.insert(expected.end(), sampleShape.begin(), sampleShape.end());
  bool shapeOk =
      dims.size() == expected.size() && !dims.empty() && dims[0] >= 1;
  for (size_t i = 1; shapeOk && i < dims.size(); ++i)
    shapeOk = dims[i] == expected[i];
  if (!shapeOk)
    return fail(path, formatv("shape {0} does not match [N] + sample_shape "
                              "{1} of graph input '{2}' (N >= 1)",
                              shapeString(dims), shapeString(sampleShape),
                              inputName));

  Dataset ds;
  ds.path = path.str();
  ds.numSamples = dims[0];
  ds.sampleElements = 1;
  for (int64_t d : sampleShape)
    ds.sampleElements *= d;
  const int64_t total = ds.numSamples * ds.sampleElements;
  ds.values.resize(total);

  const std::string &raw = tensor.raw_data();
  auto sizeError = [&](int64_t have) {
    return fail(path, formatv("holds {0} elements, shape {1} needs {2}", have,
                              shapeString(dims), total));
  };
  switch (tensor.data_type()) {
  case onnx::TensorProto::FLOAT:
    if (!raw.empty()) {
      if ((int64_t)raw.size() != total * 4)
        return sizeError((int64_t)raw.size() / 4);
      for (int64_t i = 0; i < total; ++i)
        ds.values[i] =
            bit_cast<float>(support::endian::read32le(raw.data() + 4 * i));
    } else {
      if (tensor.float_data_size() != total)
        return sizeError(tensor.float_data_size());
      std::copy(tensor.float_data().begin(), tensor.float_data().end(),
                ds.values.begin());
    }
    break;
  case onnx::TensorProto::INT64:
    if (!raw.empty()) {
      if ((int64_t)raw.size() != total * 8)
        return sizeError((int64_t)raw.size() / 8);
      for (int64_t i = 0; i < total; ++i)
        ds.values[i] =
            (float)(int64_t)support::endian::read64le(raw.data() + 8 * i);
    } else {
      if (tensor.int64_data_size() != total)
        return sizeError(tensor.int64_data_size());
      for (int64_t i = 0; i < total; ++i)
        ds.values[i] = (float)tensor.int64_data(i);
    }
    break;
  case onnx::TensorProto::INT32:
    if (!raw.empty()) {
      if ((int64_t)raw.size() != total * 4)
        return sizeError((int64_t)raw.size() / 4);
      for (int64_t i = 0; i < total; ++i)
        ds.values[i] =
            (float)(int32_t)support::endian::read32le(raw.data() + 4 * i);
    } else {
      if (tensor.int32_data_size() != total)
        return sizeError(tensor.int32_data_size());
      for (int64_t i = 0; i < total; ++i)
        ds.values[i] = (float)tensor.int32_data(i);
    }
    break;
  default:
    return fail(path,
                formatv("element type {0} not supported (expected "
                        "float32; int32/int64 are converted)",
                        onnx::TensorProto::DataType_Name(
                            (onnx::TensorProto::DataType)tensor.data_type())));
  }
  return ds;
}

Error zb::run::readParam(StringRef file, StringRef bytes, StringRef paramName,
                         int64_t offsetBytes, int64_t count, float *out) {
  int64_t end = offsetBytes + 4 * count;
  if (offsetBytes < 0 || end > (int64_t)bytes.size())
    return fail(file, formatv("{0} bytes, but parameter '{1}' needs bytes "
                              "[{2}, {3})",
                              bytes.size(), paramName, offsetBytes, end));
  for (int64_t i = 0; i < count; ++i)
    out[i] = bit_cast<float>(
        support::endian::read32le(bytes.data() + offsetBytes + 4 * i));
  return Error::success();
}
