//===- TextDataTest.cpp - zb-run's text training data (Data.h) ------------===//
//
// Text data for language models: UTF-8 decoding, the character vocabulary,
// the splitmix64 sequence offsets, cutting sequences, the vocabulary check
// against the model's token embedding, and the error paths. Expected values
// come from the Unicode standard (encodings of U+00E9, U+20AC, U+1F600),
// Vigna's splitmix64.c reference outputs, and hand-derived sorted sets; the
// whole pipeline is compared with Python's sorted(set(text)) in
// test/Integration/text-chars.test.
//
//===----------------------------------------------------------------------===//

#include "zb/Runner/Data.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include "gtest/gtest.h"

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

using namespace zb::formats;
using namespace zb::runner;

namespace {

std::string errorText(llvm::Error e) { return llvm::toString(std::move(e)); }

template <typename T> std::string errorOf(llvm::Expected<T> v) {
  if (v)
    return "<no error>";
  return errorText(v.takeError());
}

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "/zb-textdata-" + std::to_string(getpid()) +
         "-" + name;
}

TEST(TextData, DecodesUtf8CodePoints) {
  // "a", U+00E9 (C3 A9), U+20AC (E2 82 AC), U+1F600 (F0 9F 98 80), U+10FFFF.
  std::string s = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xF4\x8F\xBF\xBF";
  auto cps = decodeUtf8(s, "t.txt");
  ASSERT_TRUE(!!cps) << errorText(cps.takeError());
  EXPECT_EQ(*cps,
            (std::vector<uint32_t>{0x61, 0xE9, 0x20AC, 0x1F600, 0x10FFFF}));
}

TEST(TextData, InvalidUtf8NamesFileAndOffset) {
  struct Case {
    std::string bytes;
    size_t offset;
    const char *why;
  };
  std::vector<Case> cases = {
      {"ab\x80", 2, "continuation byte without a lead byte"},
      {"a\xC0\x80", 1, "overlong encoding of U+0000"},
      {"xy\xE0\x80\xAF", 2, "overlong encoding of U+002F"},
      {"\xED\xA0\x80", 0, "surrogate U+D800"},
      {"abc\xF4\x90\x80\x80", 3, "above U+10FFFF"},
      {"\xFF", 0, "not a UTF-8 lead byte"},
      {"ok\xE2\x82", 2, "sequence of 3 bytes cut by the end of the file"},
      {"\xC3(", 0, "byte 2 of a 2-byte sequence is not a continuation byte"},
  };
  for (const Case &c : cases) {
    std::string err = errorOf(decodeUtf8(c.bytes, "dir/bad.txt"));
    SCOPED_TRACE(err);
    EXPECT_NE(err.find("dir/bad.txt: invalid UTF-8 at byte offset " +
                       std::to_string(c.offset) + " "),
              std::string::npos);
    EXPECT_NE(err.find(c.why), std::string::npos);
    // makeText in chars mode reports the same error (before the length).
    EXPECT_EQ(errorOf(makeText(c.bytes, "dir/bad.txt", 4, TextVocab::Chars)),
              err);
    // Bytes mode takes any bytes.
    EXPECT_TRUE(!!makeText(c.bytes + "zz", "dir/bad.txt", 1, TextVocab::Bytes));
  }
}

TEST(TextData, CharsVocabularyIsSortedDistinctCodePoints) {
  // Code points: b=0x62 a=0x61 U+00E9 a c \n U+00E9 b -> sorted distinct
  // {0x0A, 0x61, 0x62, 0x63, 0xE9}.
  std::string s = "ba\xC3\xA9"
                  "ac\n\xC3\xA9"
                  "b";
  auto text = makeText(s, "t.txt", 2, TextVocab::Chars);
  ASSERT_TRUE(!!text) << errorText(text.takeError());
  EXPECT_EQ(text->vocabulary,
            (std::vector<uint32_t>{0x0A, 0x61, 0x62, 0x63, 0xE9}));
  EXPECT_EQ(text->tokens, (std::vector<int32_t>{2, 1, 4, 1, 3, 0, 4, 2}));
  EXPECT_EQ(text->vocabSize(), 5);
  EXPECT_EQ(text->maxToken(), 4);
  EXPECT_EQ(describeText(*text), "text t.txt: 8 characters, vocabulary 5");
}

