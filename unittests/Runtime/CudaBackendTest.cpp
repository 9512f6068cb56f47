//===- CudaBackendTest.cpp - zbrt's CUDA backend through the stand-in -----===//
//
// zbrt_cuda_start with the driver, cuBLAS and NCCL replaced by
// libzb_fake_cuda.so (FakeCuda.cpp: host memory, cuBLAS's column-major
// sgemm computed naively in double, device pointers checked). One process,
// no MPI job: no communicators. Checks that every row-major view
// zbrt_sgemm_memref accepts (transposes, padded rows, transposed views,
// strided views that are copied) reaches cuBLAS as the right column-major
// call on device memory, against a float64 reference computed here; that
// device errors end the process with the call, the pass and cuBLAS's
// status; and that the pool hands out managed (device-visible) memory. The
// same for the bfloat16 GEMMs (zbrt_gemm_bf16_memref, cublasGemmEx), whose
// results must be the CPU backend's bit for bit where float32 sums are exact.
//
//===----------------------------------------------------------------------===//

#include "zbrt/zbrt.h"

#include "../../runtime/lib/Bfloat16.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <tuple>
#include <vector>

namespace {

/// Starts the backend once, on the stand-in.
void startBackend() {
  static bool started = [] {
    for (const char *var : {"ZBRT_CUDA_DRIVER", "ZBRT_CUBLAS", "ZBRT_NCCL"})
      setenv(var, ZB_FAKE_CUDA_LIB, 1);
    zbrt_cuda_start(ZBRT_CUDA_DETERMINISTIC);
    return true;
  }();
  (void)started;
}

/// A device (managed) buffer of floats filled from `rng`.
struct DeviceMatrix {
  float *data;
  int64_t elements;
  DeviceMatrix(int64_t n, std::mt19937 &rng) : elements(n) {
    data = static_cast<float *>(zbrt_host_buffer_alloc(n * sizeof(float)));
    std::uniform_real_distribution<float> u(-1, 1);
    for (int64_t i = 0; i < n; ++i)
      data[i] = u(rng);
  }
  ~DeviceMatrix() { zbrt_host_buffer_free(data); }
};

struct View {
  int64_t offset, rows, cols, rowStride, colStride;
  double at(const float *base, int64_t i, int64_t j) const {
    return base[offset + i * rowStride + j * colStride];
  }
};

enum class Layout { RowMajor, Padded, TransposedView, Strided };

/// A view of `rows` x `cols` in `layout` and the elements it spans.
View makeView(int64_t rows, int64_t cols, Layout layout, int64_t &extent) {
  switch (layout) {
  case Layout::RowMajor:
    extent = rows * cols;
    return {0, rows, cols, cols, 1};
  case Layout::Padded: // rows of cols + 3, at offset 5
    extent = 5 + rows * (cols + 3);
    return {5, rows, cols, cols + 3, 1};
  case Layout::TransposedView: // column-major storage
    extent = rows * cols;
    return {0, rows, cols, 1, rows};
  case Layout::Strided: // every other element: copied by the runtime
    extent = 2 * rows * cols;
    return {0, rows, cols, 2 * cols, 2};
  }
  return {};
}

const char *name(Layout l) {
  switch (l) {
  case Layout::RowMajor:
    return "row-major";
  case Layout::Padded:
    return "padded";
  case Layout::TransposedView:
    return "transposed view";
  case Layout::Strided:
    return "strided";
  }
  return "?";
}

} // namespace

