//===- Tokens.cpp - zb-run: token data of language models -----------------===//
//
// See zb/Runner/Tokens.h.
//
//===----------------------------------------------------------------------===//

#include "zb/Runner/Tokens.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <cstring>
#include <vector>

using namespace llvm;
using namespace zb::runner;
using namespace zb::formats;

namespace {

Error fail(StringRef path, const Twine &message) {
  return createStringError(inconvertibleErrorCode(), path + ": " + message);
}

// llm.c's dev/data/data_common.py: magic and version per token width.
constexpr int32_t kLlmcMagic16 = 20240520, kLlmcVersion16 = 1;
constexpr int32_t kLlmcMagic32 = 20240801, kLlmcVersion32 = 7;
constexpr uint64_t kLlmcHeaderBytes = 256 * 4;

/// Reads exactly `size` bytes at `offset` (pread until done).
Error readAt(sys::fs::file_t fd, StringRef path, uint64_t offset, char *into,
             size_t size) {
  while (size > 0) {
    Expected<size_t> got = sys::fs::readNativeFileSlice(
        fd, MutableArrayRef<char>(into, size), offset);
    if (!got)
      return fail(path, "cannot read: " + toString(got.takeError()));
    if (*got == 0)
      return fail(path, formatv("cannot read: the file ends at byte {0}",
                                offset));
    into += *got;
    offset += *got;
    size -= *got;
  }
  return Error::success();
}

/// The value of `key` in an npy header dict ("'descr': '<u2', ..."): the
/// text after "'key':" up to the next top-level comma or the closing brace.
std::optional<StringRef> npyField(StringRef header, StringRef key) {
  size_t at = header.find(("'" + key + "'").str());
  if (at == StringRef::npos)
    return std::nullopt;
  StringRef rest = header.drop_front(at + key.size() + 2).ltrim();
  if (!rest.consume_front(":"))
    return std::nullopt;
  rest = rest.ltrim();
  if (rest.starts_with("(")) // a shape tuple
    return rest.take_until([](char c) { return c == ')'; }).drop_front();
  return rest.take_until([](char c) { return c == ',' || c == '}'; }).trim();
}

} // namespace

const char *zb::runner::tokenFileFormatName(TokenFileFormat format) {
  switch (format) {
  case TokenFileFormat::Raw:
    return "raw";
  case TokenFileFormat::LlmC:
    return "llm.c";
  case TokenFileFormat::Npy:
    return "npy";
  }
  return "?";
}

bool zb::runner::isTokenFile(StringRef path) {
  StringRef ext = sys::path::extension(path);
  if (ext == ".bin" || ext == ".npy")
    return true;
  Expected<sys::fs::file_t> fd = sys::fs::openNativeFileForRead(path);
  if (!fd) {
    consumeError(fd.takeError());
    return false;
  }
  char head[4] = {};
  Error e = readAt(*fd, path, 0, head, 4);
  sys::fs::closeFile(*fd);
  if (e) {
    consumeError(std::move(e));
    return false;
  }
  int32_t magic = (int32_t)support::endian::read32le(head);
  return magic == kLlmcMagic16 || magic == kLlmcMagic32;
}

