//===- OptimizerTest.cpp - SGD and AdamW against hand-written formulas ----===//
//
// AdamW reference: Loshchilov & Hutter, "Decoupled Weight Decay
// Regularization" (ICLR 2019), Algorithm 2 with the bias-corrected moments,
// as torch.optim.AdamW implements it:
//   p <- p - lr * wd * p
//   m <- b1 m + (1 - b1) g,   v <- b2 v + (1 - b2) g^2
//   p <- p - lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
// computed here in float64.
//
//===----------------------------------------------------------------------===//

#include "zbrt/zbrt.h"

#include "gtest/gtest.h"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {

TEST(Optimizer, SgdStep) {
  std::vector<float> p = {1.0f, -2.0f, 0.5f};
  std::vector<float> g = {0.4f, 0.8f, -1.6f};
  zbrt_sgd_step(p.data(), g.data(), 3, 0.1f, 0.25f);
  // p - lr * gradScale * g
  EXPECT_FLOAT_EQ(p[0], 1.0f - 0.1f * 0.25f * 0.4f);
  EXPECT_FLOAT_EQ(p[1], -2.0f - 0.1f * 0.25f * 0.8f);
  EXPECT_FLOAT_EQ(p[2], 0.5f + 0.1f * 0.25f * 1.6f);
}

TEST(Optimizer, AdamWFirstStepHandComputed) {
  // Step 1: m = (1-b1) g, v = (1-b2) g^2, so m_hat = g and v_hat = g^2 and
  // the update is p*(1 - lr*wd) - lr * g / (|g| + eps).
  float p = 2.0f, g = 0.5f, m = 0.0f, v = 0.0f;
  const float lr = 0.01f, wd = 0.1f, eps = 1e-8f;
  zbrt_adamw_step(&p, &g, &m, &v, 1, 1, lr, 0.9f, 0.999f, eps, wd, 1.0f);
  double expected = 2.0 * (1.0 - 0.01 * 0.1) - 0.01 * 0.5 / (0.5 + 1e-8);
  EXPECT_NEAR(p, expected, 1e-6);
  EXPECT_NEAR(m, 0.05, 1e-7);
  EXPECT_NEAR(v, 0.00025, 1e-8); // 1 - 0.999f is inexact in float32
}

TEST(Optimizer, AdamWMatchesReferenceOverSteps) {
  const int n = 5, steps = 8;
  const double lr = 0.003, b1 = 0.85, b2 = 0.99, eps = 1e-6, wd = 0.05;
  const double gradScale = 0.125;
  std::vector<float> p(n), m(n, 0.0f), v(n, 0.0f), g(n);
  std::vector<double> rp(n), rm(n, 0.0), rv(n, 0.0);
  for (int i = 0; i < n; ++i)
    rp[i] = p[i] = 0.3f * (float)(i - 2) + 0.1f;
  for (int t = 1; t <= steps; ++t) {
    for (int i = 0; i < n; ++i)
      g[i] = std::sin(0.7f * (float)(t * n + i)) * 4.0f; // varied signs
    zbrt_adamw_step(p.data(), g.data(), m.data(), v.data(), n, t, (float)lr,
                    (float)b1, (float)b2, (float)eps, (float)wd,
                    (float)gradScale);
    for (int i = 0; i < n; ++i) {
      double gi = (double)g[i] * gradScale;
      rp[i] -= lr * wd * rp[i];
      rm[i] = b1 * rm[i] + (1 - b1) * gi;
      rv[i] = b2 * rv[i] + (1 - b2) * gi * gi;
      double mHat = rm[i] / (1 - std::pow(b1, t));
      double vHat = rv[i] / (1 - std::pow(b2, t));
      rp[i] -= lr * mHat / (std::sqrt(vHat) + eps);
    }
    for (int i = 0; i < n; ++i) {
      EXPECT_NEAR(p[i], rp[i], 2e-6) << "step " << t << " element " << i;
      EXPECT_NEAR(m[i], rm[i], 1e-6) << "step " << t << " element " << i;
      EXPECT_NEAR(v[i], rv[i], 1e-6) << "step " << t << " element " << i;
    }
  }
}