TEST(CudaBackend, GemmViewsMatchFloat64Reference) {
  startBackend();
  ASSERT_TRUE(zbrt_cuda_started());
  std::mt19937 rng(7);
  ZbrtCudaStats before{};
  zbrt_cuda_stats(&before);
  int cases = 0;
  for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{3, 5, 4},
                         {1, 7, 3},
                         {6, 1, 2},
                         {4, 4, 1},
                         {9, 6, 11}})
    for (int transA = 0; transA < 2; ++transA)
      for (int transB = 0; transB < 2; ++transB)
        for (Layout la : {Layout::RowMajor, Layout::Padded,
                          Layout::TransposedView, Layout::Strided})
          for (Layout lc : {Layout::RowMajor, Layout::Strided}) {
            Layout lb = la == Layout::Padded ? Layout::TransposedView
                                             : Layout::Padded;
            int64_t ea = 0, eb = 0, ec = 0;
            // Stored shapes: A is M x K (K x M when transA), B is K x N.
            View va = makeView(transA ? K : M, transA ? M : K, la, ea);
            View vb = makeView(transB ? N : K, transB ? K : N, lb, eb);
            View vc = makeView(M, N, lc, ec);
            DeviceMatrix a(ea, rng), b(eb, rng), c(ec, rng);
            zbrt_sgemm_memref(a.data, a.data, va.offset, va.rows, va.cols,
                              va.rowStride, va.colStride, b.data, b.data,
                              vb.offset, vb.rows, vb.cols, vb.rowStride,
                              vb.colStride, c.data, c.data, vc.offset, vc.rows,
                              vc.cols, vc.rowStride, vc.colStride, transA,
                              transB);
            double worst = 0;
            for (int64_t i = 0; i < M; ++i)
              for (int64_t j = 0; j < N; ++j) {
                double want = 0;
                for (int64_t k = 0; k < K; ++k)
                  want += (transA ? va.at(a.data, k, i) : va.at(a.data, i, k)) *
                          (transB ? vb.at(b.data, j, k) : vb.at(b.data, k, j));
                worst = std::max(worst, std::fabs(vc.at(c.data, i, j) - want));
              }
            EXPECT_LT(worst, 1e-5)
                << M << "x" << N << "x" << K << " transA=" << transA
                << " transB=" << transB << " A " << name(la) << ", B "
                << name(lb) << ", C " << name(lc);
            ++cases;
          }
  ZbrtCudaStats after{};
  zbrt_cuda_stats(&after);
  // One cuBLAS call per product (strided operands are packed first).
  EXPECT_EQ(after.gemms - before.gemms, cases);
  EXPECT_EQ(cases, 5 * 2 * 2 * 4 * 2);
  // Every pointer the stand-in saw was device memory.
  void *fake = dlopen(ZB_FAKE_CUDA_LIB, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(fake, nullptr);
  auto badPointers =
      reinterpret_cast<long (*)()>(dlsym(fake, "zb_fake_cuda_bad_pointers"));
  ASSERT_NE(badPointers, nullptr);
  EXPECT_EQ(badPointers(), 0);
}

TEST(CudaBackend, PoolHandsOutDeviceVisibleMemory) {
  startBackend();
  EXPECT_TRUE(zbrt_cuda_memory_enabled());
  std::mt19937 rng(3);
  DeviceMatrix a(12, rng), b(12, rng);
  // A pool block used as C: cuBLAS accepts it (the stand-in checks that
  // every operand lies in its allocations).
  auto *c = static_cast<float *>(_mlir_memref_to_llvm_alloc(9 * 4));
  zbrt_sgemm((int64_t)a.data, (int64_t)b.data, (int64_t)c, 3, 3, 4, 0, 0,
             1.0f, 0.0f, 4, 3, 3);
  double want = 0;
  for (int k = 0; k < 4; ++k)
    want += (double)a.data[k] * b.data[k * 3];
  EXPECT_NEAR(c[0], want, 1e-5);
  _mlir_memref_to_llvm_free(c);
}

TEST(CudaBackendDeathTest, HostPointerEndsTheJobNamingCuBLAS) {
  startBackend();
  std::vector<float> hostA(4, 1.0f), hostB(4, 1.0f), hostC(4, 0.0f);
  // Host memory handed to the GPU is an error a GPU reports too (here:
  // the stand-in's pointer check); the message names the call and status.
  EXPECT_EXIT(zbrt_sgemm((int64_t)hostA.data(), (int64_t)hostB.data(),
                         (int64_t)hostC.data(), 2, 2, 2, 0, 0, 1.0f, 0.0f, 2,
                         2, 2),
              testing::ExitedWithCode(1),
              "cuBLAS error in cublasSgemm \\(outside a pass\\): "
              "CUBLAS_STATUS_INVALID_VALUE");
}

TEST(CudaBackendDeathTest, InjectedGemmFailureNamesThePass) {
  startBackend();
  std::mt19937 rng(5);
  DeviceMatrix a(4, rng), b(4, rng), c(4, rng);
  EXPECT_EXIT(
      {
        ZbrtCudaStats s{};
        zbrt_cuda_stats(&s);
        // The stand-in counts its own calls: fail the next one.
        void *fake = dlopen(ZB_FAKE_CUDA_LIB, RTLD_NOW | RTLD_NOLOAD);
        auto calls = reinterpret_cast<long (*)()>(
            dlsym(fake, "zb_fake_cuda_gemm_calls"));
        setenv("ZB_FAKE_CUDA_FAIL_GEMM", std::to_string(calls() + 1).c_str(),
               1);
        zbrt_action_begin(1, 2, 3);
        zbrt_sgemm((int64_t)a.data, (int64_t)b.data, (int64_t)c.data, 2, 2, 2,
                   0, 0, 1.0f, 0.0f, 2, 2, 2);
      },
      testing::ExitedWithCode(1),
      "cuBLAS error in cublasSgemm \\(in B of stage 2, microbatch 3\\): "
      "CUBLAS_STATUS_EXECUTION_FAILED");
}

