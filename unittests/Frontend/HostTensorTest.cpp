//===- HostTensorTest.cpp - The importers' constant-folding tensor --------===//
//
// Index arithmetic and folds of zb/Frontend/HostTensor.h against values
// computed with NumPy (the snippet that printed them is in the comment above
// each expectation) or by hand.
//
//===----------------------------------------------------------------------===//

#include "zb/Frontend/HostTensor.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

using namespace mlir;
using namespace zb::frontend;

namespace {

class HostTensorTest : public ::testing::Test {
protected:
  HostTensorTest()
      : handler(&ctx, [this](Diagnostic &d) {
          messages.push_back(d.str());
          return success();
        }) {}

  /// np.arange(n).reshape(shape) of element type `type` (default i64).
  HostTensor arange(ArrayRef<int64_t> shape, Type type = {}) {
    HostTensor t;
    t.shape.assign(shape.begin(), shape.end());
    t.type = type ? type : Type(b.getI64Type());
    t.data.resize(t.numElements());
    std::iota(t.data.begin(), t.data.end(), 0.0);
    return t;
  }
  /// Binds diagnostics to an unknown location; they land in `messages`.
  InFlightDiagnostic err() { return emitError(UnknownLoc::get(&ctx)); }
  std::string lastMessage() const {
    return messages.empty() ? "" : messages.back();
  }

