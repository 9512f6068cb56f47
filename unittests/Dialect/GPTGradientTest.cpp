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

#include "zb/Pipelines/Pipelines.h"

#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace zb::test;

namespace {

/// test/Dialect/ZB/Inputs/gpt2.mlir; "" when it cannot be read.
std::string readGPT2() {
  auto buffer = llvm::MemoryBuffer::getFile(std::string(ZB_TEST_INPUTS_DIR) +
                                            "/gpt2.mlir");
  return buffer ? (*buffer)->getBuffer().str() : std::string();
}

TEST(GPTGradientTest, TwoLayerGPTMatchesFiniteDifferences) {
  std::string source = readGPT2();
  ASSERT_FALSE(source.empty()) << "cannot read gpt2.mlir";
  CompiledLoss loss(source);
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

/// A whole GPT step (loss and every parameter gradient, float64) with the
/// CUDA target's kernels emulated on the CPU (zb-gpu-emulate) against the
/// CPU backend: bit-identical with serial reductions; with block reductions
/// (gpu.all_reduce, the GPU's summation order) within 1e-12 of each
/// gradient's largest element.
TEST(GPTGradientTest, EmulatedGpuKernelsEqualCpuBackend) {
  std::string source = readGPT2();
  ASSERT_FALSE(source.empty()) << "cannot read gpt2.mlir";
  CompiledLoss cpu(source);
  ASSERT_TRUE(cpu.ok()) << cpu.error();
  zb::GpuCodegenOptions serial, block;
  serial.emulate = block.emulate = true;
  serial.reductionThreads = 0;
  CompiledLoss gpuSerial(source, nullptr, false, &serial);
  ASSERT_TRUE(gpuSerial.ok()) << gpuSerial.error();
  CompiledLoss gpuBlock(source, nullptr, false, &block);
  ASSERT_TRUE(gpuBlock.ok()) << gpuBlock.error();
  const int64_t vocab = cpu.argTemplates()[2].shape[0];
  std::vector<ArgInit> inits(cpu.argTemplates().size(), ArgInit{-0.5, 0.5});
  inits[0].maxIndex = vocab;
  inits[1].maxIndex = vocab;
  std::mt19937_64 rng(2025);
  std::vector<HostTensor> args = randomArgs(cpu, inits, rng);
  std::vector<HostTensor> gc, gs, gb;
  double lc = cpu.run(args, &gc), ls = gpuSerial.run(args, &gs),
         lb = gpuBlock.run(args, &gb);
  ASSERT_TRUE(std::isfinite(lc));
  EXPECT_EQ(lc, ls);
  EXPECT_NEAR(lb, lc, 1e-12 * std::abs(lc));
  ASSERT_EQ(gc.size(), cpu.paramIndices().size());
  double worst = 0;
  size_t differing = 0;
  for (size_t k = 0; k < gc.size(); ++k) {
    EXPECT_EQ(gc[k].f64, gs[k].f64) << "gradient #" << k;
    double scale = 1e-300;
    for (double v : gc[k].f64)
      scale = std::max(scale, std::abs(v));
    for (size_t j = 0; j < gc[k].f64.size(); ++j) {
      worst = std::max(worst, std::abs(gb[k].f64[j] - gc[k].f64[j]) / scale);
      differing += gb[k].f64[j] != gc[k].f64[j];
    }
  }
  std::printf("[ gpu-emu  ] gpt2 loss %.12f: serial reductions bit-identical, "
              "block reductions max rel difference %.2e (%zu elements "
              "differ)\n",
              lc, worst, differing);
  EXPECT_LE(worst, 1e-12);
  EXPECT_GT(differing, 0u) << "no block reduction ran";
}

} // namespace