/// The optimizer on the device: SGD, AdamW, their rollbacks and the sum of
/// squares go to libzbrt's kernels (run by the stand-in with the
/// per-element code after unpacking the launch arguments as the driver
/// does), and agree with a float64 evaluation of the update rules.
TEST(CudaBackend, OptimizerKernelsFollowTheUpdateRules) {
  startBackend();
  std::mt19937 rng(11);
  const int64_t n = 1000;
  DeviceMatrix p(n, rng), g(n, rng), m(n, rng), v(n, rng);
  for (int64_t i = 0; i < n; ++i)
    v.data[i] = std::fabs(v.data[i]);
  std::vector<double> p0(p.data, p.data + n), m0(m.data, m.data + n),
      v0(v.data, v.data + n);
  const float lr = 0.01f, b1 = 0.9f, b2 = 0.99f, eps = 1e-8f, wd = 0.1f,
              scale = 0.25f;
  const int64_t step = 3;
  void *fake = dlopen(ZB_FAKE_CUDA_LIB, RTLD_NOW | RTLD_NOLOAD);
  auto launches = reinterpret_cast<long (*)()>(
      dlsym(fake, "zb_fake_cuda_kernel_launches"));
  ASSERT_NE(launches, nullptr);
  const long launchesBefore = launches();
  zbrt_adamw_step(p.data, g.data, m.data, v.data, n, step, lr, b1, b2, eps,
                  wd, scale);
  zbrt_cuda_synchronize();
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    double gi = (double)g.data[i] * scale;
    double mi = b1 * m0[i] + (1 - b1) * gi;
    double vi = b2 * v0[i] + (1 - b2) * gi * gi;
    double mhat = mi / (1 - std::pow((double)b1, step));
    double vhat = vi / (1 - std::pow((double)b2, step));
    double want = p0[i] * (1 - lr * wd) - lr * mhat / (std::sqrt(vhat) + eps);
    worst = std::max(worst, std::fabs(p.data[i] - want) /
                                std::max(1e-3, std::fabs(want)));
    EXPECT_NEAR(m.data[i], mi, 1e-6);
  }
  EXPECT_LT(worst, 1e-4);
  // The rollback restores the parameters within a few ulps.
  zbrt_adamw_rollback(p.data, g.data, m.data, v.data, n, step, lr, b1, b2,
                      eps, wd, scale);
  zbrt_cuda_synchronize();
  for (int64_t i = 0; i < n; ++i)
    EXPECT_NEAR(p.data[i], p0[i], 1e-5 * std::max(1.0, std::fabs(p0[i])));
  // SGD and its rollback.
  std::vector<double> before(p.data, p.data + n);
  zbrt_sgd_step(p.data, g.data, n, lr, scale);
  zbrt_cuda_synchronize();
  for (int64_t i = 0; i < n; ++i)
    EXPECT_NEAR(p.data[i], before[i] - (double)lr * scale * g.data[i], 1e-6);
  zbrt_sgd_rollback(p.data, g.data, n, lr, scale);
  zbrt_cuda_synchronize();
  // Sum of squares over several blocks, and a NaN found.
  DeviceMatrix x(100000, rng);
  double want = 0;
  for (int64_t i = 0; i < x.elements; ++i)
    want += (double)x.data[i] * x.data[i];
  int32_t bad = -1;
  EXPECT_NEAR(zbrt_sum_squares(x.data, x.elements, &bad), want, 1e-9 * want);
  EXPECT_EQ(bad, 0);
  x.data[777] = NAN;
  zbrt_sum_squares(x.data, x.elements, &bad);
  EXPECT_EQ(bad, 1);
  // Every call above was a kernel launch, none a host loop.
  EXPECT_EQ(launches() - launchesBefore, 6);
}