Expected<TokenFileLayout>
zb::runner::parseTokenFileLayout(StringRef head, uint64_t size,
                                 TokenDType rawDType, StringRef path) {
  TokenFileLayout l;
  char first[16] = {};
  std::memcpy(first, head.data(), std::min<size_t>(head.size(), 16));
  const int32_t magic = (int32_t)support::endian::read32le(first);
  if (head.size() >= 10 && head.starts_with("\x93NUMPY")) {
    // NumPy's format (numpy.lib.format): magic, version, header length, a
    // Python dict literal padded with spaces.
    l.format = TokenFileFormat::Npy;
    const unsigned major = (unsigned char)first[6];
    if (major < 1 || major > 3)
      return fail(path, formatv("npy format version {0} is not 1, 2 or 3",
                                major));
    const uint64_t lenBytes = major == 1 ? 2 : 4;
    const uint64_t headerLen = major == 1
                                   ? support::endian::read16le(first + 8)
                                   : support::endian::read32le(first + 8);
    l.dataOffset = 8 + lenBytes + headerLen;
    if (l.dataOffset > head.size() || l.dataOffset > size)
      return fail(path, "npy header runs past the end of the file");
    StringRef header = head.substr(8 + lenBytes, headerLen);
    std::optional<StringRef> descr = npyField(header, "descr");
    std::optional<StringRef> order = npyField(header, "fortran_order");
    std::optional<StringRef> shape = npyField(header, "shape");
    if (!descr || !order || !shape)
      return fail(path, "npy header without descr, fortran_order or shape: " +
                            header.trim());
    StringRef d = descr->trim("'\" ");
    if (d == "<u2")
      l.idBytes = 2;
    else if (d == "<u4")
      l.idBytes = 4;
    else if (d == "<i4")
      l.idBytes = 4, l.isSigned = true;
    else if (d == "<i8")
      l.idBytes = 8, l.isSigned = true;
    else
      return fail(path, "npy dtype '" + d +
                            "' is not a token id type (<u2, <u4, <i4, <i8)");
    if (order->trim() != "False")
      return fail(path, "npy array in Fortran order (write it C-ordered)");
    SmallVector<StringRef> dims;
    shape->split(dims, ',', -1, /*KeepEmpty=*/false);
    uint64_t n = 0;
    if (dims.size() != 1 || dims[0].trim().getAsInteger(10, n))
      return fail(path, "npy array of shape (" + *shape +
                            "): token data must be 1-D");
    const uint64_t payload = size - l.dataOffset;
    if (n > payload / (uint64_t)l.idBytes)
      return fail(path, formatv("npy shape ({0},) needs {1} ids of {2} bytes, "
                                "the file has {3} bytes of data",
                                n, n, l.idBytes, payload));
    l.numTokens = (int64_t)n;
  } else if (size >= kLlmcHeaderBytes && head.size() >= 16 &&
             (magic == kLlmcMagic16 || magic == kLlmcMagic32)) {
    l.format = TokenFileFormat::LlmC;
    const int32_t version = (int32_t)support::endian::read32le(first + 4);
    const int64_t n = (int32_t)support::endian::read32le(first + 8);
    const int32_t want =
        magic == kLlmcMagic16 ? kLlmcVersion16 : kLlmcVersion32;
    if (version != want)
      return fail(path, formatv("llm.c header: magic {0} needs version {1}, "
                                "got {2}",
                                magic, want, version));
    l.idBytes = magic == kLlmcMagic16 ? 2 : 4;
    l.dataOffset = kLlmcHeaderBytes;
    const uint64_t payload = size - kLlmcHeaderBytes;
    if (n < 0 || (uint64_t)n * (uint64_t)l.idBytes != payload)
      return fail(path, formatv("llm.c header says {0} tokens of {1} bytes, "
                                "the file has {2} bytes after the header",
                                n, l.idBytes, payload));
    l.numTokens = n;
  } else {
    l.idBytes = rawDType == TokenDType::UInt32 ? 4 : 2;
    if (size % (uint64_t)l.idBytes)
      return fail(path, formatv("{0} bytes is not a whole number of {1} ids "
                                "(--data-dtype {1})",
                                size, tokenDTypeName(l.idBytes, false)));
    l.numTokens = (int64_t)(size / (uint64_t)l.idBytes);
  }
  if (l.numTokens == 0)
    return fail(path, "no token ids");
  return l;
}

Expected<std::unique_ptr<TokenFile>> TokenFile::open(StringRef path,
                                                     TokenDType rawDType) {
  std::unique_ptr<TokenFile> f(new TokenFile);
  f->filePath = path.str();
  Expected<sys::fs::file_t> fd = sys::fs::openNativeFileForRead(path);
  if (!fd)
    return fail(path, "cannot open token data: " + toString(fd.takeError()));
  f->fd = *fd;
  sys::fs::file_status st;
  if (std::error_code ec = sys::fs::status(f->fd, st))
    return fail(path, "cannot read token data: " + ec.message());
  const uint64_t size = st.getSize();
  std::string head(std::min(size, kTokenFileHeaderBytes), '\0');
  if (Error e = readAt(f->fd, path, 0, head.data(), head.size()))
    return std::move(e);
  Expected<TokenFileLayout> layout =
      parseTokenFileLayout(head, size, rawDType, path);
  if (!layout)
    return layout.takeError();
  f->fileFormat = layout->format;
  f->dataOffset = layout->dataOffset;
  f->idBytes = layout->idBytes;
  f->isSigned = layout->isSigned;
  f->count = layout->numTokens;
  return std::move(f);
}

TokenFile::~TokenFile() {
  if (fd >= 0)
    sys::fs::closeFile(fd);
}

const char *zb::runner::tokenDTypeName(int64_t idBytes, bool isSigned) {
  if (isSigned)
    return idBytes == 8 ? "int64" : "int32";
  return idBytes == 4 ? "uint32" : "uint16";
}

const char *TokenFile::dtypeName() const {
  return tokenDTypeName(idBytes, isSigned);
}

