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

#include <cmath>
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

} // namespace