/// zbrt_sum_squares_many on the device: one kernel for every buffer
/// (several blocks, one block, empty, a NaN), one host wait for all of
/// them, and each sum bit-identical to the single version's.
TEST(CudaBackend, SumSquaresManyWaitsOnceAndMatchesTheSingleVersion) {
  startBackend();
  std::mt19937 rng(17);
  std::vector<std::unique_ptr<DeviceMatrix>> buffers;
  for (int64_t n : {100000, 1, 0, 300000, 257})
    buffers.push_back(std::make_unique<DeviceMatrix>(n, rng));
  buffers[4]->data[200] = NAN;
  std::vector<const float *> xs;
  std::vector<int64_t> ns;
  for (auto &b : buffers) {
    xs.push_back(b->data);
    ns.push_back(b->elements);
  }
  void *fake = dlopen(ZB_FAKE_CUDA_LIB, RTLD_NOW | RTLD_NOLOAD);
  auto launches =
      reinterpret_cast<long (*)()>(dlsym(fake, "zb_fake_cuda_kernel_launches"));
  ASSERT_NE(launches, nullptr);
  auto syncs = [] {
    ZbrtCudaStats stats;
    zbrt_cuda_stats(&stats);
    return stats.hostSynchronizations;
  };
  const long launchesBefore = launches();
  const int64_t syncsBefore = syncs();
  std::vector<double> sums(xs.size(), -1);
  std::vector<int32_t> bad(xs.size(), -1);
  zbrt_sum_squares_many(xs.data(), ns.data(), (int64_t)xs.size(), sums.data(),
                        bad.data());
  EXPECT_EQ(launches() - launchesBefore, 1); // one kernel for all buffers
  EXPECT_EQ(syncs() - syncsBefore, 1);
  for (size_t k = 0; k < xs.size(); ++k) {
    int32_t want = -1;
    double sum = zbrt_sum_squares(xs[k], ns[k], &want);
    if (k != 4) { // bit-identical (buffer 4's sum is NaN)
      EXPECT_EQ(sums[k], sum) << k;
    }
    EXPECT_EQ(bad[k], want) << k;
  }
  EXPECT_EQ(bad[4], 1);
  EXPECT_EQ(syncs() - syncsBefore, 1 + (int64_t)xs.size());
  // A second, smaller call reuses the scratch.
  zbrt_sum_squares_many(xs.data(), ns.data(), 2, sums.data(), nullptr);
  EXPECT_EQ(sums[0], zbrt_sum_squares(xs[0], ns[0], nullptr));
}

/// Device copies of tensors of several sizes (not multiples of 256, 1, 0)
/// for the optimizer: parameters, gradients, moments (v >= 0).
struct DeviceTensors {
  std::vector<std::unique_ptr<DeviceMatrix>> p, g, m, v;
  explicit DeviceTensors(std::mt19937 &rng) {
    for (int64_t n : {1000, 1, 0, 4097, 255, 70000}) {
      for (auto *x : {&p, &g, &m, &v})
        x->push_back(std::make_unique<DeviceMatrix>(n, rng));
      for (int64_t i = 0; i < n; ++i)
        v.back()->data[i] = std::fabs(v.back()->data[i]) * 0.01f;
    }
  }
  /// The same values in new buffers.
  DeviceTensors(const DeviceTensors &o) {
    std::mt19937 unused;
    for (auto [to, from] :
         {std::pair{&p, &o.p}, {&g, &o.g}, {&m, &o.m}, {&v, &o.v}})
      for (auto &x : *from) {
        to->push_back(std::make_unique<DeviceMatrix>(x->elements, unused));
        std::copy(x->data, x->data + x->elements, to->back()->data);
      }
  }
  std::vector<ZbrtOptimizerTensor> tensors() const {
    std::vector<ZbrtOptimizerTensor> t;
    for (size_t k = 0; k < p.size(); ++k)
      t.push_back(
          {p[k]->data, g[k]->data, m[k]->data, v[k]->data, p[k]->elements});
    return t;
  }
  /// Parameters and moments bit for bit.
  bool operator==(const DeviceTensors &o) const {
    zbrt_cuda_synchronize();
    for (auto [a, b] : {std::pair{&p, &o.p}, {&m, &o.m}, {&v, &o.v}})
      for (size_t k = 0; k < a->size(); ++k)
        if (std::memcmp((*a)[k]->data, (*b)[k]->data,
                        (*a)[k]->elements * sizeof(float)) != 0)
          return false;
    return true;
  }
};

