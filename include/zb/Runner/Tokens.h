//===- Tokens.h - zb-run: token data of language models ---------*- C++ -*-===//
//
// The token ids a language model trains and evaluates on, as people keep
// them: text (its bytes or characters, Data.h) or a token file of ids
// written by a tokenizer (python -m zb.data tokenize, nanoGPT's prepare.py,
// llm.c's dev/data scripts):
//
//   raw    FILE.bin: a flat little-endian array of uint16 (default) or
//          uint32 ids (zb-run --data-dtype), nanoGPT's train.bin/val.bin;
//   llm.c  a 256 x int32 header (magic 20240520 with version 1: uint16 ids;
//          magic 20240801 with version 7: uint32 ids; header[2] = the
//          number of ids), then the ids (llm.c's dev/data/data_common.py);
//   npy    FILE.npy: a 1-D NumPy array of <u2, <u4, <i4 or <i8 (format
//          versions 1.0 to 3.0, C order).
//
// A token file is read with pread, a sequence at a time: never loaded whole,
// so a file of many GB trains in constant memory (a memory map would count
// its whole size against `ulimit -v`).
//
// Sequences are cut as nanoGPT's get_batch cuts them: sequence j of a step
// starts at a pseudo-random offset (textOffset, Data.h: a function of seed,
// step and j only, so the same on every rank and rank count), its tokens are
// ids [off, off + T) and its targets [off + 1, off + T + 1).
//
//===----------------------------------------------------------------------===//
#ifndef ZB_RUNNER_TOKENS_H
#define ZB_RUNNER_TOKENS_H

#include "zb/Runner/Data.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>

namespace zb::runner {

/// How a token file stores its ids (see the file comment).
enum class TokenFileFormat { Raw, LlmC, Npy };
/// zb-run --data-dtype: the ids of a raw token file.
enum class TokenDType { UInt16, UInt32 };

/// "raw", "llm.c" or "npy".
const char *tokenFileFormatName(TokenFileFormat format);

/// Whether `path` is read as a token file rather than text: a name ending in
/// .bin or .npy, or a file starting with llm.c's magic.
bool isTokenFile(llvm::StringRef path);

/// Where a token file keeps its ids.
struct TokenFileLayout {
  TokenFileFormat format = TokenFileFormat::Raw;
  uint64_t dataOffset = 0; ///< bytes before the first id
  int64_t idBytes = 2;     ///< 2, 4 or 8
  bool isSigned = false;   ///< npy <i4 / <i8
  int64_t numTokens = 0;   ///< >= 1; dataOffset + numTokens * idBytes <= size
};

/// The most bytes of a file parseTokenFileLayout looks at (an npy header is
/// far shorter).
constexpr uint64_t kTokenFileHeaderBytes = 65536;

/// The layout of a token file of `size` bytes whose first bytes are `head`
/// (min(size, kTokenFileHeaderBytes) of them): npy by its magic, llm.c by
/// its magic, else raw ids of `rawDType`. Errors name `path`: a bad llm.c or
/// npy header, a size that is not a whole number of ids, no ids.
llvm::Expected<TokenFileLayout>
parseTokenFileLayout(llvm::StringRef head, uint64_t size,
                     TokenDType rawDType, llvm::StringRef path);

/// An open token file. Reading is thread-compatible (pread).
class TokenFile {
public:
  /// Opens `path` and reads its header. `rawDType` applies to raw files
  /// (llm.c and npy files say their own). Errors name the file: cannot
  /// open, a bad llm.c or npy header, a size that is not a whole number of
  /// ids, no ids.
  static llvm::Expected<std::unique_ptr<TokenFile>>
  open(llvm::StringRef path, TokenDType rawDType = TokenDType::UInt16);
  ~TokenFile();
  TokenFile(const TokenFile &) = delete;
  TokenFile &operator=(const TokenFile &) = delete;

  /// ids [first, first + count) as int64 into `out`. Errors: a range past
  /// the end, a failed or short read, an npy id below 0; all name the file.
  llvm::Error read(int64_t first, int64_t count, int64_t *out) const;

  const std::string &path() const { return filePath; }
  TokenFileFormat format() const { return fileFormat; }
  int64_t numTokens() const { return count; }
  /// "uint16", "uint32", "int32" or "int64".
  const char *dtypeName() const;

private:
  TokenFile() = default;
  std::string filePath;
  TokenFileFormat fileFormat = TokenFileFormat::Raw;
  int fd = -1;
  uint64_t dataOffset = 0; ///< bytes before the first id
  int64_t idBytes = 2;
  bool isSigned = false;
  int64_t count = 0;
};

/// "uint16", "uint32", "int32" or "int64" for ids of `idBytes` bytes.
const char *tokenDTypeName(int64_t idBytes, bool isSigned);

/// The tokens of one split of the data: ids [begin, end) of a text (held in
/// memory) or of a token file. The training and validation parts of
/// --val-split are two sources over one file.
struct TokenSource {
  std::shared_ptr<const TextData> text;  ///< or
  std::shared_ptr<const TokenFile> file; ///< one of the two
  int64_t begin = 0, end = 0;

  int64_t size() const { return end - begin; }
  const std::string &path() const;
  /// ids [begin + first, begin + first + count).
  llvm::Error read(int64_t first, int64_t count, int64_t *out) const;
};

/// The whole of `text` or `file` as a source.
TokenSource wholeSource(std::shared_ptr<const TextData> text);
TokenSource wholeSource(std::shared_ptr<const TokenFile> file);

/// Splits `all` into its first (1 - fraction) and its last `fraction`
/// (nanoGPT's prepare.py keeps the last 10 % for validation). Errors when
/// either part has fewer than seqLen + 2 tokens, naming the file and sizes.
llvm::Expected<std::pair<TokenSource, TokenSource>>
splitSource(const TokenSource &all, double fraction, int64_t seqLen);

/// Writes `count` sequences of step `step` of `source` into `out` (count x
/// seqLen elements of `dtype`): the k-th holds sequence j = first + k of
/// the step, ids [off + shift, off + shift + seqLen) of the source, off =
/// textOffset(seed, step, j, source.size(), seqLen) (a data-parallel
/// pipeline d takes first = d * its batch of the step's global batch). With `indexRange` > 0 every id must be below it
/// (the model's vocabulary: plan.json's index_range of `inputName`); the
/// error names the file, the id's position, its value and the input. Needs
/// source.size() >= seqLen + 2.
llvm::Error cutTokens(const TokenSource &source, uint64_t seed, int64_t step,
                      int64_t count, int64_t seqLen, int64_t shift,
                      DType dtype, char *out, int64_t indexRange = 0,
                      llvm::StringRef inputName = "", int64_t first = 0);

/// "tokens FILE: N uint16 ids (raw), training ids [0, K), validation
/// ids [K, N)" style description of a source (the line zb-run prints).
std::string describeSource(const TokenSource &source);

} // namespace zb::runner

#endif // ZB_RUNNER_TOKENS_H