  MLIRContext ctx;
  Builder b{&ctx};
  std::vector<std::string> messages;
  ScopedDiagnosticHandler handler;
};

std::vector<double> doubles(std::initializer_list<double> v) { return v; }

//===----------------------------------------------------------------------===//
// Index arithmetic
//===----------------------------------------------------------------------===//

TEST_F(HostTensorTest, NumElementsAndStrides) {
  EXPECT_EQ(numElements({}), 1);
  EXPECT_EQ(numElements({2, 3, 4}), 24);
  EXPECT_EQ(numElements({2, 0, 3}), 0);
  // [s // 8 for s in np.zeros((2,3,4)).strides] -> [12, 4, 1]
  EXPECT_EQ(stridesOf({2, 3, 4}), (SmallVector<int64_t>{12, 4, 1}));
  EXPECT_TRUE(stridesOf({}).empty());
  EXPECT_EQ(stridesOf({5}), (SmallVector<int64_t>{1}));
}

TEST_F(HostTensorTest, LinearizeRoundTrip) {
  // np.unravel_index(17, (2,3,4)) -> (1, 1, 1)
  EXPECT_EQ(delinearize(17, {2, 3, 4}), (SmallVector<int64_t>{1, 1, 1}));
  EXPECT_EQ(linearize({1, 1, 1}, {2, 3, 4}), 17);
  for (int64_t i = 0; i < 24; ++i)
    EXPECT_EQ(linearize(delinearize(i, {2, 3, 4}), {2, 3, 4}), i);
  EXPECT_EQ(linearize({}, {}), 0);
}

TEST_F(HostTensorTest, BroadcastShapes) {
  // np.broadcast_shapes((3,1), (4,)) -> (3, 4)
  EXPECT_EQ(*broadcastShapes({3, 1}, {4}), (SmallVector<int64_t>{3, 4}));
  EXPECT_EQ(*broadcastShapes({}, {5}), (SmallVector<int64_t>{5}));
  EXPECT_EQ(*broadcastShapes({2, 1, 4}, {3, 1}),
            (SmallVector<int64_t>{2, 3, 4}));
  // np.broadcast_shapes((2,3), (3,2)) raises ValueError.
  EXPECT_FALSE(broadcastShapes({2, 3}, {3, 2}).has_value());
  EXPECT_TRUE(broadcastsTo({3, 1}, {2, 3, 4}));
  EXPECT_FALSE(broadcastsTo({3, 2}, {2, 3, 4}));
  EXPECT_FALSE(broadcastsTo({1, 1, 1, 1}, {2, 3, 4}));
}

TEST_F(HostTensorTest, BroadcastIndexMap) {
  // np.broadcast_to(np.arange(3).reshape(3,1), (2,3,4)).ravel()
  std::vector<int64_t> want = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
                               0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2};
  EXPECT_EQ(broadcastIndexMap({3, 1}, {2, 3, 4}), want);
  // Same shape: the identity; a scalar: all zeros.
  EXPECT_EQ(broadcastIndexMap({2, 2}, {2, 2}),
            (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(broadcastIndexMap({}, {3}), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_TRUE(broadcastIndexMap({1}, {0}).empty());
}

//===----------------------------------------------------------------------===//
// Element types and attributes
//===----------------------------------------------------------------------===//

TEST_F(HostTensorTest, RoundToElementType) {
  EXPECT_EQ(roundToElementType(b.getF64Type(), 0.1), 0.1);
  // float(np.float32(0.1)) -> 0.10000000149011612
  EXPECT_EQ(roundToElementType(b.getF32Type(), 0.1), 0.10000000149011612);
  // float(np.float16(0.1)) -> 0.0999755859375
  EXPECT_EQ(roundToElementType(b.getF16Type(), 0.1), 0.0999755859375);
  // By hand: 0.1 = 0x3DCCCCCD in f32; bf16 keeps the top 16 bits, rounding
  // 0xCCCD > 0x8000 up: 0x3DCD = (1 + 77/128) * 2^-4 = 0.10009765625.
  EXPECT_EQ(roundToElementType(b.getBF16Type(), 0.1), 0.10009765625);
  EXPECT_EQ(roundToElementType(b.getI1Type(), -2.0), 1.0);
  EXPECT_EQ(roundToElementType(b.getI1Type(), 0.0), 0.0);
  EXPECT_EQ(roundToElementType(b.getI64Type(), -2.7), -2.0);
  EXPECT_EQ(roundToElementType(b.getI32Type(), 2.7), 2.0);
}

TEST_F(HostTensorTest, SaturatingInts) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  // INT64_MAX as a double is 2^63 (exporters' "to the end").
  EXPECT_EQ(toInt64Saturated(double(kMax)), kMax);
  EXPECT_EQ(toInt64Saturated(1e30), kMax);
  EXPECT_EQ(toInt64Saturated(-1e30), kMin);
  EXPECT_EQ(toInt64Saturated(std::nan("")), 0);
  EXPECT_EQ(toInt64Saturated(-3.9), -3);
  HostTensor t;
  t.shape = {3};
  t.type = b.getI64Type();
  t.data = {double(kMax), -1.0, 4.0};
  EXPECT_EQ(toInts(t), (SmallVector<int64_t>{kMax, -1, 4}));
}

TEST_F(HostTensorTest, AttributeRoundTrip) {
  // i64 with INT64_MAX and a negative value.
  auto i64 = RankedTensorType::get({3}, b.getI64Type());
  auto ints = DenseElementsAttr::get(
      i64, ArrayRef<int64_t>{std::numeric_limits<int64_t>::max(), -5, 7});
  HostTensor t = HostTensor::fromAttr(ints);
  EXPECT_EQ(t.shape, (SmallVector<int64_t>{3}));
  EXPECT_EQ(t.data, doubles({9223372036854775808.0, -5.0, 7.0}));
  EXPECT_EQ(t.toAttr(), ints);
  // f32 values are widened exactly; f16 output rounds to nearest even.
  auto f32 = RankedTensorType::get({2}, b.getF32Type());
  auto floats = DenseElementsAttr::get(f32, ArrayRef<float>{0.1f, -2.5f});
  HostTensor f = HostTensor::fromAttr(floats);
  EXPECT_EQ(f.data, doubles({double(0.1f), -2.5}));
  EXPECT_TRUE(f.isFloat());
  EXPECT_EQ(f.toAttr(), floats);
  DenseElementsAttr half = f.toAttr(b.getF16Type());
  // float(np.float16(np.float32(0.1))) -> 0.0999755859375
  EXPECT_EQ(HostTensor::fromAttr(half).data, doubles({0.0999755859375, -2.5}));
  // i1: non-zero is true.
  HostTensor m;
  m.shape = {2, 2};
  m.type = b.getI1Type();
  m.data = {0.0, 3.0, -1.0, 0.0};
  HostTensor back = HostTensor::fromAttr(m.toAttr());
  EXPECT_TRUE(back.isBool());
  EXPECT_EQ(back.data, doubles({0.0, 1.0, 1.0, 0.0}));
  // i8 wraps after saturation to int64 (300 = 0x12C -> 0x2C = 44).
  HostTensor w;
  w.shape = {1};
  w.type = b.getIntegerType(8);
  w.data = {300.0};
  EXPECT_EQ(HostTensor::fromAttr(w.toAttr()).data, doubles({44.0}));
  // Splats: equal values give a splat attribute; 0.0 and -0.0 differ.
  HostTensor s = arange({2, 3}, b.getF32Type());
  s.data.assign(6, 2.0);
  EXPECT_TRUE(s.toAttr().isSplat());
  EXPECT_EQ(HostTensor::fromAttr(s.toAttr()).data, s.data);
  s.data.assign({0.0, 0.0, 0.0, 0.0, -0.0, 0.0});
  DenseElementsAttr signedZero = s.toAttr();
  EXPECT_FALSE(signedZero.isSplat());
  EXPECT_TRUE(std::signbit(HostTensor::fromAttr(signedZero).data[4]));
  EXPECT_TRUE(HostTensor::isSupportedElementType(b.getIndexType()));
  EXPECT_FALSE(
      HostTensor::isSupportedElementType(ComplexType::get(b.getF32Type())));
}

//===----------------------------------------------------------------------===//
// Folds
//===----------------------------------------------------------------------===//

TEST_F(HostTensorTest, Reshape) {
  HostTensor a = arange({2, 3});
  FailureOr<HostTensor> r = reshapeHost(a, {3, 1, 2}, [&] { return err(); });
  ASSERT_TRUE(succeeded(r));
  EXPECT_EQ(r->shape, (SmallVector<int64_t>{3, 1, 2}));
  EXPECT_EQ(r->data, a.data);
  EXPECT_TRUE(failed(reshapeHost(a, {4}, [&] { return err(); })));
  EXPECT_EQ(lastMessage(), "cannot reshape [2,3] to [4]");
}

TEST_F(HostTensorTest, Transpose) {
  // np.transpose(np.arange(24).reshape(2,3,4), (2,0,1)).ravel()
  FailureOr<HostTensor> r =
      transposeHost(arange({2, 3, 4}), {2, 0, 1}, [&] { return err(); });
  ASSERT_TRUE(succeeded(r));
  EXPECT_EQ(r->shape, (SmallVector<int64_t>{4, 2, 3}));
  EXPECT_EQ(r->data, doubles({0, 4, 8,  12, 16, 20, 1, 5, 9,  13, 17, 21,
                              2, 6, 10, 14, 18, 22, 3, 7, 11, 15, 19, 23}));
  EXPECT_TRUE(failed(
      transposeHost(arange({2, 3, 4}), {0, 0, 1}, [&] { return err(); })));
  EXPECT_EQ(lastMessage(), "permutation [0,0,1] is not a permutation of 0..2");
}

TEST_F(HostTensorTest, Slice) {
  // a = np.arange(24).reshape(2,3,4); a[1:2, 0:3:2, 1:4:2].ravel()
  FailureOr<HostTensor> r = sliceHost(arange({2, 3, 4}), {1, 0, 1}, {1, 2, 2},
                                      {1, 2, 2}, [&] { return err(); });
  ASSERT_TRUE(succeeded(r));
  EXPECT_EQ(r->shape, (SmallVector<int64_t>{1, 2, 2}));
  EXPECT_EQ(r->data, doubles({13, 15, 21, 23}));
  // An empty slice at the end of a dimension (ONNX starts clamp to dim).
  r = sliceHost(arange({2, 3}), {2, 0}, {1, 1}, {0, 3}, [&] { return err(); });
  ASSERT_TRUE(succeeded(r));
  EXPECT_TRUE(r->data.empty());
  // a[0:1, 0:3:2, 1:5:2] would read a[..., 5] of a dimension of size 4.
  EXPECT_TRUE(failed(sliceHost(arange({2, 3, 4}), {0, 0, 1}, {1, 2, 2},
                               {1, 2, 3}, [&] { return err(); })));
  EXPECT_EQ(lastMessage(), "slice of dimension 2 (size 4) with start 1, step "
                           "2 and 3 elements is out of range");
  EXPECT_TRUE(
      failed(sliceHost(arange({2, 3}), {0}, {1}, {1}, [&] { return err(); })));
}

TEST_F(HostTensorTest, Reverse) {
  // np.flip(np.arange(24).reshape(2,3,4), (0,2)).ravel()
  FailureOr<HostTensor> r =
      reverseHost(arange({2, 3, 4}), {0, 2}, [&] { return err(); });
  ASSERT_TRUE(succeeded(r));
  EXPECT_EQ(r->data, doubles({15, 14, 13, 12, 19, 18, 17, 16, 23, 22, 21, 20,
                              3,  2,  1,  0,  7,  6,  5,  4,  11, 10, 9,  8}));
  EXPECT_TRUE(failed(reverseHost(arange({2, 3}), {2}, [&] { return err(); })));
  EXPECT_EQ(lastMessage(), "dimension 2 is out of range for rank 2");
}

TEST_F(HostTensorTest, Concat) {
  // x = np.arange(4).reshape(2,1,2); y = np.arange(10,18).reshape(2,2,2)
  // np.concatenate([x, y], 1).ravel()
  HostTensor x = arange({2, 1, 2}), y = arange({2, 2, 2});
  for (double &v : y.data)
    v += 10;
  FailureOr<HostTensor> r = concatHost({x, y}, 1, [&] { return err(); });
  ASSERT_TRUE(succeeded(r));
  EXPECT_EQ(r->shape, (SmallVector<int64_t>{2, 3, 2}));
  EXPECT_EQ(r->data, doubles({0, 1, 10, 11, 12, 13, 2, 3, 14, 15, 16, 17}));
  EXPECT_TRUE(failed(concatHost({x, y}, 2, [&] { return err(); })));
  EXPECT_EQ(lastMessage(), "inputs differ in dimension 1");
  HostTensor f = arange({2, 1, 2}, b.getF32Type());
  EXPECT_TRUE(failed(concatHost({x, f}, 1, [&] { return err(); })));
  EXPECT_EQ(lastMessage(), "inputs differ in rank or element type");
  EXPECT_TRUE(failed(concatHost({x}, 3, [&] { return err(); })));
}

TEST_F(HostTensorTest, Gather) {
  // np.take(np.arange(12).reshape(3,4), [[2,-1],[0,1]], axis=1) -> shape
  // (3, 2, 2)
  HostTensor idx;
  idx.shape = {2, 2};
  idx.type = b.getI64Type();
  idx.data = {2, -1, 0, 1};
  FailureOr<HostTensor> r =
      gatherHost(arange({3, 4}), idx, 1, [&] { return err(); });
  ASSERT_TRUE(succeeded(r));
  EXPECT_EQ(r->shape, (SmallVector<int64_t>{3, 2, 2}));
  EXPECT_EQ(r->data, doubles({2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9}));
  idx.data = {2, 4, 0, 1};
  EXPECT_TRUE(
      failed(gatherHost(arange({3, 4}), idx, 1, [&] { return err(); })));
  EXPECT_EQ(lastMessage(), "index 4 is out of range [-4, 4)");
}

TEST_F(HostTensorTest, Broadcast) {
  // np.broadcast_to(np.arange(3).reshape(3,1), (2,3,4)) reads the index map
  // of BroadcastIndexMap.
  FailureOr<HostTensor> r =
      broadcastHost(arange({3, 1}), {2, 3, 4}, [&] { return err(); });
  ASSERT_TRUE(succeeded(r));
  EXPECT_EQ(r->data, doubles({0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
                              0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2}));
  EXPECT_TRUE(
      failed(broadcastHost(arange({3, 2}), {2, 3, 4}, [&] { return err(); })));
  EXPECT_EQ(lastMessage(), "cannot broadcast [3,2] to [2,3,4]");
}

TEST_F(HostTensorTest, BroadcastInDim) {
  // x = np.arange(6).reshape(2,3); dims [1, 0] into (3,2) is x.T.ravel()
  FailureOr<HostTensor> r =
      broadcastInDimHost(arange({2, 3}), {3, 2}, {1, 0}, [&] { return err(); });
  ASSERT_TRUE(succeeded(r));
  EXPECT_EQ(r->data, doubles({0, 3, 1, 4, 2, 5}));
  // x3 = np.array([[5],[6],[7]]); dims [0, 2] into (3,2,4):
  // np.broadcast_to(x3[:, None, :], (3,2,4)).ravel()
  HostTensor x3 = arange({3, 1});
  x3.data = {5, 6, 7};
  r = broadcastInDimHost(x3, {3, 2, 4}, {0, 2}, [&] { return err(); });
  ASSERT_TRUE(succeeded(r));
  EXPECT_EQ(r->data, doubles({5, 5, 5, 5, 5, 5, 5, 5, 6, 6, 6, 6,
                              6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7}));
  EXPECT_TRUE(failed(broadcastInDimHost(arange({2, 3}), {3, 3}, {1, 0},
                                        [&] { return err(); })));
  EXPECT_EQ(lastMessage(), "operand dimension 0 of size 2 cannot broadcast to "
                           "result dimension 1 of size 3");
  EXPECT_TRUE(failed(
      broadcastInDimHost(arange({2, 3}), {3, 2}, {0}, [&] { return err(); })));
  EXPECT_TRUE(failed(broadcastInDimHost(arange({2, 3}), {3, 2}, {0, 2},
                                        [&] { return err(); })));
}

TEST_F(HostTensorTest, Iota) {
  // np.broadcast_to(np.arange(3), (2,3)).ravel()
  HostTensor r = iotaHost({2, 3}, 1, b.getI32Type());
  EXPECT_EQ(r.data, doubles({0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(iotaHost({2, 3}, 0, b.getF32Type()).data,
            doubles({0, 0, 0, 1, 1, 1}));
}

TEST_F(HostTensorTest, Elementwise) {
  // p = np.array([0.1,0.2,0.3], np.float32).reshape(3,1)
  // q = np.array([1.5,0.2,-2.0,1e-8], np.float32)
  // [float(v) for v in (p + q).ravel()]   (float32 arithmetic)
  Type f32 = b.getF32Type();
  HostTensor p, q;
  p.shape = {3, 1};
  p.type = f32;
  p.data = {double(0.1f), double(0.2f), double(0.3f)};
  q.shape = {4};
  q.type = f32;
  q.data = {1.5, double(0.2f), -2.0, double(1e-8f)};
  auto add = [](ArrayRef<double> a) { return a[0] + a[1]; };
  FailureOr<HostTensor> r =
      elementwiseHost({&p, &q}, {3, 4}, f32, add, [&] { return err(); });
  ASSERT_TRUE(succeeded(r));
  EXPECT_EQ(
      r->data,
      doubles({1.600000023841858, 0.30000001192092896, -1.899999976158142,
               0.10000000894069672, 1.7000000476837158, 0.4000000059604645,
               -1.7999999523162842, 0.20000001788139343, 1.7999999523162842,
               0.5, -1.7000000476837158, 0.30000001192092896}));
  // (p < q).astype(int).ravel(), as i1.
  auto less = [](ArrayRef<double> a) { return double(a[0] < a[1]); };
  r = elementwiseHost({&p, &q}, {3, 4}, b.getI1Type(), less,
                      [&] { return err(); });
  ASSERT_TRUE(succeeded(r));
  EXPECT_EQ(r->data, doubles({1, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0}));
  // select(c, x, y) with a scalar condition (rank 0).
  HostTensor c;
  c.type = b.getI1Type();
  c.data = {0.0};
  HostTensor x = arange({2}), y = arange({2});
  y.data = {7, 8};
  r = elementwiseHost(
      {&c, &x, &y}, {2}, x.type,
      [](ArrayRef<double> a) { return a[0] != 0.0 ? a[1] : a[2]; },
      [&] { return err(); });
  ASSERT_TRUE(succeeded(r));
  EXPECT_EQ(r->data, doubles({7, 8}));
  EXPECT_TRUE(failed(
      elementwiseHost({&p, &q}, {3, 5}, f32, add, [&] { return err(); })));
  EXPECT_EQ(lastMessage(),
            "operand #1 of shape [4] does not broadcast to [3,5]");
}

} // namespace