/// The multi-tensor optimizer on the device: each zbrt_*_many call is one
/// kernel launch for all its tensors, and leaves every parameter and moment
/// bit-identical to the single-tensor kernels; a call with the same
/// tensors as an earlier one makes no driver call but the launch (its
/// table of tensors is kept on the device).
TEST(CudaBackend, ManyTensorOptimizerIsOneLaunchAndMatchesSingleTensors) {
  startBackend();
  std::mt19937 rng(29);
  DeviceTensors many(rng);
  DeviceTensors single(many);
  const std::vector<ZbrtOptimizerTensor> t = many.tensors();
  const int64_t count = (int64_t)t.size();
  const float lr = 0.01f, b1 = 0.9f, b2 = 0.99f, eps = 1e-8f, wd = 0.1f,
              scale = 0.125f;
  void *fake = dlopen(ZB_FAKE_CUDA_LIB, RTLD_NOW | RTLD_NOLOAD);
  auto launches =
      reinterpret_cast<long (*)()>(dlsym(fake, "zb_fake_cuda_kernel_launches"));
  ASSERT_NE(launches, nullptr);
  auto driverCalls = [] {
    ZbrtCudaStats stats;
    zbrt_cuda_stats(&stats);
    return stats.driverCalls;
  };
  // Runs `call` (one _many call): one launch; with `steady`, one driver
  // call in all.
  auto once = [&](const char *what, bool steady, auto call) {
    const long launchesBefore = launches();
    const int64_t callsBefore = driverCalls();
    call();
    EXPECT_EQ(launches() - launchesBefore, 1) << what;
    if (steady) {
      EXPECT_EQ(driverCalls() - callsBefore, 1) << what;
    }
  };
  auto each = [&](auto fn) {
    for (const ZbrtOptimizerTensor &x : single.tensors())
      fn(x);
  };
  for (int64_t step : {1, 2, 3}) {
    once("AdamW", step > 1, [&] {
      zbrt_adamw_step_many(t.data(), count, step, lr, b1, b2, eps, wd, scale);
    });
    each([&](const ZbrtOptimizerTensor &x) {
      zbrt_adamw_step(x.param, x.grad, x.m, x.v, x.n, step, lr, b1, b2, eps, wd,
                      scale);
    });
    ASSERT_TRUE(many == single) << "AdamW step " << step;
  }
  once("AdamW rollback", true, [&] {
    zbrt_adamw_rollback_many(t.data(), count, 3, lr, b1, b2, eps, wd, scale);
  });
  each([&](const ZbrtOptimizerTensor &x) {
    zbrt_adamw_rollback(x.param, x.grad, x.m, x.v, x.n, 3, lr, b1, b2, eps, wd,
                        scale);
  });
  ASSERT_TRUE(many == single) << "AdamW rollback";
  // SGD (no moments) and its rollback; the second step is steady.
  std::vector<ZbrtOptimizerTensor> sgd = t;
  for (ZbrtOptimizerTensor &x : sgd)
    x.m = x.v = nullptr;
  for (int i = 0; i < 2; ++i) {
    once("SGD", i > 0,
         [&] { zbrt_sgd_step_many(sgd.data(), count, lr, scale); });
    each([&](const ZbrtOptimizerTensor &x) {
      zbrt_sgd_step(x.param, x.grad, x.n, lr, scale);
    });
    ASSERT_TRUE(many == single) << "SGD step " << i;
  }
  once("SGD rollback", true,
       [&] { zbrt_sgd_rollback_many(sgd.data(), count, lr, scale); });
  each([&](const ZbrtOptimizerTensor &x) {
    zbrt_sgd_rollback(x.param, x.grad, x.n, lr, scale);
  });
  ASSERT_TRUE(many == single) << "SGD rollback";
  // Another set of tensors (the gradients of the other set), then the
  // first again: both tables are kept.
  std::vector<ZbrtOptimizerTensor> other = t;
  for (size_t k = 0; k < other.size(); ++k)
    other[k].grad = single.g[k]->data;
  once("AdamW, other gradients", false, [&] {
    zbrt_adamw_step_many(other.data(), count, 4, lr, b1, b2, eps, wd, scale);
  });
  once("AdamW, the first gradients again", true, [&] {
    zbrt_adamw_step_many(t.data(), count, 5, lr, b1, b2, eps, wd, scale);
  });
  // Only empty tensors: nothing to launch.
  ZbrtOptimizerTensor empty{nullptr, nullptr, nullptr, nullptr, 0};
  const long launchesBefore = launches();
  zbrt_adamw_step_many(&empty, 1, 1, lr, b1, b2, eps, wd, scale);
  EXPECT_EQ(launches(), launchesBefore);
}

