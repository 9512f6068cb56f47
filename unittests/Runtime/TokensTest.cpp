//===- TokensTest.cpp - zb-run's token files (Tokens.h) -------------------===//
//
// Token file layouts from hand-built bytes (llm.c's header as
// dev/data/data_common.py writes it, NumPy's format 1.0 and 2.0 headers as
// numpy.lib.format writes them), reading ids back through a real file,
// --val-split, and sequences cut from a token file equal to those cut from
// the same text (cutText, the text path). The formats end to end, written by
// NumPy itself: test/Tools/zb-run-token-data.test.
//
//===----------------------------------------------------------------------===//

#include "zb/Runner/Tokens.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cstring>
#include <string>
#include <vector>

using namespace zb::formats;
using namespace zb::runner;

namespace {

template <typename T> std::string errorOf(llvm::Expected<T> v) {
  return v ? "<no error>" : llvm::toString(v.takeError());
}

void put32(std::string &s, int32_t v) {
  s.append(reinterpret_cast<const char *>(&v), 4);
}
void put16(std::string &s, uint16_t v) {
  s.append(reinterpret_cast<const char *>(&v), 2);
}

std::string llmcFile(int32_t magic, int32_t version, int32_t count,
                     int idBytes, int ids) {
  std::string s;
  put32(s, magic);
  put32(s, version);
  put32(s, count);
  s.append(256 * 4 - 12, '\0');
  for (int i = 0; i < ids; ++i) {
    if (idBytes == 2)
      put16(s, (uint16_t)(i * 7));
    else
      put32(s, i * 70000);
  }
  return s;
}

/// numpy.lib.format's header: magic, version, little-endian length, the
/// dict padded with spaces and '\n' to a multiple of 64 bytes.
std::string npyFile(const std::string &dict, int major, const std::string &data) {
  std::string s = "\x93NUMPY";
  s += (char)major;
  s += '\0';
  const size_t lenBytes = major == 1 ? 2 : 4;
  std::string header = dict;
  while ((6 + 2 + lenBytes + header.size() + 1) % 64)
    header += ' ';
  header += '\n';
  if (major == 1)
    put16(s, (uint16_t)header.size());
  else
    put32(s, (int32_t)header.size());
  return s + header + data;
}

TEST(TokenFileLayoutTest, LlmC) {
  std::string f = llmcFile(20240520, 1, 5, 2, 5);
  auto l = parseTokenFileLayout(f, f.size(), TokenDType::UInt16, "a.bin");
  ASSERT_TRUE(bool(l)) << errorOf(std::move(l));
  EXPECT_EQ(l->format, TokenFileFormat::LlmC);
  EXPECT_EQ(l->dataOffset, 1024u);
  EXPECT_EQ(l->idBytes, 2);
  EXPECT_EQ(l->numTokens, 5);
  f = llmcFile(20240801, 7, 3, 4, 3);
  l = parseTokenFileLayout(f, f.size(), TokenDType::UInt16, "a.bin");
  ASSERT_TRUE(bool(l));
  EXPECT_EQ(l->idBytes, 4);
  EXPECT_EQ(l->numTokens, 3);
  f = llmcFile(20240801, 1, 3, 4, 3);
  EXPECT_EQ(errorOf(parseTokenFileLayout(f, f.size(), TokenDType::UInt16,
                                         "a.bin")),
            "a.bin: llm.c header: magic 20240801 needs version 7, got 1");
  f = llmcFile(20240520, 1, 9, 2, 5);
  EXPECT_EQ(errorOf(parseTokenFileLayout(f, f.size(), TokenDType::UInt16,
                                         "a.bin")),
            "a.bin: llm.c header says 9 tokens of 2 bytes, the file has 10 "
            "bytes after the header");
  f = llmcFile(20240520, 1, 0, 2, 0);
  EXPECT_EQ(errorOf(parseTokenFileLayout(f, f.size(), TokenDType::UInt16,
                                         "a.bin")),
            "a.bin: no token ids");
}

TEST(TokenFileLayoutTest, Npy) {
  std::string data(10 * 2, '\0');
  std::string f = npyFile(
      "{'descr': '<u2', 'fortran_order': False, 'shape': (10,), }", 1, data);
  auto l = parseTokenFileLayout(f, f.size(), TokenDType::UInt32, "a.npy");
  ASSERT_TRUE(bool(l)) << errorOf(std::move(l));
  EXPECT_EQ(l->format, TokenFileFormat::Npy);
  EXPECT_EQ(l->dataOffset % 64, 0u);
  EXPECT_EQ(l->idBytes, 2);
  EXPECT_EQ(l->numTokens, 10);
  f = npyFile("{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", 2,
              std::string(16, '\0'));
  l = parseTokenFileLayout(f, f.size(), TokenDType::UInt16, "a.npy");
  ASSERT_TRUE(bool(l)) << errorOf(std::move(l));
  EXPECT_TRUE(l->isSigned);
  EXPECT_EQ(l->idBytes, 8);
  f = npyFile("{'descr': '<u2', 'fortran_order': True, 'shape': (10,), }", 1,
              data);
  EXPECT_EQ(errorOf(parseTokenFileLayout(f, f.size(), TokenDType::UInt16,
                                         "a.npy")),
            "a.npy: npy array in Fortran order (write it C-ordered)");
  f = npyFile("{'descr': '<u2', 'fortran_order': False, 'shape': (11,), }", 1,
              data);
  EXPECT_EQ(errorOf(parseTokenFileLayout(f, f.size(), TokenDType::UInt16,
                                         "a.npy")),
            "a.npy: npy shape (11,) needs 11 ids of 2 bytes, the file has 20 "
            "bytes of data");
  f = npyFile("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", 1,
              std::string(8, '\0'));
  EXPECT_EQ(errorOf(parseTokenFileLayout(f, f.size(), TokenDType::UInt16,
                                         "a.npy")),
            "a.npy: npy dtype '<f8' is not a token id type (<u2, <u4, <i4, "
            "<i8)");
  std::string truncated = f.substr(0, 20);
  EXPECT_EQ(errorOf(parseTokenFileLayout(truncated, truncated.size(),
                                         TokenDType::UInt16, "a.npy")),
            "a.npy: npy header runs past the end of the file");
}

TEST(TokenFileLayoutTest, Raw) {
  std::string f(12, '\1');
  auto l = parseTokenFileLayout(f, f.size(), TokenDType::UInt16, "t.bin");
  ASSERT_TRUE(bool(l));
  EXPECT_EQ(l->format, TokenFileFormat::Raw);
  EXPECT_EQ(l->numTokens, 6);
  l = parseTokenFileLayout(f, f.size(), TokenDType::UInt32, "t.bin");
  ASSERT_TRUE(bool(l));
  EXPECT_EQ(l->numTokens, 3);
  EXPECT_EQ(errorOf(parseTokenFileLayout("abcdef", 6, TokenDType::UInt32,
                                         "t.bin")),
            "t.bin: 6 bytes is not a whole number of uint32 ids "
            "(--data-dtype uint32)");
  EXPECT_EQ(errorOf(parseTokenFileLayout("", 0, TokenDType::UInt16, "t.bin")),
            "t.bin: no token ids");
}

/// A temporary file holding `bytes`, removed at the end of the test.
struct TempFile {
  explicit TempFile(const std::string &bytes, llvm::StringRef suffix) {
    int fd = -1;
    EXPECT_FALSE(llvm::sys::fs::createTemporaryFile("zb-tokens", suffix, fd,
                                                    path));
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << bytes;
  }
  ~TempFile() { llvm::sys::fs::remove(path); }
  llvm::SmallString<128> path;
};

TEST(TokenFileTest, ReadsIdsAndCutsAsTheText) {
  // The bytes of a text as uint16 ids: the same sequences as the text.
  std::string text;
  for (int i = 0; i < 300; ++i)
    text += (char)('a' + (i * 7 + i / 13) % 26);
  std::string ids;
  for (unsigned char c : text)
    put16(ids, c);
  TempFile file(ids, "bin");
  auto opened = TokenFile::open(file.path, TokenDType::UInt16);
  ASSERT_TRUE(bool(opened)) << errorOf(std::move(opened));
  std::shared_ptr<const TokenFile> tf = std::move(*opened);
  EXPECT_EQ(tf->numTokens(), 300);
  std::vector<int64_t> got(5);
  ASSERT_FALSE(bool(tf->read(295, 5, got.data())));
  EXPECT_EQ(got[4], (int64_t)(unsigned char)text[299]);
  llvm::Error past = tf->read(296, 5, got.data());
  EXPECT_NE(llvm::toString(std::move(past)).find("past the end (300 ids)"),
            std::string::npos);

  llvm::Expected<TextData> td = makeText(text, "t.txt", 8);
  ASSERT_TRUE(bool(td));
  const int64_t count = 6, seq = 8;
  for (int64_t shift : {0, 1}) {
    std::vector<int64_t> fromText(count * seq), fromFile(count * seq);
    cutText(*td, 11, 3, count, seq, shift, DType::Int64,
            (char *)fromText.data());
    ASSERT_FALSE(bool(cutTokens(wholeSource(tf), 11, 3, count, seq, shift,
                                DType::Int64, (char *)fromFile.data())));
    EXPECT_EQ(fromText, fromFile) << "shift " << shift;
  }
  // A vocabulary of 100 ids refuses 'a' (97) and above.
  std::vector<int32_t> out(count * seq);
  llvm::Error vocab = cutTokens(wholeSource(tf), 11, 3, count, seq, 0,
                                DType::Int32, (char *)out.data(), 97, "ids");
  EXPECT_NE(llvm::toString(std::move(vocab))
                .find("is outside the model's vocabulary: input 'ids' takes "
                      "ids in [0, 97)"),
            std::string::npos);
}

/// Data parallelism: pipeline d cuts sequences d*n .. d*n+n-1 of the step
/// (`first`), the same ids as that part of one cut of the whole step.
TEST(TokenFileTest, PipelinesCutTheirPartOfTheStep) {
  std::string ids;
  for (int i = 0; i < 500; ++i)
    put16(ids, (uint16_t)((i * 37 + i / 7) % 251));
  TempFile file(ids, "bin");
  auto opened = TokenFile::open(file.path, TokenDType::UInt16);
  ASSERT_TRUE(bool(opened)) << errorOf(std::move(opened));
  std::shared_ptr<const TokenFile> tf = std::move(*opened);
  const int64_t seq = 8, perPipeline = 3, pipelines = 4;
  std::vector<int64_t> whole(pipelines * perPipeline * seq);
  ASSERT_FALSE(bool(cutTokens(wholeSource(tf), 5, 2, pipelines * perPipeline,
                              seq, 1, DType::Int64, (char *)whole.data())));
  for (int64_t d = 0; d < pipelines; ++d) {
    std::vector<int64_t> part(perPipeline * seq);
    ASSERT_FALSE(bool(cutTokens(wholeSource(tf), 5, 2, perPipeline, seq, 1,
                                DType::Int64, (char *)part.data(), 0, "",
                                /*first=*/d * perPipeline)));
    EXPECT_TRUE(std::equal(part.begin(), part.end(),
                           whole.begin() + d * perPipeline * seq))
        << "pipeline " << d;
  }
  // The parts differ from each other (the offsets depend on the index).
  EXPECT_FALSE(std::equal(whole.begin(), whole.begin() + seq,
                          whole.begin() + perPipeline * seq));
}

TEST(TokenSourceTest, ValidationSplit) {
  auto text = std::make_shared<const TextData>(
      std::move(*makeText(std::string(1000, 'x'), "t.txt", 8)));
  auto parts = splitSource(wholeSource(text), 0.1, 8);
  ASSERT_TRUE(bool(parts)) << errorOf(std::move(parts));
  EXPECT_EQ(parts->first.begin, 0);
  EXPECT_EQ(parts->first.end, 900);
  EXPECT_EQ(parts->second.begin, 900);
  EXPECT_EQ(parts->second.end, 1000);
  EXPECT_EQ(errorOf(splitSource(wholeSource(text), 0.005, 8)),
            "t.txt: --val-split 0.005 leaves 5 tokens for validation, but "
            "sequences of 8 tokens need at least 10");
  // Every validation sequence lies in the validation part.
  std::vector<int64_t> offsets;
  for (int64_t j = 0; j < 50; ++j)
    offsets.push_back(textOffset(3, 0, j, parts->second.size(), 8));
  for (int64_t off : offsets)
    EXPECT_LE(off + 8 + 1, parts->second.size());
}

} // namespace
