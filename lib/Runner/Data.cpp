//===- Data.cpp - zb-run: parameters and training data --------------------===//
//
// Includes ONNX/protobuf headers: compiled with exceptions (LLVM_REQUIRES_EH).
//
//===----------------------------------------------------------------------===//

#include "zb/Runner/Data.h"
#include "zb/Support/AtomicFile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <type_traits>

using namespace llvm;
using namespace zb::runner;
using namespace zb::formats;

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

namespace {

/// Element i of a little-endian raw_data buffer of T.
template <typename T> T readLittleEndian(const std::string &raw, int64_t i) {
  if constexpr (std::is_same_v<T, float>)
    return bit_cast<float>(llvm::support::endian::read32le(raw.data() + 4 * i));
  else
    return (T)llvm::support::endian::read<std::make_unsigned_t<T>,
                                    llvm::endianness::little>(raw.data() +
                                                              sizeof(T) * i);
}

/// Reads a dataset's tensor: checks its shape, then converts its elements to
/// the graph input's dtype (readDataset's contract).
class DatasetReader {
public:
  DatasetReader(StringRef path, StringRef inputName, DType dtype)
      : path(path), inputName(inputName), dtype(dtype) {}

  Expected<Dataset> read(const onnx::TensorProto &tensor,
                         const std::vector<int64_t> &sampleShape) {
    dims.assign(tensor.dims().begin(), tensor.dims().end());
    if (Error e = checkShape(sampleShape))
      return std::move(e);
    ds.path = path.str();
    ds.dtype = dtype;
    ds.numSamples = dims[0];
    ds.sampleElements = 1;
    for (int64_t d : sampleShape)
      ds.sampleElements *= d;
    // N comes from the file: the element count in 64 bits without
    // overflow; memory only after the data is known to be there (copy()).
    if (__builtin_mul_overflow(ds.numSamples, ds.sampleElements, &total) ||
        total > (int64_t(1) << 40))
      return fail(path, formatv("shape {0} has more than 2^40 elements",
                                shapeString(dims)));
    if (Error e = convert(tensor))
      return std::move(e);
    return std::move(ds);
  }

private:
  Error checkShape(const std::vector<int64_t> &sampleShape) const {
    bool ok = dims.size() == sampleShape.size() + 1 && dims[0] >= 1;
    for (size_t i = 1; ok && i < dims.size(); ++i)
      ok = dims[i] == sampleShape[i - 1];
    if (ok)
      return Error::success();
    return fail(path, formatv("shape {0} does not match [N] + sample_shape "
                              "{1} of graph input '{2}' (N >= 1)",
                              shapeString(dims), shapeString(sampleShape),
                              inputName));
  }

  Error convert(const onnx::TensorProto &tensor) {
    const std::string &raw = tensor.raw_data();
    switch (tensor.data_type()) {
    case onnx::TensorProto::FLOAT:
      if (dtype != DType::Float32)
        return fail(path, formatv("holds FLOAT values, but graph input '{0}' "
                                  "is {1} (write INT64 or INT32 data)",
                                  inputName, dtypeName(dtype)));
      return copy<float>(raw, tensor.float_data());
    case onnx::TensorProto::INT64:
      return copy<int64_t>(raw, tensor.int64_data());
    case onnx::TensorProto::INT32:
      return copy<int32_t>(raw, tensor.int32_data());
    default:
      return fail(
          path, formatv("element type {0} not supported (expected "
                        "FLOAT, INT64 or INT32)",
                        onnx::TensorProto::DataType_Name(
                            (onnx::TensorProto::DataType)tensor.data_type())));
    }
  }

  /// Copies the `total` elements of T from raw_data (when set) or the typed
  /// repeated field.
  template <typename T, typename Repeated>
  Error copy(const std::string &raw, const Repeated &typed) {
    const bool fromRaw = !raw.empty();
    const int64_t have =
        fromRaw ? (int64_t)(raw.size() / sizeof(T)) : (int64_t)typed.size();
    if ((fromRaw && (int64_t)raw.size() != total * (int64_t)sizeof(T)) ||
        (!fromRaw && have != total))
      return fail(path, formatv("holds {0} elements, shape {1} needs {2}", have,
                                shapeString(dims), total));
    ds.bytes.resize((size_t)(total * dtypeBytes(dtype)));
    for (int64_t i = 0; i < total; ++i) {
      T v = fromRaw ? readLittleEndian<T>(raw, i) : (T)typed.Get((int)i);
      if (Error e = store(i, v))
        return e;
    }
    return Error::success();
  }