/// zbrt_sgemm_batched_memref on the device: one cublasSgemmStridedBatched
/// call for matrices at a constant batch stride (here transposed views of
/// A), compared with a float64 reference.
TEST(CudaBackend, BatchedGemmIsOneStridedBatchedCall) {
  startBackend();
  std::mt19937 rng(13);
  const int64_t batch = 4, M = 3, N = 5, K = 6;
  // A stored column-major per matrix (a transposed view), B row-major.
  DeviceMatrix a(batch * M * K, rng), b(batch * K * N, rng),
      c(batch * M * N, rng);
  ZbrtCudaStats before{};
  zbrt_cuda_stats(&before);
  zbrt_sgemm_batched_memref(a.data, a.data, 0, batch, M, K, M * K, 1, M,
                            b.data, b.data, 0, batch, K, N, K * N, N, 1,
                            c.data, c.data, 0, batch, M, N, M * N, N, 1, 0, 0);
  zbrt_cuda_synchronize();
  ZbrtCudaStats after{};
  zbrt_cuda_stats(&after);
  EXPECT_EQ(after.gemms - before.gemms, 1);
  double worst = 0;
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t r = 0; r < M; ++r)
      for (int64_t col = 0; col < N; ++col) {
        double want = 0;
        for (int64_t k = 0; k < K; ++k)
          want += (double)a.data[i * M * K + r + k * M] *
                  b.data[i * K * N + k * N + col];
        worst = std::max(worst,
                         std::fabs(c.data[i * M * N + r * N + col] - want));
      }
  EXPECT_LT(worst, 1e-5);
}

//===-- bfloat16 GEMMs: cublasGemmEx --------------------------------------===//

namespace {

/// A device (managed) buffer of `n` bfloat16 values: small integers in
/// [-8, 8] when `integers` (float32 sums of their products are exact in any
/// order, so every backend's result is the exact sum rounded once), else
/// roundings of uniform values in [-1, 1).
struct DeviceBf16 {
  uint16_t *data;
  int64_t elements;
  DeviceBf16(int64_t n, std::mt19937 &rng, bool integers) : elements(n) {
    data = static_cast<uint16_t *>(
        zbrt_host_buffer_alloc(std::max<int64_t>(n, 1) * sizeof(uint16_t)));
    std::uniform_real_distribution<float> u(-1, 1);
    std::uniform_int_distribution<int> small(-8, 8);
    for (int64_t i = 0; i < n; ++i)
      data[i] = zbrt::floatToBf16(integers ? (float)small(rng) : u(rng));
  }
  ~DeviceBf16() { zbrt_host_buffer_free(data); }
  double at(const View &v, int64_t i, int64_t j) const {
    return zbrt::bf16ToFloat(
        data[v.offset + i * v.rowStride + j * v.colStride]);
  }
};

/// What the CPU backend computes for element (i, j) (GemmTest.cpp checks it
/// against APFloat): the float32 sum of the products in k order (exact for
/// integer inputs), rounded once to bfloat16.
uint16_t cpuElement(const DeviceBf16 &a, const View &va, bool transA,
                    const DeviceBf16 &b, const View &vb, bool transB, int64_t K,
                    int64_t i, int64_t j) {
  float sum = 0;
  for (int64_t k = 0; k < K; ++k)
    sum += (float)(transA ? a.at(va, k, i) : a.at(va, i, k)) *
           (float)(transB ? b.at(vb, j, k) : b.at(vb, k, j));
  return zbrt::floatToBf16(sum);
}

} // namespace