TEST(TextData, BytesModeKeepsBytes) {
  std::string s = "ba\xC3\xA9\xFF\n";
  auto text = makeText(s, "t.txt", 2);
  ASSERT_TRUE(!!text) << errorText(text.takeError());
  EXPECT_EQ(text->tokens,
            (std::vector<int32_t>{0x62, 0x61, 0xC3, 0xA9, 0xFF, 0x0A}));
  EXPECT_TRUE(text->vocabulary.empty());
  EXPECT_EQ(text->vocabSize(), 256);
  EXPECT_EQ(describeText(*text), "text t.txt: 6 bytes, vocabulary 256");
}

TEST(TextData, EmptyAndShortTexts) {
  EXPECT_EQ(errorOf(makeText("", "e.txt", 4, TextVocab::Chars)),
            "e.txt: empty text file");
  EXPECT_EQ(errorOf(makeText("", "e.txt", 4, TextVocab::Bytes)),
            "e.txt: empty text file");
  // Five characters in ten bytes: enough bytes for seq 8 (needs 10), but not
  // enough characters.
  std::string s = "\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9";
  EXPECT_TRUE(!!makeText(s, "s.txt", 8, TextVocab::Bytes));
  EXPECT_EQ(errorOf(makeText(s, "s.txt", 8, TextVocab::Chars)),
            "s.txt: 5 characters of text, but sequences of 8 tokens need at "
            "least 10");
  EXPECT_TRUE(!!makeText(s, "s.txt", 3, TextVocab::Chars));
  EXPECT_EQ(errorOf(readText(tempPath("missing.txt"), 4, TextVocab::Chars)),
            tempPath("missing.txt") + ": cannot open text data");
}

TEST(TextData, OffsetsAreSplitmix64) {
  // Reference outputs of Vigna's splitmix64.c seeded with 1234567: states
  // 1234567 + k * 0x9E3779B97F4A7C15 (k = 0, 1, 2) = seed k, index 1234567.
  const int64_t big = INT64_MAX; // modulus 2^63 - 1
  EXPECT_EQ(textOffset(0, 0, 1234567, big, 0), 6457827717110365317ll);
  EXPECT_EQ(textOffset(1, 0, 1234567, big, 0), 3203168211198807973ll);
  EXPECT_EQ(textOffset(2, 0, 1234567, big, 0),
            (int64_t)(9817491932198370423ull % (uint64_t)INT64_MAX));
  // step enters as step * 1000003 + index.
  EXPECT_EQ(textOffset(0, 1, 234564, big, 0), 6457827717110365317ll);
  // Modulus numTokens - seqLen.
  EXPECT_EQ(textOffset(0, 0, 1234567, 1000, 10),
            (int64_t)(6457827717110365317ull % 990));
}

TEST(TextData, CutsCharacterSequences) {
  // 40 characters, two bytes each for the odd ones.
  std::string s;
  for (int i = 0; i < 40; ++i)
    s += (i % 2) ? std::string("\xC3") + (char)(0x80 + i % 7)
                 : std::string(1, (char)('a' + i % 5));
  auto text = makeText(s, "t.txt", 6, TextVocab::Chars);
  ASSERT_TRUE(!!text) << errorText(text.takeError());
  ASSERT_EQ(text->tokens.size(), 40u);
  const int64_t seq = 6, count = 3;
  std::vector<int64_t> tok(count * seq), tgt(count * seq);
  std::vector<int32_t> tok32(count * seq);
  std::vector<float> tokF(count * seq);
  cutText(*text, 9, 2, count, seq, 0, DType::Int64, (char *)tok.data());
  cutText(*text, 9, 2, count, seq, 1, DType::Int64, (char *)tgt.data());
  cutText(*text, 9, 2, count, seq, 0, DType::Int32, (char *)tok32.data());
  cutText(*text, 9, 2, count, seq, 0, DType::Float32, (char *)tokF.data());
  for (int64_t j = 0; j < count; ++j) {
    int64_t off = textOffset(9, 2, j, 40, seq);
    ASSERT_LT(off, 40 - seq);
    for (int64_t t = 0; t < seq; ++t) {
      EXPECT_EQ(tok[j * seq + t], text->tokens[off + t]);
      EXPECT_EQ(tgt[j * seq + t], text->tokens[off + t + 1]);
      EXPECT_EQ(tok32[j * seq + t], text->tokens[off + t]);
      EXPECT_EQ(tokF[j * seq + t], (float)text->tokens[off + t]);
    }
  }
}