TEST(Optimizer, AdamWZeroGradientOnlyDecays) {
  float p = 1.0f, g = 0.0f, m = 0.0f, v = 0.0f;
  zbrt_adamw_step(&p, &g, &m, &v, 1, 1, 0.1f, 0.9f, 0.999f, 1e-8f, 0.5f, 1.0f);
  EXPECT_FLOAT_EQ(p, 0.95f);
}

/// Rollback (the paper's Algorithm 1, in place): a step followed by its
/// rollback restores parameters and moments for random states, with weight
/// decay and bias correction at step 1 (m = v = 0) and later steps. Each
/// restored value is within a few float ulps of the scale of the values the
/// inversion subtracts (the moments' (m' - (1-beta1) g) / beta1 loses what
/// m' rounded away when |m| << |(1-beta1) g|: an absolute, not a relative,
/// bound).
TEST(Optimizer, AdamWRollbackRestoresState) {
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uni(0.0f, 0.01f);
  struct Hyper {
    int64_t step;
    float lr, beta1, beta2, eps, wd, scale;
  } cases[] = {{1, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f, 0.25f},
               {1, 3e-4f, 0.9f, 0.95f, 1e-6f, 0.0f, 1.0f},
               {7, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.01f, 0.125f},
               {1000, 1e-3f, 0.8f, 0.99f, 1e-8f, 0.5f, 1.0f}};
  const float ulp = FLT_EPSILON;
  for (const Hyper &h : cases) {
    const int n = 4096;
    std::vector<float> p(n), g(n), m(n), v(n);
    for (int i = 0; i < n; ++i) {
      p[i] = normal(rng);
      g[i] = normal(rng);
      m[i] = h.step == 1 ? 0.0f : 0.1f * normal(rng);
      v[i] = h.step == 1 ? 0.0f : uni(rng);
    }
    std::vector<float> p1 = p, m1 = m, v1 = v;
    zbrt_adamw_step(p1.data(), g.data(), m1.data(), v1.data(), n, h.step,
                    h.lr, h.beta1, h.beta2, h.eps, h.wd, h.scale);
    std::vector<float> p2 = p1, m2 = m1, v2 = v1;
    zbrt_adamw_rollback(p2.data(), g.data(), m2.data(), v2.data(), n, h.step,
                        h.lr, h.beta1, h.beta2, h.eps, h.wd, h.scale);
    for (int i = 0; i < n; ++i) {
      float gs = g[i] * h.scale;
      float mScale = std::max({std::fabs(m[i]), std::fabs(m1[i]),
                               (1 - h.beta1) * std::fabs(gs)});
      float vScale = std::max({v[i], v1[i], (1 - h.beta2) * gs * gs});
      float pScale = std::max(std::fabs(p[i]), std::fabs(p1[i]));
      ASSERT_LE(std::fabs(p2[i] - p[i]), 4 * ulp * pScale) << i;
      ASSERT_LE(std::fabs(m2[i] - m[i]), 4 * ulp * mScale / h.beta1) << i;
      ASSERT_LE(std::fabs(v2[i] - v[i]), 4 * ulp * vScale / h.beta2) << i;
      if (h.step == 1) { // m' and v' were exactly (1-b) g and (1-b) g^2
        ASSERT_EQ(m2[i], 0.0f);
        ASSERT_EQ(v2[i], 0.0f);
      }
    }
  }
}

TEST(Optimizer, SgdRollbackRestoresParams) {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> p(1000), g(1000);
  for (int i = 0; i < 1000; ++i) {
    p[i] = normal(rng);
    g[i] = normal(rng);
  }
  std::vector<float> q = p;
  zbrt_sgd_step(q.data(), g.data(), 1000, 0.05f, 0.25f);
  zbrt_sgd_rollback(q.data(), g.data(), 1000, 0.05f, 0.25f);
  for (int i = 0; i < 1000; ++i)
    ASSERT_LE(std::fabs(q[i] - p[i]), 2 * FLT_EPSILON * std::fabs(p[i]) +
                                          FLT_EPSILON * 0.05f * 0.25f *
                                              std::fabs(g[i]))
        << i;
}