// Every layout and transpose of zbrt_gemm_bf16_memref reaches cuBLAS as the
// right cublasGemmEx call on device memory: with integer inputs the result
// is bit for bit the CPU backend's (the exact float32 sum rounded once to
// bfloat16); with general inputs within one bfloat16 ulp (plus float32's
// rounding of the sum) of a float64 reference.
TEST(CudaBackend, Bf16GemmViewsMatchTheCpuBackend) {
  startBackend();
  std::mt19937 rng(23);
  ZbrtCudaStats before{};
  zbrt_cuda_stats(&before);
  int cases = 0;
  for (bool integers : {true, false})
    for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{3, 5, 4},
                           {1, 7, 3},
                           {6, 1, 2},
                           {4, 4, 1},
                           {9, 6, 37}})
      for (int transA = 0; transA < 2; ++transA)
        for (int transB = 0; transB < 2; ++transB)
          for (Layout la : {Layout::RowMajor, Layout::Padded,
                            Layout::TransposedView, Layout::Strided})
            for (Layout lc :
                 {Layout::RowMajor, Layout::Padded, Layout::Strided}) {
              Layout lb = la == Layout::Padded ? Layout::TransposedView
                                               : Layout::Padded;
              int64_t ea = 0, eb = 0, ec = 0;
              View va = makeView(transA ? K : M, transA ? M : K, la, ea);
              View vb = makeView(transB ? N : K, transB ? K : N, lb, eb);
              View vc = makeView(M, N, lc, ec);
              DeviceBf16 a(ea, rng, integers), b(eb, rng, integers),
                  c(ec, rng, integers);
              zbrt_gemm_bf16_memref(
                  a.data, a.data, va.offset, va.rows, va.cols, va.rowStride,
                  va.colStride, b.data, b.data, vb.offset, vb.rows, vb.cols,
                  vb.rowStride, vb.colStride, c.data, c.data, vc.offset,
                  vc.rows, vc.cols, vc.rowStride, vc.colStride, transA, transB);
              int wrong = 0;
              for (int64_t i = 0; i < M; ++i)
                for (int64_t j = 0; j < N; ++j) {
                  uint16_t got =
                      c.data[vc.offset + i * vc.rowStride + j * vc.colStride];
                  if (integers) {
                    wrong += got !=
                             cpuElement(a, va, transA, b, vb, transB, K, i, j);
                    continue;
                  }
                  double want = 0, magnitude = 0;
                  for (int64_t k = 0; k < K; ++k) {
                    double p = (transA ? a.at(va, k, i) : a.at(va, i, k)) *
                               (transB ? b.at(vb, j, k) : b.at(vb, k, j));
                    want += p;
                    magnitude += std::fabs(p);
                  }
                  int e = 0;
                  std::frexp(std::max(std::fabs(want), 1e-30), &e);
                  double tol =
                      std::ldexp(1.0, e - 8) + K * std::ldexp(magnitude, -23);
                  wrong += std::fabs(zbrt::bf16ToFloat(got) - want) > tol;
                }
              EXPECT_EQ(wrong, 0)
                  << M << "x" << N << "x" << K << " transA=" << transA
                  << " transB=" << transB << " A " << name(la) << ", B "
                  << name(lb) << ", C " << name(lc)
                  << (integers ? ", integers" : "");
              ++cases;
            }
  ZbrtCudaStats after{};
  zbrt_cuda_stats(&after);
  EXPECT_EQ(cases, 2 * 5 * 2 * 2 * 4 * 3);
  EXPECT_EQ(after.gemms - before.gemms, cases); // one cublasGemmEx each
  void *fake = dlopen(ZB_FAKE_CUDA_LIB, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(fake, nullptr);
  auto badPointers =
      reinterpret_cast<long (*)()>(dlsym(fake, "zb_fake_cuda_bad_pointers"));
  ASSERT_NE(badPointers, nullptr);
  EXPECT_EQ(badPointers(), 0);
}

/// zbrt_gemm_bf16_batched_memref on the device: one
/// cublasGemmStridedBatchedEx call (matrices of A as transposed views at a
/// padded batch stride), each matrix bit for bit zbrt_gemm_bf16_memref's
/// result, which is the CPU backend's for integer inputs.
TEST(CudaBackend, Bf16BatchedGemmIsOneStridedBatchedCall) {
  startBackend();
  std::mt19937 rng(31);
  const int64_t batch = 4, M = 3, N = 5, K = 6;
  const int64_t aStride = M * K + 3, bStride = K * N, cStride = M * N + 2;
  for (bool integers : {true, false}) {
    DeviceBf16 a(batch * aStride, rng, integers),
        b(batch * bStride, rng, integers), c(batch * cStride, rng, integers),
        single(M * N, rng, integers);
    ZbrtCudaStats before{};
    zbrt_cuda_stats(&before);
    zbrt_gemm_bf16_batched_memref(a.data, a.data, 0, batch, M, K, aStride, 1, M,
                                  b.data, b.data, 0, batch, K, N, bStride, N, 1,
                                  c.data, c.data, 0, batch, M, N, cStride, N, 1,
                                  0, 0);
    zbrt_cuda_synchronize();
    ZbrtCudaStats after{};
    zbrt_cuda_stats(&after);
    EXPECT_EQ(after.gemms - before.gemms, 1);
    for (int64_t i = 0; i < batch; ++i) {
      uint16_t *ai = a.data + i * aStride, *bi = b.data + i * bStride;
      zbrt_gemm_bf16_memref(ai, ai, 0, M, K, 1, M, bi, bi, 0, K, N, N, 1,
                            single.data, single.data, 0, M, N, N, 1, 0, 0);
      zbrt_cuda_synchronize();
      View va{i * aStride, M, K, 1, M}, vb{i * bStride, K, N, N, 1};
      for (int64_t r = 0; r < M; ++r)
        for (int64_t col = 0; col < N; ++col) {
          uint16_t got = c.data[i * cStride + r * N + col];
          EXPECT_EQ(got, single.data[r * N + col]) << "matrix " << i;
          if (integers) {
            EXPECT_EQ(got, cpuElement(a, va, false, b, vb, false, K, r, col))
                << "matrix " << i << " (" << r << ", " << col << ")";
          }
        }
    }
  }
}