Plan planWithEmbedding(int64_t rows) {
  Plan plan;
  plan.path = "p/plan.json";
  ParamInfo ln;
  ln.name = "ln_w";
  ln.shape = {8};
  ParamInfo wte;
  wte.name = "wte";
  wte.shape = {rows, 8};
  ParamInfo head;
  head.name = "lm_head";
  head.shape = {1000, 8};
  plan.params = {ln, wte, head};
  return plan;
}

TEST(TextData, VocabularyCheckedAgainstTokenEmbedding) {
  auto text = makeText("abcdcba\nabcd", "v.txt", 2, TextVocab::Chars);
  ASSERT_TRUE(!!text);
  ASSERT_EQ(text->vocabSize(), 5);
  Plan small = planWithEmbedding(4);
  ASSERT_EQ(tokenEmbedding(small), &small.params[1]);
  EXPECT_EQ(errorText(checkTextVocabulary(*text, small)),
            "v.txt: vocabulary of 5 characters (--text-vocab=chars), but the "
            "model's token embedding 'wte' (the first 2-D parameter of "
            "p/plan.json) has 4 rows: build the model with a vocabulary of at "
            "least 5");
  EXPECT_FALSE(checkTextVocabulary(*text, planWithEmbedding(5)));
  EXPECT_FALSE(checkTextVocabulary(*text, planWithEmbedding(256)));

  // Bytes: the largest byte must index a row ('d' = 100).
  auto bytes = makeText("abcdcba\nabcd", "v.txt", 2, TextVocab::Bytes);
  ASSERT_TRUE(!!bytes);
  std::string err =
      errorText(checkTextVocabulary(*bytes, planWithEmbedding(100)));
  EXPECT_NE(err.find("v.txt: byte 0x64 at offset 3 is token 100, but the "
                     "model's token embedding 'wte'"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("has 100 rows"), std::string::npos) << err;
  EXPECT_FALSE(checkTextVocabulary(*bytes, planWithEmbedding(101)));

  // No 2-D parameter: nothing to check against.
  Plan none;
  EXPECT_EQ(tokenEmbedding(none), nullptr);
  EXPECT_FALSE(checkTextVocabulary(*text, none));
}

TEST(TextData, VocabularyJsonRoundTrips) {
  std::string s = "b\xF0\x9F\x98\x80"
                  "a\n\"\xC3\xA9\xE2\x82\xAC";
  auto text = makeText(s, "t.txt", 2, TextVocab::Chars);
  ASSERT_TRUE(!!text);
  std::string path = tempPath("vocab.json");
  ASSERT_FALSE(writeVocabularyJson(*text, path));
  auto buf = llvm::MemoryBuffer::getFile(path);
  ASSERT_TRUE(!!buf);
  auto v = llvm::json::parse((*buf)->getBuffer());
  ASSERT_TRUE(!!v) << errorText(v.takeError());
  const llvm::json::Array *arr = v->getAsArray();
  ASSERT_NE(arr, nullptr);
  std::vector<std::string> got;
  for (const llvm::json::Value &e : *arr)
    got.push_back(e.getAsString().value_or("<not a string>").str());
  // Sorted by code point: \n " a b U+00E9 U+20AC U+1F600.
  EXPECT_EQ(got,
            (std::vector<std::string>{"\n", "\"", "a", "b", "\xC3\xA9",
                                      "\xE2\x82\xAC", "\xF0\x9F\x98\x80"}));
  std::remove(path.c_str());
  EXPECT_NE(errorText(writeVocabularyJson(*text, "/nonexistent-dir/v.json"))
                .find("cannot write '/nonexistent-dir/v.json': "),
            std::string::npos);
}

} // namespace