TEST(Optimizer, SumSquaresAndNonFinite) {
  std::vector<float> x = {3.0f, 4.0f, -12.0f};
  int32_t bad = -1;
  EXPECT_EQ(zbrt_sum_squares(x.data(), 3, &bad), 169.0);
  EXPECT_EQ(bad, 0);
  x[1] = NAN;
  zbrt_sum_squares(x.data(), 3, &bad);
  EXPECT_EQ(bad, 1);
  x[1] = INFINITY;
  bad = 0;
  zbrt_sum_squares(x.data(), 3, &bad);
  EXPECT_EQ(bad, 1);
}

/// zbrt_sum_squares_many gives each buffer exactly zbrt_sum_squares's sum
/// and flag (empty buffers and a non-finite one among them).
TEST(Optimizer, SumSquaresManyMatchesTheSingleVersion) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<std::vector<float>> buffers;
  for (int64_t n : {1000, 1, 0, 4097, 77, 0, 250000}) {
    buffers.emplace_back(n);
    for (float &x : buffers.back())
      x = normal(rng);
  }
  buffers[4][10] = NAN;
  std::vector<const float *> xs;
  std::vector<int64_t> ns;
  for (auto &b : buffers) {
    xs.push_back(b.data());
    ns.push_back((int64_t)b.size());
  }
  std::vector<double> sums(xs.size(), -1);
  std::vector<int32_t> bad(xs.size(), -1);
  zbrt_sum_squares_many(xs.data(), ns.data(), (int64_t)xs.size(), sums.data(),
                        bad.data());
  for (size_t k = 0; k < xs.size(); ++k) {
    int32_t want = -1;
    double sum = zbrt_sum_squares(xs[k], ns[k], &want);
    if (k != 4) { // bit-identical (buffer 4's sum is NaN)
      EXPECT_EQ(sums[k], sum) << k;
    }
    EXPECT_EQ(bad[k], want) << k;
  }
  EXPECT_EQ(bad[4], 1);
  // Without flags, and with no buffers.
  std::vector<double> again(xs.size());
  zbrt_sum_squares_many(xs.data(), ns.data(), (int64_t)xs.size(), again.data(),
                        nullptr);
  EXPECT_EQ(again[6], sums[6]);
  zbrt_sum_squares_many(nullptr, nullptr, 0, nullptr, nullptr);
}

/// Tensors of several sizes (not multiples of 256, 1, 0) with random
/// parameters, gradients and moments (v >= 0), as independent copies.
struct TensorSet {
  std::vector<std::vector<float>> p, g, m, v;
  explicit TensorSet(std::mt19937 &rng) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int64_t n : {1000, 1, 0, 4097, 255, 70000}) {
      for (auto *x : {&p, &g, &m, &v}) {
        x->emplace_back(n);
        for (float &e : x->back())
          e = normal(rng);
      }
      for (float &e : v.back())
        e = std::fabs(e) * 0.01f;
    }
  }
  std::vector<ZbrtOptimizerTensor> tensors() {
    std::vector<ZbrtOptimizerTensor> t;
    for (size_t k = 0; k < p.size(); ++k)
      t.push_back({p[k].data(), g[k].data(), m[k].data(), v[k].data(),
                   (int64_t)p[k].size()});
    return t;
  }
  /// Every parameter and moment bit for bit.
  bool operator==(const TensorSet &o) const {
    auto same = [](const std::vector<std::vector<float>> &a,
                   const std::vector<std::vector<float>> &b) {
      for (size_t k = 0; k < a.size(); ++k)
        if (a[k].size() != b[k].size() ||
            (!a[k].empty() &&
             std::memcmp(a[k].data(), b[k].data(), a[k].size() * 4) != 0))
          return false;
      return a.size() == b.size();
    };
    return same(p, o.p) && same(m, o.m) && same(v, o.v);
  }
};