/// The stand-in takes only what the runtime asks cublasGemmEx for (bf16
/// operands, CUBLAS_COMPUTE_32F): other types are CUBLAS_STATUS_NOT_SUPPORTED,
/// as cuBLAS answers an unsupported combination.
TEST(CudaBackend, StandInRefusesOtherGemmExTypes) {
  startBackend();
  void *fake = dlopen(ZB_FAKE_CUDA_LIB, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(fake, nullptr);
  using GemmEx = int (*)(void *, int, int, int, int, int, const void *,
                         const void *, int, int, const void *, int, int,
                         const void *, void *, int, int, int, int);
  auto gemmEx = reinterpret_cast<GemmEx>(dlsym(fake, "cublasGemmEx"));
  ASSERT_NE(gemmEx, nullptr);
  std::mt19937 rng(2);
  DeviceBf16 a(4, rng, true), b(4, rng, true), c(4, rng, true);
  const float one = 1.0f, zero = 0.0f;
  auto call = [&](int aType, int cType, int compute) {
    return gemmEx(nullptr, 0, 0, 2, 2, 2, &one, a.data, aType, 2, b.data, aType,
                  2, &zero, c.data, cType, 2, compute, -1);
  };
  const int kBf16 = 14, kF32 = 0, kF16 = 2, kCompute32F = 68, kCompute16F = 64,
            kNotSupported = 15;
  EXPECT_EQ(call(kBf16, kBf16, kCompute32F), 0);
  EXPECT_EQ(call(kF32, kBf16, kCompute32F), kNotSupported);
  EXPECT_EQ(call(kBf16, kF32, kCompute32F), kNotSupported);
  EXPECT_EQ(call(kF16, kF16, kCompute32F), kNotSupported);
  EXPECT_EQ(call(kBf16, kBf16, kCompute16F), kNotSupported);
}

TEST(CudaBackendDeathTest, Bf16HostPointerEndsTheJobNamingCuBLAS) {
  startBackend();
  std::vector<uint16_t> hostA(4, 0x3f80), hostB(4, 0x3f80), hostC(4, 0);
  EXPECT_EXIT(zbrt_gemm_bf16_memref(hostA.data(), hostA.data(), 0, 2, 2, 2, 1,
                                    hostB.data(), hostB.data(), 0, 2, 2, 2, 1,
                                    hostC.data(), hostC.data(), 0, 2, 2, 2, 1,
                                    0, 0),
              testing::ExitedWithCode(1),
              "cuBLAS error in cublasGemmEx \\(outside a pass\\): "
              "CUBLAS_STATUS_INVALID_VALUE");
  std::vector<uint16_t> batchA(8, 0x3f80), batchB(8, 0x3f80), batchC(8, 0);
  EXPECT_EXIT(zbrt_gemm_bf16_batched_memref(
                  batchA.data(), batchA.data(), 0, 2, 2, 2, 4, 2, 1,
                  batchB.data(), batchB.data(), 0, 2, 2, 2, 4, 2, 1,
                  batchC.data(), batchC.data(), 0, 2, 2, 2, 4, 2, 1, 0, 0),
              testing::ExitedWithCode(1),
              "cuBLAS error in cublasGemmStridedBatchedEx \\(outside a "
              "pass\\): CUBLAS_STATUS_INVALID_VALUE");
}
