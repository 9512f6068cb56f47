//===- GPTGradientTest.cpp - gradients of a 2-layer GPT in the zb dialect -===//
//
// test/Dialect/ZB/Inputs/gpt2.mlir (written by gen_gpt2.py: embedding
// gather, layer_norm, causal multi-head attention with softmax, MLP with
// gelu, residuals, tied LM head, cross_entropy) is differentiated by
// zb-autodiff, lowered and JIT-run in float64; every parameter gradient must
// match central finite differences of the compiled loss within 1e-6
// (max |g - fd| / max |fd| per parameter).
//
//===----------------------------------------------------------------------===//
#include "GradientCheck.h"

#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace zb::test;

namespace {

TEST(GPTGradientTest, TwoLayerGPTMatchesFiniteDifferences) {
  std::string path = std::string(ZB_TEST_INPUTS_DIR) + "/gpt2.mlir";
  auto buffer = llvm::MemoryBuffer::getFile(path);
  ASSERT_TRUE(bool(buffer)) << "cannot read " << path;
  CompiledLoss loss((*buffer)->getBuffer().str());
  ASSERT_TRUE(loss.ok()) << loss.error();
  // Arguments: tokens, targets (vocabulary 11), then the parameters.
  const int64_t vocab = loss.argTemplates()[2].shape[0];
  std::vector<ArgInit> inits(loss.argTemplates().size(), ArgInit{-0.5, 0.5});
  inits[0].maxIndex = vocab;
  inits[1].maxIndex = vocab;
  std::mt19937_64 rng(2024);
  std::vector<HostTensor> args = randomArgs(loss, inits, rng);
  GradientCheckResult r = checkGradients(loss, args);
  ASSERT_TRUE(std::isfinite(r.loss));
  // A random model predicts roughly uniformly: loss near log(vocab).
  EXPECT_NEAR(r.loss, std::log(static_cast<double>(vocab)), 1.0);
  ASSERT_EQ(r.relErrors.size(), loss.paramIndices().size());
  std::printf("[ fd-check ] gpt2 (%zu parameter tensors) loss %.6f, max rel "
              "error %.3e\n",
              r.relErrors.size(), r.loss, r.maxRelError);
  for (auto [k, e] : llvm::enumerate(r.relErrors))
    EXPECT_LT(e, 1e-6) << "parameter argument #" << loss.paramIndices()[k];
}

} // namespace
