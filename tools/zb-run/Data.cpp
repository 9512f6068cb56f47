//===- Data.cpp - zb-run: parameters and training data --------------------===//
//
// Includes ONNX/protobuf headers: compiled with exceptions (LLVM_REQUIRES_EH).
//
//===----------------------------------------------------------------------===//

#include "Data.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/FormatVariadic.h"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>

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
                     const std::vector<int64_t> &sampleShape, DType dtype) {
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
  ds.dtype = dtype;
  ds.numSamples = dims[0];
  ds.sampleElements = 1;
  for (int64_t d : sampleShape)
    ds.sampleElements *= d;
  const int64_t total = ds.numSamples * ds.sampleElements;
  ds.bytes.resize((size_t)(total * dtypeBytes(dtype)));

  const std::string &raw = tensor.raw_data();
  auto sizeError = [&](int64_t have) {
    return fail(path, formatv("holds {0} elements, shape {1} needs {2}", have,
                              shapeString(dims), total));
  };
  auto typeName = [&] {
    return onnx::TensorProto::DataType_Name(
        (onnx::TensorProto::DataType)tensor.data_type());
  };
  // Stores element i (given as float or integer) in the input's type.
  auto storeFloat = [&](int64_t i, float f) {
    std::memcpy(ds.bytes.data() + 4 * i, &f, 4);
  };
  auto storeInt = [&](int64_t i, int64_t v) -> Error {
    switch (dtype) {
    case DType::Float32:
      storeFloat(i, (float)v);
      break;
    case DType::Int64:
      std::memcpy(ds.bytes.data() + 8 * i, &v, 8);
      break;
    case DType::Int32: {
      if (v < INT32_MIN || v > INT32_MAX)
        return fail(path, formatv("element {0} = {1} does not fit the int32 "
                                  "graph input '{2}'",
                                  i, v, inputName));
      int32_t w = (int32_t)v;
      std::memcpy(ds.bytes.data() + 4 * i, &w, 4);
      break;
    }
    }
    return Error::success();
  };

  switch (tensor.data_type()) {
  case onnx::TensorProto::FLOAT:
    if (dtype != DType::Float32)
      return fail(path, formatv("holds FLOAT values, but graph input '{0}' "
                                "is {1} (write INT64 or INT32 data)",
                                inputName, dtypeName(dtype)));
    if (!raw.empty()) {
      if ((int64_t)raw.size() != total * 4)
        return sizeError((int64_t)raw.size() / 4);
      for (int64_t i = 0; i < total; ++i)
        storeFloat(i, bit_cast<float>(
                          support::endian::read32le(raw.data() + 4 * i)));
    } else {
      if (tensor.float_data_size() != total)
        return sizeError(tensor.float_data_size());
      for (int64_t i = 0; i < total; ++i)
        storeFloat(i, tensor.float_data(i));
    }
    break;
  case onnx::TensorProto::INT64:
    if (!raw.empty()) {
      if ((int64_t)raw.size() != total * 8)
        return sizeError((int64_t)raw.size() / 8);
      for (int64_t i = 0; i < total; ++i)
        if (Error e = storeInt(
                i, (int64_t)support::endian::read64le(raw.data() + 8 * i)))
          return std::move(e);
    } else {
      if (tensor.int64_data_size() != total)
        return sizeError(tensor.int64_data_size());
      for (int64_t i = 0; i < total; ++i)
        if (Error e = storeInt(i, tensor.int64_data(i)))
          return std::move(e);
    }
    break;
  case onnx::TensorProto::INT32:
    if (!raw.empty()) {
      if ((int64_t)raw.size() != total * 4)
        return sizeError((int64_t)raw.size() / 4);
      for (int64_t i = 0; i < total; ++i)
        if (Error e = storeInt(
                i, (int32_t)support::endian::read32le(raw.data() + 4 * i)))
          return std::move(e);
    } else {
      if (tensor.int32_data_size() != total)
        return sizeError(tensor.int32_data_size());
      for (int64_t i = 0; i < total; ++i)
        if (Error e = storeInt(i, tensor.int32_data(i)))
          return std::move(e);
    }
    break;
  default:
    return fail(path, formatv("element type {0} not supported (expected "
                              "FLOAT, INT64 or INT32)",
                              typeName()));
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

Expected<TextData> zb::run::readText(StringRef path, int64_t seqLen) {
  std::ifstream in(path.str(), std::ios::binary);
  if (!in)
    return fail(path, "cannot open text data");
  TextData text;
  text.path = path.str();
  text.bytes.assign(std::istreambuf_iterator<char>(in),
                    std::istreambuf_iterator<char>());
  if ((int64_t)text.bytes.size() < seqLen + 2)
    return fail(path, formatv("{0} bytes of text, but sequences of {1} "
                              "tokens need at least {2}",
                              text.bytes.size(), seqLen, seqLen + 2));
  return text;
}

static uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

int64_t zb::run::textOffset(uint64_t seed, int64_t step, int64_t index,
                            int64_t numBytes, int64_t seqLen) {
  uint64_t key = seed * 0x9E3779B97F4A7C15ull + (uint64_t)step * 1000003ull +
                 (uint64_t)index;
  return (int64_t)(splitmix64(key) % (uint64_t)(numBytes - seqLen));
}

void zb::run::cutText(const TextData &text, uint64_t seed, int64_t step,
                      int64_t count, int64_t seqLen, int64_t shift,
                      DType dtype, char *out) {
  const int64_t n = (int64_t)text.bytes.size();
  for (int64_t j = 0; j < count; ++j) {
    int64_t off = textOffset(seed, step, j, n, seqLen) + shift;
    for (int64_t t = 0; t < seqLen; ++t) {
      int64_t v = text.bytes[off + t];
      int64_t i = j * seqLen + t;
      switch (dtype) {
      case DType::Int64:
        std::memcpy(out + 8 * i, &v, 8);
        break;
      case DType::Int32: {
        int32_t w = (int32_t)v;
        std::memcpy(out + 4 * i, &w, 4);
        break;
      }
      case DType::Float32: {
        float f = (float)v;
        std::memcpy(out + 4 * i, &f, 4);
        break;
      }
      }
    }
  }
}