Error TokenFile::read(int64_t first, int64_t n, int64_t *out) const {
  if (first < 0 || n < 0 || first > count - n)
    return fail(filePath, formatv("ids [{0}, {1}) past the end ({2} ids)",
                                  first, first + n, count));
  std::vector<char> bytes((size_t)(n * idBytes));
  if (Error e = readAt(fd, filePath, dataOffset + (uint64_t)first * idBytes,
                       bytes.data(), bytes.size()))
    return e;
  for (int64_t i = 0; i < n; ++i) {
    const char *p = bytes.data() + i * idBytes;
    switch (idBytes) {
    case 2:
      out[i] = support::endian::read16le(p);
      break;
    case 4:
      out[i] = isSigned ? (int64_t)(int32_t)support::endian::read32le(p)
                        : (int64_t)support::endian::read32le(p);
      break;
    default:
      out[i] = (int64_t)support::endian::read64le(p);
    }
    if (out[i] < 0)
      return fail(filePath, formatv("id {0} at position {1} is negative",
                                    out[i], first + i));
  }
  return Error::success();
}

const std::string &TokenSource::path() const {
  return text ? text->path : file->path();
}

Error TokenSource::read(int64_t first, int64_t n, int64_t *out) const {
  if (first < 0 || n < 0 || first > size() - n)
    return fail(path(), formatv("tokens [{0}, {1}) past the end of the part "
                                "of {2} tokens",
                                first, first + n, size()));
  if (file)
    return file->read(begin + first, n, out);
  for (int64_t i = 0; i < n; ++i)
    out[i] = text->tokens[begin + first + i];
  return Error::success();
}

TokenSource zb::runner::wholeSource(std::shared_ptr<const TextData> text) {
  TokenSource s;
  s.end = (int64_t)text->tokens.size();
  s.text = std::move(text);
  return s;
}

TokenSource zb::runner::wholeSource(std::shared_ptr<const TokenFile> file) {
  TokenSource s;
  s.end = file->numTokens();
  s.file = std::move(file);
  return s;
}

Expected<std::pair<TokenSource, TokenSource>>
zb::runner::splitSource(const TokenSource &all, double fraction,
                        int64_t seqLen) {
  if (!(fraction > 0 && fraction < 1))
    return fail(all.path(),
                formatv("--val-split must be in (0, 1), got {0}",
                        format("%g", fraction)));
  const int64_t valTokens = (int64_t)((double)all.size() * fraction);
  TokenSource train = all, val = all;
  train.end = all.end - valTokens;
  val.begin = train.end;
  for (const auto &[what, part] :
       {std::pair{"training", &train}, {"validation", &val}})
    if (part->size() < seqLen + 2)
      return fail(all.path(),
                  formatv("--val-split {0} leaves {1} tokens for {2}, but "
                          "sequences of {3} tokens need at least {4}",
                          format("%g", fraction), part->size(), what, seqLen,
                          seqLen + 2));
  return std::make_pair(std::move(train), std::move(val));
}

Error zb::runner::cutTokens(const TokenSource &source, uint64_t seed,
                            int64_t step, int64_t count, int64_t seqLen,
                            int64_t shift, DType dtype, char *out,
                            int64_t indexRange, StringRef inputName,
                            int64_t first) {
  std::vector<int64_t> ids((size_t)seqLen);
  for (int64_t j = 0; j < count; ++j) {
    const int64_t off =
        textOffset(seed, step, first + j, source.size(), seqLen) + shift;
    if (Error e = source.read(off, seqLen, ids.data()))
      return e;
    for (int64_t t = 0; t < seqLen; ++t) {
      const int64_t v = ids[t];
      if (indexRange > 0 && v >= indexRange)
        return fail(source.path(),
                    formatv("token {0} at position {1} is outside the "
                            "model's vocabulary: input '{2}' takes ids in "
                            "[0, {3}) (tokenize with the model's tokenizer, "
                            "or build the model with a larger vocabulary)",
                            v, source.begin + off + t, inputName,
                            indexRange));
      const int64_t i = j * seqLen + t;
      switch (dtype) {
      case DType::Int64:
        std::memcpy(out + 8 * i, &v, 8);
        break;
      case DType::Int32: {
        const int32_t w = (int32_t)v;
        std::memcpy(out + 4 * i, &w, 4);
        break;
      }
      case DType::Float32: {
        const float f = (float)v;
        std::memcpy(out + 4 * i, &f, 4);
        break;
      }
      }
    }
  }
  return Error::success();
}

std::string zb::runner::describeSource(const TokenSource &source) {
  if (source.text)
    return describeText(*source.text);
  const TokenFile &f = *source.file;
  return formatv("tokens {0}: {1} {2} ids ({3})", f.path(), f.numTokens(),
                 f.dtypeName(), tokenFileFormatName(f.format()))
      .str();
}
