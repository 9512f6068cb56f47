//===- CudaSmoke.cpp - the CUDA backend's mgpu* layer on a real GPU --------===//
//
// Runs kernels that MLIR compiled (cuda_smoke.mlir: gpu dialect -> NVVM ->
// fatbin embedded in host code calling mgpu*) through libzbrt's mgpu*
// implementation over the dlopen'd CUDA driver, on managed memory, and
// compares them with a CPU computation of the same float arithmetic:
//   y = (x + b) * tanh(x + b)   elementwise (64 x 128), one fused kernel
//   s[i] = sum_j y[i][j]        row sums (serial per row, in order)
// tanh is libdevice's on the GPU and libm's here: stated tolerance 4 ulp on
// y (relative 5e-7), and 1e-5 relative on s; two runs must agree bit for bit.
// Prints one PASS/FAIL line per check; exits 1 on failure and 77 (ctest:
// skipped) with one line when no GPU is usable, e.g. here and in CI.
//
//===----------------------------------------------------------------------===//

#include "zbrt/Mgpu.h"
#include "zbrt/zbrt.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

constexpr int64_t kRows = 64, kCols = 128;

template <int R> struct Memref {
  float *allocated, *aligned;
  int64_t offset, sizes[R], strides[R];
};

Memref<2> matrix(float *p) { return {p, p, 0, {kRows, kCols}, {kCols, 1}}; }
Memref<1> vector(float *p) { return {p, p, 0, {kRows}, {1}}; }

} // namespace

extern "C" void _mlir_ciface_bias_gelu_rowsum(Memref<2> *x, Memref<2> *b,
                                              Memref<2> *y, Memref<1> *s);

static int failures = 0;
static void report(bool ok, const char *what, double measured, double bound) {
  std::printf("%s %s: %.3g (bound %.3g)\n", ok ? "PASS" : "FAIL", what,
              measured, bound);
  failures += !ok;
}

int main() {
  char why[256];
  if (zbrt_cuda_available(why, sizeof why) != 0) {
    std::printf("skipped: %s\n", why);
    return 77;
  }
  std::printf("%s\n", why);
  const size_t matBytes = kRows * kCols * sizeof(float);
  auto *x = static_cast<float *>(mgpuMemAlloc(matBytes, nullptr, true));
  auto *b = static_cast<float *>(mgpuMemAlloc(matBytes, nullptr, true));
  auto *y = static_cast<float *>(mgpuMemAlloc(matBytes, nullptr, true));
  auto *s = static_cast<float *>(
      mgpuMemAlloc(kRows * sizeof(float), nullptr, true));
  for (int64_t i = 0; i < kRows * kCols; ++i) {
    x[i] = std::sin(0.37f * i) * 2.0f;
    b[i] = 0.01f * (i % 17) - 0.08f;
  }
  std::memset(s, 0, kRows * sizeof(float));
  Memref<2> mx = matrix(x), mb = matrix(b), my = matrix(y);
  Memref<1> ms = vector(s);
  _mlir_ciface_bias_gelu_rowsum(&mx, &mb, &my, &ms);

  // CPU reference with the same float operations in the same order.
  double yErr = 0, sErr = 0;
  for (int64_t i = 0; i < kRows; ++i) {
    float rowSum = 0;
    for (int64_t j = 0; j < kCols; ++j) {
      float v = x[i * kCols + j] + b[i * kCols + j];
      float ref = v * std::tanh(v);
      rowSum += ref;
      double d = std::fabs((double)y[i * kCols + j] - ref) /
                 std::max(1e-30, std::fabs((double)ref));
      yErr = std::max(yErr, std::fabs(ref) < 1e-30 ? 0.0 : d);
    }
    sErr = std::max(sErr, std::fabs((double)s[i] - rowSum) /
                              std::max(1.0, std::fabs((double)rowSum)));
  }
  report(yErr <= 5e-7, "elementwise kernel vs CPU, max relative error", yErr,
         5e-7);
  report(sErr <= 1e-5, "row-sum kernel vs CPU, max relative error", sErr,
         1e-5);

  // Deterministic: a second run gives the same bits.
  std::vector<float> first(y, y + kRows * kCols), firstS(s, s + kRows);
  std::memset(s, 0, kRows * sizeof(float));
  _mlir_ciface_bias_gelu_rowsum(&mx, &mb, &my, &ms);
  bool same = std::memcmp(first.data(), y, matBytes) == 0 &&
              std::memcmp(firstS.data(), s, kRows * sizeof(float)) == 0;
  report(same, "second run bit-identical (0 = yes)", same ? 0 : 1, 0);

  // Steady state: a call (stream create, 2 launches, synchronize, destroy).
  const int calls = 200;
  auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < calls; ++k)
    _mlir_ciface_bias_gelu_rowsum(&mx, &mb, &my, &ms);
  double us = std::chrono::duration<double, std::micro>(
                  std::chrono::steady_clock::now() - t0)
                  .count() /
              calls;
  std::printf("time per call (2 kernels, stream create/sync/destroy): %.1f "
              "us\n",
              us);
  for (float *p : {x, b, y, s})
    mgpuMemFree(p, nullptr);
  std::printf("%s\n", failures ? "FAILED" : "ALL PASSED");
  return failures ? 1 : 0;
}