/// The _many entry points equal the single-tensor ones on each tensor, bit
/// for bit: AdamW over steps 1 and 2 and the rollback of step 2, then SGD
/// and its rollback.
TEST(Optimizer, ManyTensorsMatchTheSingleTensorEntryPoints) {
  std::mt19937 rng(23);
  TensorSet many(rng);
  TensorSet single = many;
  const float lr = 0.01f, b1 = 0.9f, b2 = 0.99f, eps = 1e-8f, wd = 0.1f,
              scale = 0.125f;
  auto each = [&](auto fn) {
    for (ZbrtOptimizerTensor &x : single.tensors())
      fn(x);
  };
  for (int64_t step : {1, 2}) {
    auto t = many.tensors();
    zbrt_adamw_step_many(t.data(), (int64_t)t.size(), step, lr, b1, b2, eps, wd,
                         scale);
    each([&](ZbrtOptimizerTensor &x) {
      zbrt_adamw_step(x.param, x.grad, x.m, x.v, x.n, step, lr, b1, b2, eps, wd,
                      scale);
    });
    ASSERT_TRUE(many == single) << "AdamW step " << step;
  }
  auto t = many.tensors();
  zbrt_adamw_rollback_many(t.data(), (int64_t)t.size(), 2, lr, b1, b2, eps, wd,
                           scale);
  each([&](ZbrtOptimizerTensor &x) {
    zbrt_adamw_rollback(x.param, x.grad, x.m, x.v, x.n, 2, lr, b1, b2, eps, wd,
                        scale);
  });
  ASSERT_TRUE(many == single) << "AdamW rollback";
  TensorSet before = many;
  zbrt_sgd_step_many(t.data(), (int64_t)t.size(), lr, scale);
  each([&](ZbrtOptimizerTensor &x) {
    zbrt_sgd_step(x.param, x.grad, x.n, lr, scale);
  });
  ASSERT_TRUE(many == single) << "SGD step";
  ASSERT_FALSE(many == before); // the step changed something
  zbrt_sgd_rollback_many(t.data(), (int64_t)t.size(), lr, scale);
  each([&](ZbrtOptimizerTensor &x) {
    zbrt_sgd_rollback(x.param, x.grad, x.n, lr, scale);
  });
  ASSERT_TRUE(many == single) << "SGD rollback";
  // No tensors: nothing to do.
  zbrt_adamw_step_many(nullptr, 0, 1, lr, b1, b2, eps, wd, scale);
  zbrt_sgd_step_many(nullptr, 0, lr, scale);
}

TEST(OptimizerDeathTest, ManyTensorsRejectBadArguments) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  float x = 1.0f;
  ZbrtOptimizerTensor sgdOnly{&x, &x, nullptr, nullptr, 1};
  EXPECT_DEATH(zbrt_sgd_step_many(&sgdOnly, -1, 0.1f, 1.0f),
               "zbrt_sgd_step_many: count must be >= 0, got -1");
  EXPECT_DEATH(zbrt_sgd_rollback_many(nullptr, 2, 0.1f, 1.0f),
               "zbrt_sgd_rollback_many: tensors is null with count 2");
  EXPECT_DEATH(zbrt_adamw_step_many(&sgdOnly, 1, 1, 0.1f, 0.9f, 0.99f, 1e-8f,
                                    0.0f, 1.0f),
               "zbrt_adamw_step_many: tensor 0 \\(1 elements\\) has a null m");
  ZbrtOptimizerTensor negative{&x, &x, &x, &x, -3};
  EXPECT_DEATH(zbrt_sgd_step_many(&negative, 1, 0.1f, 1.0f),
               "zbrt_sgd_step_many: tensor 0 has -3 elements");
  ZbrtOptimizerTensor adamw{&x, &x, &x, &x, 1};
  EXPECT_DEATH(
      zbrt_adamw_step_many(&adamw, 1, 0, 0.1f, 0.9f, 0.99f, 1e-8f, 0.0f, 1.0f),
      "zbrt_adamw_step_many: step must be >= 1");
  EXPECT_DEATH(zbrt_adamw_rollback_many(&adamw, 1, 1, 0.1f, 0.0f, 0.99f, 1e-8f,
                                        0.0f, 1.0f),
               "zbrt_adamw_rollback_many: not invertible");
}

} // namespace
