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

#include "zb/Dialect/ZB/IR/ZBOps.h"
#include "zb/Pipelines/Pipelines.h"
#include "zb/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"

#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace zb::test;

namespace {

/// test/Dialect/ZB/Inputs/gpt2.mlir; "" when it cannot be read.
std::string readGPT2() {
  auto buffer = llvm::MemoryBuffer::getFile(std::string(ZB_TEST_INPUTS_DIR) +
                                            "/gpt2.mlir");
  return buffer ? (*buffer)->getBuffer().str() : std::string();
}

/// Random arguments of gpt2.mlir's @main: tokens and targets below the
/// vocabulary (the first parameter's rows), floats in [-0.5, 0.5].
std::vector<HostTensor> gptArgs(const CompiledLoss &loss, uint64_t seed) {
  const int64_t vocab = loss.argTemplates()[2].shape[0];
  std::vector<ArgInit> inits(loss.argTemplates().size(), ArgInit{-0.5, 0.5});
  inits[0].maxIndex = vocab;
  inits[1].maxIndex = vocab;
  std::mt19937_64 rng(seed);
  return randomArgs(loss, inits, rng);
}

TEST(GPTGradientTest, TwoLayerGPTMatchesFiniteDifferences) {
  std::string source = readGPT2();
  ASSERT_FALSE(source.empty()) << "cannot read gpt2.mlir";
  CompiledLoss loss(source);
  ASSERT_TRUE(loss.ok()) << loss.error();
  // Arguments: tokens, targets (vocabulary 11), then the parameters.
  std::vector<HostTensor> args = gptArgs(loss, 2024);
  GradientCheckResult r = checkGradients(loss, args);
  ASSERT_TRUE(std::isfinite(r.loss));
  // A random model predicts roughly uniformly: loss near log(vocab).
  const int64_t vocab = loss.argTemplates()[2].shape[0];
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
  std::vector<HostTensor> args = gptArgs(cpu, 2025);
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

/// zb-fuse-attention (or zb-fuse-cross-entropy with `crossEntropy`) then
/// zb-autodiff (CompiledLoss's hook in place of zb-autodiff alone);
/// `fused` counts the zb.attention ops formed (the zb.cross_entropy ops
/// with an lse).
ManualBackward fuseThenDifferentiate(int *fused, bool crossEntropy = false) {
  return [fused, crossEntropy](mlir::ModuleOp module) -> mlir::LogicalResult {
    mlir::PassManager fuse(module.getContext());
    if (crossEntropy)
      fuse.addPass(zb::createZBFuseCrossEntropy());
    else
      fuse.addPass(zb::createZBFuseAttention());
    if (mlir::failed(fuse.run(module)))
      return mlir::failure();
    *fused = 0;
    module.walk([&](zb::AttentionOp) { ++*fused; });
    module.walk([&](zb::CrossEntropyOp op) { *fused += op.getLse() ? 1 : 0; });
    mlir::PassManager diff(module.getContext());
    diff.addPass(zb::createZBAutodiff());
    return diff.run(module);
  };
}

/// max |a - b| / max |b| over one tensor.
double relativeDifference(const HostTensor &a, const HostTensor &b) {
  double worst = 0, scale = 1e-300;
  for (size_t j = 0; j < b.f64.size(); ++j) {
    worst = std::max(worst, std::abs(a.f64[j] - b.f64[j]));
    scale = std::max(scale, std::abs(b.f64[j]));
  }
  return worst / scale;
}

/// gpt2.mlir through `fuse` then zb-autodiff, with `expectedFused` ops
/// formed: every gradient against central finite differences (bound 1e-6),
/// and loss and gradients against the unfused module (a second code path;
/// loss within 1e-13, gradients within 1e-12 relative). `what` names the
/// fusion in the printed numbers.
void checkFusedGPT(bool crossEntropy, int expectedFused, uint64_t seed,
                   const char *what) {
  std::string source = readGPT2();
  ASSERT_FALSE(source.empty()) << "cannot read gpt2.mlir";
  int fusedCount = -1;
  CompiledLoss fused(source, fuseThenDifferentiate(&fusedCount, crossEntropy));
  ASSERT_TRUE(fused.ok()) << fused.error();
  EXPECT_EQ(fusedCount, expectedFused);
  CompiledLoss unfused(source);
  ASSERT_TRUE(unfused.ok()) << unfused.error();
  std::vector<HostTensor> args = gptArgs(fused, seed);
  GradientCheckResult r = checkGradients(fused, args);
  ASSERT_TRUE(std::isfinite(r.loss));
  std::printf("[ fd-check ] gpt2 %s (%zu parameter tensors) loss %.6f, max "
              "rel error %.3e\n",
              what, r.relErrors.size(), r.loss, r.maxRelError);
  for (auto [k, e] : llvm::enumerate(r.relErrors))
    EXPECT_LT(e, 1e-6) << "parameter argument #" << fused.paramIndices()[k];
  std::vector<HostTensor> gf, gu;
  double lf = fused.run(args, &gf), lu = unfused.run(args, &gu);
  EXPECT_NEAR(lf, lu, 1e-13 * std::abs(lu));
  ASSERT_EQ(gf.size(), gu.size());
  double worst = 0;
  for (size_t k = 0; k < gf.size(); ++k)
    worst = std::max(worst, relativeDifference(gf[k], gu[k]));
  std::printf("[ fused    ] loss %.15f vs unfused %.15f, gradients max rel "
              "difference %.2e\n",
              lf, lu, worst);
  EXPECT_LT(worst, 1e-12);
}

/// The GPT with each attention fused (zb.attention; zb.attention_grad
/// recomputing the probabilities from the log-sum-exp, lowered by
/// zb-decompose-attention): gradients against central finite differences,
/// and loss and gradients against the unfused ops (a second code path).
TEST(GPTGradientTest, FusedAttentionMatchesFiniteDifferencesAndUnfused) {
  checkFusedGPT(/*crossEntropy=*/false, /*expectedFused=*/2, 2026,
                "fused attention"); // one attention per layer
}

/// One attention with an additive float mask that hides every key of
/// some query rows (torch's sdpa guard, where(isnan(P), 0, P), in the
/// graph): fused, those rows give 0 and their gradients 0, and every
/// gradient matches finite differences; unfused, the guard hides the NaN
/// in the forward pass only.
TEST(GPTGradientTest, FusedAttentionWithHiddenRows) {
  const char *source = R"mlir(
func.func @main(%x: tensor<2x6x4xf64>, %mask: tensor<2x6x6xf64>,
                %wq: tensor<4x4xf64> {zb.param}, %wk: tensor<4x4xf64> {zb.param},
                %wv: tensor<4x4xf64> {zb.param}) -> tensor<f64> {
  %q = zb.batch_matmul %x, %wq2 : (tensor<2x6x4xf64>, tensor<2x4x4xf64>) -> tensor<2x6x4xf64>
  %k = zb.batch_matmul %x, %wk2 : (tensor<2x6x4xf64>, tensor<2x4x4xf64>) -> tensor<2x6x4xf64>
  %v = zb.batch_matmul %x, %wv2 : (tensor<2x6x4xf64>, tensor<2x4x4xf64>) -> tensor<2x6x4xf64>
  %s = zb.batch_matmul %q, %k {transpose_rhs} : (tensor<2x6x4xf64>, tensor<2x6x4xf64>) -> tensor<2x6x6xf64>
  %c = zb.constant dense<0.5> : tensor<2x6x6xf64>
  %ss = zb.mul %s, %c : tensor<2x6x6xf64>
  %sm = zb.add %ss, %mask : tensor<2x6x6xf64>
  %p = zb.softmax %sm axis 2 : tensor<2x6x6xf64>
  %nan = zb.compare "ne", %p, %p : tensor<2x6x6xf64> -> tensor<2x6x6xi1>
  %zero = zb.constant dense<0.0> : tensor<2x6x6xf64>
  %pg = zb.select %nan, %zero, %p : tensor<2x6x6xi1>, tensor<2x6x6xf64>
  %o = zb.batch_matmul %pg, %v : (tensor<2x6x6xf64>, tensor<2x6x4xf64>) -> tensor<2x6x4xf64>
  %o2 = zb.mul %o, %o : tensor<2x6x4xf64>
  %l = zb.reduce_sum %o2 axes [0, 1, 2] : tensor<2x6x4xf64> -> tensor<f64>
  return %l : tensor<f64>
}
)mlir";
  // The projections take one weight for both batch entries.
  std::string text(source);
  for (const char *w : {"wq", "wk", "wv"}) {
    std::string from = std::string("%") + w + "2 :";
    std::string def = std::string("  %") + w + "2 = zb.broadcast_in_dim %" +
                      w + " dims [1, 2] : tensor<4x4xf64> -> tensor<2x4x4xf64>\n";
    size_t use = text.find(from);
    size_t line = text.rfind('\n', use) + 1;
    text.insert(line, def);
  }
  int fusedCount = -1;
  CompiledLoss fused(text, fuseThenDifferentiate(&fusedCount));
  ASSERT_TRUE(fused.ok()) << fused.error();
  EXPECT_EQ(fusedCount, 1);
  std::mt19937_64 rng(7);
  std::vector<HostTensor> args =
      randomArgs(fused, std::vector<ArgInit>(5, ArgInit{-1.0, 1.0}), rng);
  // The mask: 0, -inf on some keys, every key of rows 1 (batch 0) and 4
  // (batch 1) hidden.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> &mask = args[1].f64;
  for (size_t i = 0; i < mask.size(); ++i) {
    size_t b = i / 36, row = (i / 6) % 6, key = i % 6;
    bool hiddenRow = (b == 0 && row == 1) || (b == 1 && row == 4);
    mask[i] = hiddenRow || (key + row) % 4 == 3 ? -inf : 0.0;
  }
  GradientCheckResult r = checkGradients(fused, args);
  ASSERT_TRUE(std::isfinite(r.loss));
  std::printf("[ fd-check ] attention with hidden rows: loss %.6f, max rel "
              "error %.3e\n",
              r.loss, r.maxRelError);
  for (auto [k, e] : llvm::enumerate(r.relErrors))
    EXPECT_LT(e, 1e-6) << "parameter argument #" << fused.paramIndices()[k];
  CompiledLoss unfused(text);
  ASSERT_TRUE(unfused.ok()) << unfused.error();
  EXPECT_NEAR(fused.run(args), unfused.run(args), 1e-12 * std::abs(r.loss));
}

/// The GPT with its cross-entropy given an lse (zb-fuse-cross-entropy:
/// the gradient exp(logits - lse) - one_hot instead of the recomputed
/// softmax): gradients against central finite differences, and loss and
/// gradients against the plain op (a second code path).
TEST(GPTGradientTest, FusedCrossEntropyMatchesFiniteDifferencesAndUnfused) {
  checkFusedGPT(/*crossEntropy=*/true, /*expectedFused=*/1, 2027,
                "cross-entropy with lse");
}

/// A cross-entropy with ignore_index whose lse also reaches the loss (a
/// z-loss term, 0.1 * sum(lse^2), as PaLM adds): the gradient through both
/// results, with some positions ignored, against finite differences.
TEST(GPTGradientTest, CrossEntropyLseGradientWithIgnoredPositions) {
  const char *source = R"mlir(
func.func @main(%x: tensor<6x4xf64>, %t: tensor<6xi64>,
                %w: tensor<5x4xf64> {zb.param}) -> tensor<f64> {
  %logits = zb.matmul %x, %w {transpose_rhs} : (tensor<6x4xf64>, tensor<5x4xf64>) -> tensor<6x5xf64>
  %l, %lse = zb.cross_entropy %logits, %t {ignore_index = -100 : i64} : (tensor<6x5xf64>, tensor<6xi64>) -> tensor<f64>, tensor<6xf64>
  %sq = zb.mul %lse, %lse : tensor<6xf64>
  %z = zb.reduce_sum %sq axes [0] : tensor<6xf64> -> tensor<f64>
  %c = zb.constant dense<0.1> : tensor<f64>
  %zc = zb.mul %z, %c : tensor<f64>
  %loss = zb.add %l, %zc : tensor<f64>
  return %loss : tensor<f64>
}
)mlir";
  CompiledLoss loss(source);
  ASSERT_TRUE(loss.ok()) << loss.error();
  std::vector<ArgInit> inits(3, ArgInit{-1.0, 1.0});
  inits[1].maxIndex = 5;
  std::mt19937_64 rng(11);
  std::vector<HostTensor> args = randomArgs(loss, inits, rng);
  ASSERT_EQ(args[1].kind, HostTensor::I64);
  args[1].i64[1] = -100;
  args[1].i64[4] = -100;
  GradientCheckResult r = checkGradients(loss, args);
  ASSERT_TRUE(std::isfinite(r.loss));
  std::printf("[ fd-check ] cross-entropy with z-loss on its lse, 2 of 6 "
              "positions ignored: loss %.6f, max rel error %.3e\n",
              r.loss, r.maxRelError);
  for (auto [k, e] : llvm::enumerate(r.relErrors))
    EXPECT_LT(e, 1e-6) << "parameter argument #" << loss.paramIndices()[k];
}

} // namespace