  /// Stores element i in the input's type.
  Error store(int64_t i, float f) {
    std::memcpy(ds.bytes.data() + 4 * i, &f, 4);
    return Error::success();
  }
  Error store(int64_t i, int64_t v) {
    switch (dtype) {
    case DType::Float32:
      return store(i, (float)v);
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
  }
  Error store(int64_t i, int32_t v) { return store(i, (int64_t)v); }

  StringRef path, inputName;
  DType dtype;
  std::vector<int64_t> dims;
  int64_t total = 0;
  Dataset ds;
};

} // namespace

Expected<Dataset> zb::runner::readDataset(StringRef path, StringRef inputName,
                                        const std::vector<int64_t> &sampleShape,
                                        DType dtype) {
  std::ifstream in(path.str(), std::ios::binary);
  if (!in)
    return fail(path, "cannot open (data for graph input '" + inputName + "')");
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  return parseDataset(bytes, path, inputName, sampleShape, dtype);
}

Expected<Dataset> zb::runner::parseDataset(StringRef bytes, StringRef path,
                                         StringRef inputName,
                                         const std::vector<int64_t> &sampleShape,
                                         DType dtype) {
  onnx::TensorProto tensor;
  if (bytes.size() > (size_t)INT_MAX ||
      !tensor.ParseFromArray(bytes.data(), (int)bytes.size()))
    return fail(path, "not a serialized ONNX TensorProto");
  return DatasetReader(path, inputName, dtype).read(tensor, sampleShape);
}

Error zb::runner::readParam(StringRef file, StringRef bytes, StringRef paramName,
                          int64_t offsetBytes, int64_t count, float *out) {
  const int64_t size = (int64_t)bytes.size();
  if (offsetBytes < 0 || count < 0)
    return fail(file, formatv("parameter '{0}': offset {1} and element count "
                              "{2} must be >= 0",
                              paramName, offsetBytes, count));
  // In 64 bits without overflow: count floats fit after offsetBytes.
  if (offsetBytes > size || count > (size - offsetBytes) / 4)
    return fail(file, formatv("{0} bytes, but parameter '{1}' needs {2} "
                              "floats from byte {3}",
                              size, paramName, count, offsetBytes));
  for (int64_t i = 0; i < count; ++i) {
    out[i] = bit_cast<float>(
        llvm::support::endian::read32le(bytes.data() + offsetBytes + 4 * i));
    // A NaN or Inf start value would train on silently (every loss NaN).
    if (!std::isfinite(out[i]))
      return fail(file, formatv("parameter '{0}' element {1} is {2}: "
                                "refusing to train from a non-finite value",
                                paramName, i, out[i]));
  }
  return Error::success();
}

int64_t TextData::vocabSize() const {
  return mode == TextVocab::Bytes ? 256 : (int64_t)vocabulary.size();
}

int32_t TextData::maxToken() const {
  int32_t m = -1;
  for (int32_t t : tokens)
    m = std::max(m, t);
  return m;
}

Expected<std::vector<uint32_t>> zb::runner::decodeUtf8(StringRef bytes,
                                                     StringRef path) {
  std::vector<uint32_t> out;
  out.reserve(bytes.size());
  const auto *p = reinterpret_cast<const uint8_t *>(bytes.data());
  const size_t n = bytes.size();
  auto bad = [&](size_t at, const Twine &why) {
    return fail(path, formatv("invalid UTF-8 at byte offset {0} (byte "
                              "0x{1:X-2}): {2}",
                              at, (unsigned)p[at], why.str()));
  };
  for (size_t i = 0; i < n;) {
    uint8_t c = p[i];
    if (c < 0x80) {
      out.push_back(c);
      ++i;
      continue;
    }
    int len;
    uint32_t cp, min;
    if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07, min = 0x10000;
    } else if ((c & 0xC0) == 0x80) {
      return bad(i, "continuation byte without a lead byte");
    } else {
      return bad(i, "not a UTF-8 lead byte");
    }
    for (int k = 1; k < len; ++k) {
      if (i + k >= n)
        return bad(i, formatv("sequence of {0} bytes cut by the end of the "
                              "file",
                              len));
      if ((p[i + k] & 0xC0) != 0x80)
        return bad(i, formatv("byte {0} of a {1}-byte sequence is not a "
                              "continuation byte",
                              k + 1, len));
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if (cp < min)
      return bad(i, formatv("overlong encoding of U+{0:X-4}", cp));
    if (cp >= 0xD800 && cp <= 0xDFFF)
      return bad(i, formatv("surrogate U+{0:X-4}", cp));
    if (cp > 0x10FFFF)
      return bad(i, formatv("code point 0x{0:X-} above U+10FFFF", cp));
    out.push_back(cp);
    i += len;
  }
  return out;
}

Expected<TextData> zb::runner::makeText(StringRef contents, StringRef path,
                                      int64_t seqLen, TextVocab mode) {
  TextData text;
  text.path = path.str();
  text.mode = mode;
  if (contents.empty())
    return fail(path, "empty text file");
  const char *unit = "bytes";
  if (mode == TextVocab::Bytes) {
    text.tokens.reserve(contents.size());
    for (char c : contents)
      text.tokens.push_back((uint8_t)c);
  } else {
    unit = "characters";
    Expected<std::vector<uint32_t>> cps = decodeUtf8(contents, path);
    if (!cps)
      return cps.takeError();
    text.vocabulary = *cps;
    llvm::sort(text.vocabulary);
    text.vocabulary.erase(
        std::unique(text.vocabulary.begin(), text.vocabulary.end()),
        text.vocabulary.end());
    text.tokens.reserve(cps->size());
    for (uint32_t cp : *cps)
      text.tokens.push_back((int32_t)(llvm::lower_bound(text.vocabulary, cp) -
                                      text.vocabulary.begin()));
  }
  if ((int64_t)text.tokens.size() < seqLen + 2)
    return fail(path, formatv("{0} {1} of text, but sequences of {2} "
                              "tokens need at least {3}",
                              text.tokens.size(), unit, seqLen, seqLen + 2));
  return text;
}

Expected<TextData> zb::runner::readText(StringRef path, int64_t seqLen,
                                      TextVocab mode) {
  std::ifstream in(path.str(), std::ios::binary);
  if (!in)
    return fail(path, "cannot open text data");
  std::string contents((std::istreambuf_iterator<char>(in)),
                       std::istreambuf_iterator<char>());
  if (in.bad())
    return fail(path, "cannot read text data");
  return makeText(contents, path, seqLen, mode);
}

const ParamInfo *zb::runner::tokenEmbedding(const Plan &plan) {
  for (const ParamInfo &p : plan.params)
    if (p.shape.size() == 2)
      return &p;
  return nullptr;
}

Error zb::runner::checkTextVocabulary(const TextData &text, const Plan &plan) {
  const ParamInfo *emb = tokenEmbedding(plan);
  if (!emb)
    return Error::success();
  const int64_t rows = emb->shape[0];
  if (text.mode == TextVocab::Chars) {
    if (text.vocabSize() > rows)
      return fail(text.path,
                  formatv("vocabulary of {0} characters (--text-vocab=chars), "
                          "but the model's token embedding '{1}' (the first "
                          "2-D parameter of {2}) has {3} rows: build the "
                          "model with a vocabulary of at least {0}",
                          text.vocabSize(), emb->name, plan.path, rows));
    return Error::success();
  }
  int32_t maxByte = text.maxToken();
  if (maxByte >= rows) {
    int64_t at = std::find(text.tokens.begin(), text.tokens.end(), maxByte) -
                 text.tokens.begin();
    return fail(text.path,
                formatv("byte 0x{0:X-2} at offset {1} is token {2}, but the "
                        "model's token embedding '{3}' (the first 2-D "
                        "parameter of {4}) has {5} rows (--text-vocab=bytes "
                        "needs a vocabulary of 256, or try "
                        "--text-vocab=chars)",
                        (unsigned)maxByte, at, maxByte, emb->name, plan.path,
                        rows));
  }
  return Error::success();
}

Error zb::runner::writeVocabularyJson(const TextData &text, StringRef path) {
  json::Array chars;
  for (uint32_t cp : text.vocabulary) {
    std::string s;
    if (cp < 0x80) {
      s += (char)cp;
    } else if (cp < 0x800) {
      s += (char)(0xC0 | (cp >> 6));
      s += (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += (char)(0xE0 | (cp >> 12));
      s += (char)(0x80 | ((cp >> 6) & 0x3F));
      s += (char)(0x80 | (cp & 0x3F));
    } else {
      s += (char)(0xF0 | (cp >> 18));
      s += (char)(0x80 | ((cp >> 12) & 0x3F));
      s += (char)(0x80 | ((cp >> 6) & 0x3F));
      s += (char)(0x80 | (cp & 0x3F));
    }
    chars.push_back(std::move(s));
  }
  return zb::support::writeFileAtomically(path, [&](raw_ostream &os) {
    os << formatv("{0:2}", json::Value(std::move(chars))) << "\n";
    return Error::success();
  });
}

std::string zb::runner::describeText(const TextData &text) {
  return formatv("text {0}: {1} {2}, vocabulary {3}", text.path,
                 text.tokens.size(),
                 text.mode == TextVocab::Chars ? "characters" : "bytes",
                 text.vocabSize())
      .str();
}

Error zb::runner::writeBatchJson(StringRef path, int64_t step, int64_t batch,
                               ArrayRef<BatchInput> inputs) {
  // Atomically (a symlink at `path` is replaced, not followed; a full disk
  // is one line naming the file): zb/Support/AtomicFile.h.
  return zb::support::writeFileAtomically(path, [&](raw_ostream &os) -> Error {
  json::OStream j(os);
  j.object([&] {
    j.attribute("step", step);
    j.attributeObject("inputs", [&] {
      for (const BatchInput &in : inputs) {
        const int64_t n = in.info->sampleElements();
        j.attributeArray(in.info->name, [&] {
          for (int64_t t = 0; t < batch; ++t)
            j.array([&] {
              for (int64_t e = 0; e < n; ++e) {
                int64_t i = t * n + e;
                switch (in.info->dtype) {
                case DType::Int64: {
                  int64_t v;
                  std::memcpy(&v, in.data + 8 * i, 8);
                  j.value(v);
                  break;
                }
                case DType::Int32: {
                  int32_t v;
                  std::memcpy(&v, in.data + 4 * i, 4);
                  j.value((int64_t)v);
                  break;
                }
                case DType::Float32: {
                  float v;
                  std::memcpy(&v, in.data + 4 * i, 4);
                  j.value((double)v);
                  break;
                }
                }
              }
            });
        });
      }
    });
  });
  os << "\n";
  return Error::success();
  });
}

static uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

int64_t zb::runner::textOffset(uint64_t seed, int64_t step, int64_t index,
                             int64_t numTokens, int64_t seqLen) {
  uint64_t key = seed * 0x9E3779B97F4A7C15ull + (uint64_t)step * 1000003ull +
                 (uint64_t)index;
  return (int64_t)(splitmix64(key) % (uint64_t)(numTokens - seqLen));
}

void zb::runner::cutText(const TextData &text, uint64_t seed, int64_t step,
                       int64_t count, int64_t seqLen, int64_t shift,
                       DType dtype, char *out) {
  const int64_t n = (int64_t)text.tokens.size();
  for (int64_t j = 0; j < count; ++j) {
    int64_t off = textOffset(seed, step, j, n, seqLen) + shift;
    for (int64_t t = 0; t < seqLen; ++t) {
      int64_t v = text.tokens[off + t];
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
