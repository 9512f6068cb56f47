//===- MemrefMessagesTest.cpp - bf16 memref messages in a one-rank job ----===//
//
// zbrt_send_memref_bf16 / zbrt_recv_memref_bf16 on the CPU backend, in a
// child process that is a one-rank MPI job (zbrt_init: a singleton) sending
// to itself: strided views are packed and unpacked with their bits
// unchanged, and an element is 2 bytes (a message of n bf16 values is
// received as n / 2 int32 values; a receive of another size is fatal,
// naming both sizes).
//
//===----------------------------------------------------------------------===//

#include "zbrt/zbrt.h"

#include "OneRankJob.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

void initOneRank() { zbtest::initOneRankJob("zbrt-memref-messages"); }

/// Sends and receives bf16 memrefs to and from this rank; exits 0 when
/// every value arrived where it should, else 2.
void roundTrips() {
  initOneRank();
  std::vector<uint16_t> src(40), dst(60, 0);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = (uint16_t)(0x3f80 + 37 * i);
  src[4] = 0x7fc1; // a NaN and -infinity: bits, not values, travel
  src[7] = 0xff80;
  bool ok = true;
  // Strided to strided: 6 values at stride 3 from offset 1, received at
  // stride 4 from offset 2.
  zbrt_send_memref_bf16(src.data(), src.data(), 1, 6, 3, 0, 5);
  zbrt_recv_memref_bf16(dst.data(), dst.data(), 2, 6, 4, 0, 5);
  for (int i = 0; i < 6; ++i)
    ok = ok && dst[2 + 4 * i] == src[1 + 3 * i];
  // Contiguous, at an offset; the caller may reuse its buffer at once.
  zbrt_send_memref_bf16(src.data(), src.data(), 10, 9, 1, 0, 6);
  std::vector<uint16_t> expected(src.begin() + 10, src.begin() + 19);
  std::memset(src.data(), 0, src.size() * sizeof(uint16_t));
  zbrt_recv_memref_bf16(dst.data(), dst.data(), 40, 9, 1, 0, 6);
  ok = ok && std::memcmp(dst.data() + 40, expected.data(), 18) == 0;
  // Nothing else written: the gaps of the strided receive.
  for (int i = 0; i < 40; ++i)
    if (i < 2 || i > 22 || (i - 2) % 4 != 0)
      ok = ok && dst[i] == 0;
  // 4 bf16 values are the 8 bytes of 2 int32 values.
  const uint16_t four[4] = {0x1111, 0x2222, 0x3333, 0x4444};
  uint16_t fourCopy[4];
  std::memcpy(fourCopy, four, sizeof four);
  zbrt_send_memref_bf16(fourCopy, fourCopy, 0, 4, 1, 0, 7);
  int32_t two[2] = {0, 0};
  zbrt_recv_memref_i32(two, two, 0, 2, 1, 0, 7);
  ok = ok && std::memcmp(two, four, sizeof four) == 0;
  zbrt_step_end();
  zbrt_finalize();
  std::exit(ok ? 0 : 2);
}

/// A receive of 4 bf16 values (8 bytes) of a 3-value message (6 bytes).
void sizeMismatch() {
  initOneRank();
  uint16_t three[3] = {1, 2, 3}, four[4] = {};
  zbrt_send_memref_bf16(three, three, 0, 3, 1, 0, 9);
  zbrt_recv_memref_bf16(four, four, 0, 4, 1, 0, 9);
  std::exit(0);
}

TEST(MemrefMessagesDeathTest, Bf16MessagesAreTwoBytesAnElement) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(roundTrips(), testing::ExitedWithCode(0), "");
  EXPECT_EXIT(sizeMismatch(), testing::ExitedWithCode(1),
              "zbrt_recv from rank 0 tag 9 .*: expected 8 bytes, the message "
              "has 6 bytes");
  EXPECT_EXIT(
      {
        uint16_t x = 0;
        zbrt_send_memref_bf16(&x, &x, 0, -1, 1, 0, 0);
      },
      testing::ExitedWithCode(1),
      "zbrt_send_memref_bf16: unsupported size -1 elements");
}

} // namespace
