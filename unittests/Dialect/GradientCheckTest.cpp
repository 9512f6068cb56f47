//===- GradientCheckTest.cpp - finite-difference checks of every zb op ----===//
//
// For every differentiable op: loss = reduce_sum(op(inputs) * W) with fixed
// random weights W, in float64; the float inputs are marked zb.param,
// zb-autodiff builds the gradients, the function is lowered to LLVM and
// JIT-run, and every gradient is compared with central finite differences of
// the same compiled loss: max_j |g_j - fd_j| / max_j |fd_j| < 1e-6 for every
// parameter.
//
//===----------------------------------------------------------------------===//
#include "GradientCheck.h"

#include "zb/Dialect/ZB/IR/ZBOps.h"
#include "zb/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

using namespace mlir;
using namespace zb::test;

namespace {

/// One argument of an op case: its type, whether it is a zb.param (float
/// arguments are by default) and how it is initialized.
struct Arg {
  std::string type;
  ArgInit init = {};
  bool param = true;
};

struct OpCase {
  std::string name;
  std::vector<Arg> args;     // %a0, %a1, ...
  std::string body;          // uses %a<i>, defines %y
  std::string resultType;    // type of %y
  double h = 1e-5;           // finite-difference step
  /// Adjusts the random arguments (e.g. keeps values apart from ties).
  std::function<void(std::vector<HostTensor> &)> prepare = nullptr;
};

std::ostream &operator<<(std::ostream &os, const OpCase &c) {
  return os << c.name;
}

int64_t rankOf(const std::string &type) {
  // tensor<3x4xf64> -> 2, tensor<f64> -> 0
  return std::count(type.begin(), type.end(), 'x');
}

/// The function `@main(%a..., %w) -> reduce_sum(%y * %w)` of an op case.
std::string sourceOf(const OpCase &c) {
  std::string s = "func.func @main(";
  for (size_t i = 0; i < c.args.size(); ++i) {
    bool isFloat = c.args[i].type.find("xf64>") != std::string::npos ||
                   c.args[i].type == "tensor<f64>";
    s += "%a" + std::to_string(i) + ": " + c.args[i].type;
    if (isFloat && c.args[i].param)
      s += " {zb.param}";
    s += ", ";
  }
  s += "%w: " + c.resultType + ") -> tensor<f64> {\n" + c.body + "\n";
  s += "  %p = zb.mul %y, %w : " + c.resultType + "\n";
  int64_t r = rankOf(c.resultType);
  if (r == 0) {
    s += "  return %p : tensor<f64>\n}\n";
    return s;
  }
  std::string axes;
  for (int64_t i = 0; i < r; ++i)
    axes += (i ? ", " : "") + std::to_string(i);
  s += "  %l = zb.reduce_sum %p axes [" + axes + "] : " + c.resultType +
       " -> tensor<f64>\n  return %l : tensor<f64>\n}\n";
  return s;
}

/// Makes every element of argument `i` distinct and at least `gap` apart
/// (a shuffled ramp plus the random value scaled down), so that max and
/// reduce_max have no ties within a finite-difference step.
std::function<void(std::vector<HostTensor> &)> distinct(unsigned i,
                                                        double gap = 0.1) {
  return [=](std::vector<HostTensor> &args) {
    std::vector<double> &x = args[i].f64;
    std::vector<size_t> order(x.size());
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 rng(7);
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t j = 0; j < x.size(); ++j)
      x[order[j]] = gap * (static_cast<double>(j) -
                           static_cast<double>(x.size()) / 2) +
                    0.2 * gap * x[order[j]];
  };
}

/// Rounds argument `i` to multiples of 1/64 (exact in f32 with +-2^-10).
std::function<void(std::vector<HostTensor> &)> dyadic(unsigned i) {
  return [=](std::vector<HostTensor> &args) {
    for (double &v : args[i].f64)
      v = std::round(v * 64.0) / 64.0;
  };
}

const ArgInit kPositive{0.5, 2.0};
const ArgInit kAwayFromZero{-1.0, 1.0, 0.05};

std::vector<OpCase> opCases() {
  const std::string m34 = "tensor<3x4xf64>";
  std::vector<OpCase> cases;
  auto binary = [&](std::string name, std::string op, ArgInit lhs = {},
                    ArgInit rhs = {}) {
    cases.push_back({name,
                     {{m34, lhs}, {m34, rhs}},
                     "  %y = zb." + op + " %a0, %a1 : " + m34,
                     m34});
  };
  auto unary = [&](std::string name, std::string op, ArgInit x = {},
                   std::string attrs = "") {
    cases.push_back({name,
                     {{m34, x}},
                     "  %y = zb." + op + " %a0 " + attrs + " : " + m34,
                     m34});
  };
  // Existing ops.
  binary("add", "add");
  binary("sub", "sub");
  binary("mul", "mul");
  binary("div", "div", {}, kPositive);
  unary("neg", "neg");
  unary("relu", "relu", kAwayFromZero);
  unary("exp", "exp");
  unary("log", "log", kPositive);
  unary("tanh", "tanh");
  cases.push_back({"compare_select",
                   {{m34}, {m34}, {m34, {}, /*param=*/false}},
                   "  %z = zb.constant dense<0.0> : tensor<3x4xf64>\n"
                   "  %m = zb.compare \"gt\", %a2, %z : tensor<3x4xf64> -> "
                   "tensor<3x4xi1>\n"
                   "  %y = zb.select %m, %a0, %a1 : tensor<3x4xi1>, "
                   "tensor<3x4xf64>",
                   m34});
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      std::string attrs;
      if (ta || tb)
        attrs = std::string(" {") + (ta ? "transpose_lhs" : "") +
                (ta && tb ? ", " : "") + (tb ? "transpose_rhs" : "") + "}";
      std::string a = ta ? "tensor<4x3xf64>" : "tensor<3x4xf64>";
      std::string b = tb ? "tensor<5x4xf64>" : "tensor<4x5xf64>";
      cases.push_back({"matmul_t" + std::to_string(ta) + std::to_string(tb),
                       {{a}, {b}},
                       "  %y = zb.matmul %a0, %a1" + attrs + " : (" + a +
                           ", " + b + ") -> tensor<3x5xf64>",
                       "tensor<3x5xf64>"});
      std::string ba = ta ? "tensor<2x4x3xf64>" : "tensor<2x3x4xf64>";
      std::string bb = tb ? "tensor<2x5x4xf64>" : "tensor<2x4x5xf64>";
      cases.push_back(
          {"batch_matmul_t" + std::to_string(ta) + std::to_string(tb),
           {{ba}, {bb}},
           "  %y = zb.batch_matmul %a0, %a1" + attrs + " : (" + ba + ", " +
               bb + ") -> tensor<2x3x5xf64>",
           "tensor<2x3x5xf64>"});
    }
  cases.push_back({"batch_matmul_rank4",
                   {{"tensor<2x2x3x4xf64>"}, {"tensor<2x2x5x4xf64>"}},
                   "  %y = zb.batch_matmul %a0, %a1 {transpose_rhs} : "
                   "(tensor<2x2x3x4xf64>, tensor<2x2x5x4xf64>) -> "
                   "tensor<2x2x3x5xf64>",
                   "tensor<2x2x3x5xf64>"});
  cases.push_back({"broadcast_new_dim",
                   {{"tensor<4xf64>"}},
                   "  %y = zb.broadcast_in_dim %a0 dims [1] : tensor<4xf64> "
                   "-> tensor<3x4xf64>",
                   m34});
  // A bias's gradient: a column sum of 37 rows (zb-gpu-map-reductions'
  // column kernel: 16 columns x 32 threads over the rows).
  cases.push_back({"bias_column_sum",
                   {{"tensor<16xf64>"}},
                   "  %y = zb.broadcast_in_dim %a0 dims [1] : tensor<16xf64> "
                   "-> tensor<37x16xf64>",
                   "tensor<37x16xf64>"});
  cases.push_back({"broadcast_size1",
                   {{"tensor<3x1xf64>"}},
                   "  %y = zb.broadcast_in_dim %a0 dims [0, 1] : "
                   "tensor<3x1xf64> -> tensor<3x4xf64>",
                   m34});
  cases.push_back({"broadcast_size1_new_dim",
                   {{"tensor<1x4xf64>"}},
                   "  %y = zb.broadcast_in_dim %a0 dims [1, 2] : "
                   "tensor<1x4xf64> -> tensor<2x3x4xf64>",
                   "tensor<2x3x4xf64>"});
  cases.push_back({"reshape",
                   {{m34}},
                   "  %y = zb.reshape %a0 : tensor<3x4xf64> -> tensor<2x6xf64>",
                   "tensor<2x6xf64>"});
  cases.push_back({"reduce_sum",
                   {{"tensor<2x3x4xf64>"}},
                   "  %y = zb.reduce_sum %a0 axes [0, 2] : tensor<2x3x4xf64> "
                   "-> tensor<3xf64>",
                   "tensor<3xf64>"});
  cases.push_back({"reduce_mean",
                   {{"tensor<2x3x4xf64>"}},
                   "  %y = zb.reduce_mean %a0 axes [1] : tensor<2x3x4xf64> "
                   "-> tensor<2x4xf64>",
                   "tensor<2x4xf64>"});

  // New elementwise ops.
  unary("sqrt", "sqrt", kPositive);
  unary("rsqrt", "rsqrt", kPositive);
  unary("erf", "erf");
  unary("sigmoid", "sigmoid", {-3.0, 3.0});
  unary("silu", "silu", {-3.0, 3.0});
  unary("gelu", "gelu", {-3.0, 3.0});
  unary("gelu_tanh", "gelu", {-3.0, 3.0}, "{approximate = \"tanh\"}");
  binary("pow", "pow", kPositive, {-1.5, 1.5});
  {
    OpCase c{"max", {{m34}, {m34}}, "  %y = zb.max %a0, %a1 : " + m34, m34};
    c.prepare = [](std::vector<HostTensor> &args) {
      // keep |a0 - a1| >= 0.05
      for (size_t j = 0; j < args[0].f64.size(); ++j) {
        double d = args[0].f64[j] - args[1].f64[j];
        if (std::abs(d) < 0.05)
          args[1].f64[j] += d >= 0 ? -0.1 : 0.1;
      }
    };
    cases.push_back(c);
  }
  {
    OpCase c{"cast_f32_roundtrip",
             {{m34}},
             "  %c = zb.cast %a0 : tensor<3x4xf64> -> tensor<3x4xf32>\n"
             "  %y = zb.cast %c : tensor<3x4xf32> -> tensor<3x4xf64>",
             m34};
    c.h = 1.0 / 1024; // exact in f32 for inputs on a 1/64 grid
    c.prepare = dyadic(0);
    cases.push_back(c);
  }
  cases.push_back({"cast_int",
                   {{m34}, {"tensor<3x4xi64>", {0, 0, 0, 5}}},
                   "  %c = zb.cast %a1 : tensor<3x4xi64> -> tensor<3x4xf64>\n"
                   "  %y = zb.mul %a0, %c : tensor<3x4xf64>",
                   m34});

  // Reductions and shape ops.
  {
    OpCase c{"reduce_max",
             {{"tensor<3x5xf64>"}},
             "  %y = zb.reduce_max %a0 axes [1] : tensor<3x5xf64> -> "
             "tensor<3xf64>",
             "tensor<3xf64>"};
    c.prepare = distinct(0);
    cases.push_back(c);
    OpCase c2{"reduce_max_2axes",
              {{"tensor<2x3x4xf64>"}},
              "  %y = zb.reduce_max %a0 axes [0, 2] : tensor<2x3x4xf64> -> "
              "tensor<3xf64>",
              "tensor<3xf64>"};
    c2.prepare = distinct(0);
    cases.push_back(c2);
  }
  cases.push_back({"transpose",
                   {{"tensor<2x3x4xf64>"}},
                   "  %y = zb.transpose %a0 permutation [2, 0, 1] : "
                   "tensor<2x3x4xf64> -> tensor<4x2x3xf64>",
                   "tensor<4x2x3xf64>"});
  cases.push_back({"slice",
                   {{"tensor<5x6xf64>"}},
                   "  %y = zb.slice %a0 [1, 0] to [5, 6] strides [2, 3] : "
                   "tensor<5x6xf64> -> tensor<2x2xf64>",
                   "tensor<2x2xf64>"});
  cases.push_back({"pad",
                   {{m34}},
                   "  %y = zb.pad %a0 low [1, 0] high [0, 2] interior [1, 1] "
                   ": tensor<3x4xf64> -> tensor<6x9xf64>",
                   "tensor<6x9xf64>"});
  cases.push_back({"concat",
                   {{"tensor<3x2xf64>"}, {m34}, {"tensor<3x1xf64>"}},
                   "  %y = zb.concat %a0, %a1, %a2 axis 1 : (tensor<3x2xf64>, "
                   "tensor<3x4xf64>, tensor<3x1xf64>) -> tensor<3x7xf64>",
                   "tensor<3x7xf64>"});

  // Embedding lookup (indices repeat: the scatter must accumulate).
  cases.push_back({"gather",
                   {{"tensor<6x3xf64>"}, {"tensor<2x4xi64>", {0, 0, 0, 6}}},
                   "  %y = zb.gather %a0, %a1 : (tensor<6x3xf64>, "
                   "tensor<2x4xi64>) -> tensor<2x4x3xf64>",
                   "tensor<2x4x3xf64>"});
  cases.push_back({"gather_i32_1d_table",
                   {{"tensor<6xf64>"}, {"tensor<9xi32>", {0, 0, 0, 6}}},
                   "  %y = zb.gather %a0, %a1 : (tensor<6xf64>, "
                   "tensor<9xi32>) -> tensor<9xf64>",
                   "tensor<9xf64>"});
  cases.push_back({"scatter_add",
                   {{"tensor<2x4x3xf64>"}, {"tensor<2x4xi64>", {0, 0, 0, 5}}},
                   "  %y = zb.scatter_add %a0, %a1 : (tensor<2x4x3xf64>, "
                   "tensor<2x4xi64>) -> tensor<5x3xf64>",
                   "tensor<5x3xf64>"});
  cases.push_back({"one_hot",
                   {{"tensor<4x6xf64>"}, {"tensor<4xi32>", {0, 0, 0, 6}}},
                   "  %o = zb.one_hot %a1 : tensor<4xi32> -> tensor<4x6xf64>\n"
                   "  %y = zb.mul %a0, %o : tensor<4x6xf64>",
                   "tensor<4x6xf64>"});

  // Composite ops.
  cases.push_back({"softmax",
                   {{"tensor<3x5xf64>", {-2.0, 2.0}}},
                   "  %y = zb.softmax %a0 axis 1 : tensor<3x5xf64>",
                   "tensor<3x5xf64>"});
  cases.push_back({"softmax_axis0",
                   {{"tensor<3x4x2xf64>", {-2.0, 2.0}}},
                   "  %y = zb.softmax %a0 axis 0 : tensor<3x4x2xf64>",
                   "tensor<3x4x2xf64>"});
  cases.push_back({"layer_norm",
                   {{"tensor<2x3x5xf64>", {-2.0, 2.0}},
                    {"tensor<5xf64>", {0.5, 1.5}},
                    {"tensor<5xf64>"}},
                   "  %y = zb.layer_norm %a0, %a1, %a2 : (tensor<2x3x5xf64>, "
                   "tensor<5xf64>, tensor<5xf64>) -> tensor<2x3x5xf64>",
                   "tensor<2x3x5xf64>"});
  cases.push_back({"layer_norm_1d_eps",
                   {{"tensor<6xf64>", {-2.0, 2.0}},
                    {"tensor<6xf64>", {0.5, 1.5}},
                    {"tensor<6xf64>"}},
                   "  %y = zb.layer_norm %a0, %a1, %a2 {epsilon = 0.1 : f64} "
                   ": (tensor<6xf64>, tensor<6xf64>, tensor<6xf64>) -> "
                   "tensor<6xf64>",
                   "tensor<6xf64>"});
  cases.push_back({"rms_norm",
                   {{"tensor<2x3x5xf64>", {-2.0, 2.0}},
                    {"tensor<5xf64>", {0.5, 1.5}}},
                   "  %y = zb.rms_norm %a0, %a1 : (tensor<2x3x5xf64>, "
                   "tensor<5xf64>) -> tensor<2x3x5xf64>",
                   "tensor<2x3x5xf64>"});
  cases.push_back({"cross_entropy",
                   {{"tensor<4x6xf64>", {-2.0, 2.0}},
                    {"tensor<4xi64>", {0, 0, 0, 6}}},
                   "  %y = zb.cross_entropy %a0, %a1 : (tensor<4x6xf64>, "
                   "tensor<4xi64>) -> tensor<f64>",
                   "tensor<f64>"});
  cases.push_back({"cross_entropy_rank3_i32",
                   {{"tensor<2x3x5xf64>", {-2.0, 2.0}},
                    {"tensor<2x3xi32>", {0, 0, 0, 5}}},
                   "  %y = zb.cross_entropy %a0, %a1 : (tensor<2x3x5xf64>, "
                   "tensor<2x3xi32>) -> tensor<f64>",
                   "tensor<f64>"});
  {
    // ignore_index: positions 0 and 3 are ignored (-100, torch's), 5 is a
    // valid class that is ignored when ignore_index names it.
    OpCase c{"cross_entropy_ignore_index",
             {{"tensor<6x5xf64>", {-2.0, 2.0}},
              {"tensor<6xi64>", {0, 0, 0, 5}}},
             "  %y = zb.cross_entropy %a0, %a1 {ignore_index = -100 : i64} : "
             "(tensor<6x5xf64>, tensor<6xi64>) -> tensor<f64>",
             "tensor<f64>"};
    c.prepare = [](std::vector<HostTensor> &args) {
      args[1].i64[0] = -100;
      args[1].i64[3] = -100;
    };
    cases.push_back(c);
    OpCase v = c;
    v.name = "cross_entropy_ignore_valid_class";
    v.body = "  %y = zb.cross_entropy %a0, %a1 {ignore_index = 2 : i64} : "
             "(tensor<6x5xf64>, tensor<6xi64>) -> tensor<f64>";
    v.prepare = [](std::vector<HostTensor> &args) {
      args[1].i64[1] = 2;
      args[1].i64[4] = 2;
    };
    cases.push_back(v);
    // With its lse (zb-fuse-cross-entropy): the gradient exp(x - lse) -
    // one_hot from the kept lse; and the lse itself as the output (its own
    // gradient, softmax(x) * g).
    OpCase l = c;
    l.name = "cross_entropy_lse";
    l.body = "  %y, %lse = zb.cross_entropy %a0, %a1 {ignore_index = -100 : "
             "i64} : (tensor<6x5xf64>, tensor<6xi64>) -> tensor<f64>, "
             "tensor<6xf64>";
    cases.push_back(l);
    OpCase o = c;
    o.name = "cross_entropy_lse_output";
    o.body = "  %loss, %y = zb.cross_entropy %a0, %a1 {ignore_index = -100 : "
             "i64} : (tensor<6x5xf64>, tensor<6xi64>) -> tensor<f64>, "
             "tensor<6xf64>";
    o.resultType = "tensor<6xf64>";
    cases.push_back(o);
  }
  cases.push_back({"causal_mask",
                   {{"tensor<2x4x4xf64>"}},
                   "  %y = zb.causal_mask %a0 {fill = -3.0 : f64} : "
                   "tensor<2x4x4xf64>",
                   "tensor<2x4x4xf64>"});
  cases.push_back({"causal_softmax",
                   {{"tensor<2x3x4xf64>", {-2.0, 2.0}}},
                   "  %m = zb.causal_mask %a0 : tensor<2x3x4xf64>\n"
                   "  %y = zb.softmax %m axis 2 : tensor<2x3x4xf64>",
                   "tensor<2x3x4xf64>"});
  return cases;
}

class OpGradientTest : public ::testing::TestWithParam<OpCase> {};

TEST_P(OpGradientTest, MatchesFiniteDifferences) {
  const OpCase &c = GetParam();
  std::string source = sourceOf(c);
  CompiledLoss loss(source);
  ASSERT_TRUE(loss.ok()) << loss.error() << "\n" << source;
  std::vector<ArgInit> inits;
  for (const Arg &a : c.args)
    inits.push_back(a.init);
  std::mt19937_64 rng(std::hash<std::string>()(c.name));
  std::vector<HostTensor> args = randomArgs(loss, inits, rng);
  if (c.prepare)
    c.prepare(args);
  GradientCheckResult r = checkGradients(loss, args, c.h);
  ASSERT_FALSE(loss.paramIndices().empty());
  ASSERT_TRUE(std::isfinite(r.loss)) << source;
  std::printf("[ fd-check ] %-26s max rel error %.3e\n", c.name.c_str(),
              r.maxRelError);
  for (auto [k, e] : llvm::enumerate(r.relErrors))
    EXPECT_LT(e, 1e-6) << "parameter #" << k << " of\n" << source;
}

INSTANTIATE_TEST_SUITE_P(
    Ops, OpGradientTest, ::testing::ValuesIn(opCases()),
    [](const ::testing::TestParamInfo<OpCase> &info) {
      return info.param.name;
    });

/// The CUDA target's kernels (zb-compile --target cuda: block reductions,
/// flattened and tiled parallel loops, outlined gpu.func kernels), run on
/// the CPU by zb-gpu-emulate, against the CPU backend on every op family,
/// forward (the loss) and backward (every gradient), in float64.
/// - With serial reductions (reductionThreads 0) the arithmetic is the CPU
///   backend's, operation for operation: bit-identical.
/// - With block reductions (gpu.all_reduce over 32 .. 256 threads, summed
///   in the GPU's butterfly order) sums are reassociated: the stated bound
///   is 1e-12 relative to the largest value of each output; and the
///   results must differ from the serial ones somewhere (the reductions
///   really ran as block reductions) for softmax, layer_norm, rms_norm and
///   cross_entropy, and the bias gradient (a column sum) must differ
///   (the column kernel ran).
class OpGpuEmulationTest : public ::testing::TestWithParam<OpCase> {};

static std::vector<HostTensor> lossAndGrads(CompiledLoss &loss,
                                            const std::vector<HostTensor> &args,
                                            double &value) {
  std::vector<HostTensor> grads;
  value = loss.run(args, &grads);
  return grads;
}

TEST_P(OpGpuEmulationTest, EqualsCpuBackend) {
  const OpCase &c = GetParam();
  std::string source = sourceOf(c);
  CompiledLoss cpu(source);
  ASSERT_TRUE(cpu.ok()) << cpu.error() << "\n" << source;
  zb::GpuCodegenOptions serial;
  serial.emulate = true;
  serial.reductionThreads = 0;
  zb::GpuCodegenOptions block;
  block.emulate = true;
  CompiledLoss gpuSerial(source, nullptr, false, &serial);
  ASSERT_TRUE(gpuSerial.ok()) << gpuSerial.error() << "\n" << source;
  CompiledLoss gpuBlock(source, nullptr, false, &block);
  ASSERT_TRUE(gpuBlock.ok()) << gpuBlock.error() << "\n" << source;

  std::vector<ArgInit> inits;
  for (const Arg &a : c.args)
    inits.push_back(a.init);
  std::mt19937_64 rng(std::hash<std::string>()(c.name) + 1);
  std::vector<HostTensor> args = randomArgs(cpu, inits, rng);
  if (c.prepare)
    c.prepare(args);
  double lc, ls, lb;
  std::vector<HostTensor> gc = lossAndGrads(cpu, args, lc);
  std::vector<HostTensor> gs = lossAndGrads(gpuSerial, args, ls);
  std::vector<HostTensor> gb = lossAndGrads(gpuBlock, args, lb);
  ASSERT_TRUE(std::isfinite(lc));
  EXPECT_EQ(std::memcmp(&lc, &ls, sizeof(double)), 0)
      << "loss " << lc << " vs emulated " << ls;
  ASSERT_EQ(gc.size(), gs.size());
  ASSERT_EQ(gc.size(), gb.size());
  double worst = std::abs(lb - lc) / std::max(std::abs(lc), 1e-300);
  bool differs = lb != lc, gradientsDiffer = false;
  for (size_t k = 0; k < gc.size(); ++k) {
    ASSERT_EQ(gc[k].f64.size(), gs[k].f64.size());
    EXPECT_EQ(gc[k].f64, gs[k].f64) << "gradient #" << k << " of\n"
                                    << source;
    double scale = 1e-300;
    for (double v : gc[k].f64)
      scale = std::max(scale, std::abs(v));
    for (size_t j = 0; j < gc[k].f64.size(); ++j) {
      worst = std::max(worst, std::abs(gb[k].f64[j] - gc[k].f64[j]) / scale);
      differs |= gb[k].f64[j] != gc[k].f64[j];
      gradientsDiffer |= gb[k].f64[j] != gc[k].f64[j];
    }
  }
  // The bias gradient is a column sum and nothing else (the loss's full
  // sum does not enter it): it differs only if the column kernel
  // reassociated it.
  if (c.name == "bias_column_sum")
    EXPECT_TRUE(gradientsDiffer) << "no column block reduction";
  // The row reductions of these ops sum 4 .. 6 values per row in the
  // butterfly's order, which rounds differently from the serial loop for
  // these inputs (fixed seeds): proof that block reductions ran.
  if (c.name == "softmax" || c.name == "layer_norm" || c.name == "rms_norm" ||
      c.name == "cross_entropy")
    EXPECT_TRUE(differs) << "no block reduction in " << c.name;
  std::printf("[ gpu-emu  ] %-26s serial: bit-identical  block: max rel "
              "difference %.2e%s\n",
              c.name.c_str(), worst, differs ? "" : " (bit-identical)");
  EXPECT_LE(worst, 1e-12) << source;
}

INSTANTIATE_TEST_SUITE_P(
    Ops, OpGpuEmulationTest, ::testing::ValuesIn(opCases()),
    [](const ::testing::TestParamInfo<OpCase> &info) {
      return info.param.name;
    });

/// zb.split has several results: its rule (MultiResultGradientOpInterface)
/// is applied by hand here, as zb-autodiff handles single-result ops only.
mlir::LogicalResult splitBackward(ModuleOp module) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  zb::SplitOp split;
  main.walk([&](zb::SplitOp s) { split = s; });
  auto ret = llvm::cast<func::ReturnOp>(main.getBody().front().getTerminator());
  OpBuilder b(ret);
  // d loss / d piece_i = W_i (the weight arguments after the input), or
  // nothing for pieces that do not reach the loss.
  SmallVector<Value> grads;
  for (unsigned i = 0; i < split.getNumResults(); ++i)
    grads.push_back(split.getResult(i).use_empty()
                        ? Value()
                        : main.getArgument(1 + i));
  Value g = split.buildOperandGradient(b, 0, grads);
  if (!g || g.getType() != split.getOperand().getType())
    return failure();
  SmallVector<Value> results{ret.getOperand(0), g};
  ret->setOperands(results);
  main.setType(b.getFunctionType(main.getArgumentTypes(),
                                 ValueRange(results).getTypes()));
  return success();
}

TEST(SplitGradientTest, MatchesFiniteDifferences) {
  for (bool useAll : {true, false}) {
    std::string source = R"(
func.func @main(%x: tensor<3x7xf64> {zb.param}, %w0: tensor<3x2xf64>,
                %w1: tensor<3x5xf64>) -> tensor<f64> {
  %s:2 = zb.split %x axis 1 : tensor<3x7xf64> -> tensor<3x2xf64>, tensor<3x5xf64>
  %p0 = zb.mul %s#0, %w0 : tensor<3x2xf64>
  %l0 = zb.reduce_sum %p0 axes [0, 1] : tensor<3x2xf64> -> tensor<f64>
)";
    if (useAll)
      source += R"(
  %p1 = zb.mul %s#1, %w1 : tensor<3x5xf64>
  %l1 = zb.reduce_sum %p1 axes [0, 1] : tensor<3x5xf64> -> tensor<f64>
  %l = zb.add %l0, %l1 : tensor<f64>
  return %l : tensor<f64>
})";
    else
      source += "  return %l0 : tensor<f64>\n}\n";
    CompiledLoss loss(source, splitBackward);
    ASSERT_TRUE(loss.ok()) << loss.error();
    std::mt19937_64 rng(11);
    GradientCheckResult r = checkGradients(loss, randomArgs(loss, {}, rng));
    std::printf("[ fd-check ] split%-21s max rel error %.3e\n",
                useAll ? "" : "_one_used", r.maxRelError);
    EXPECT_LT(r.maxRelError, 1e-6);
  }
}

/// At ties, max and reduce_max split the gradient equally (deterministic).
TEST(TieGradientTest, SplitsEqually) {
  CompiledLoss maxLoss(R"(
func.func @main(%a: tensor<3xf64> {zb.param}, %b: tensor<3xf64> {zb.param},
                %w: tensor<3xf64>) -> tensor<f64> {
  %y = zb.max %a, %b : tensor<3xf64>
  %p = zb.mul %y, %w : tensor<3xf64>
  %l = zb.reduce_sum %p axes [0] : tensor<3xf64> -> tensor<f64>
  return %l : tensor<f64>
})");
  ASSERT_TRUE(maxLoss.ok()) << maxLoss.error();
  std::vector<HostTensor> args = maxLoss.argTemplates();
  args[0].f64 = {1.0, 2.0, 3.0};
  args[1].f64 = {1.0, 5.0, 0.0};
  args[2].f64 = {2.0, 4.0, 8.0};
  std::vector<HostTensor> grads;
  maxLoss.run(args, &grads);
  EXPECT_EQ(grads[0].f64, (std::vector<double>{1.0, 0.0, 8.0}));
  EXPECT_EQ(grads[1].f64, (std::vector<double>{1.0, 4.0, 0.0}));

  CompiledLoss reduceLoss(R"(
func.func @main(%x: tensor<2x4xf64> {zb.param}, %w: tensor<2xf64>) -> tensor<f64> {
  %y = zb.reduce_max %x axes [1] : tensor<2x4xf64> -> tensor<2xf64>
  %p = zb.mul %y, %w : tensor<2xf64>
  %l = zb.reduce_sum %p axes [0] : tensor<2xf64> -> tensor<f64>
  return %l : tensor<f64>
})");
  ASSERT_TRUE(reduceLoss.ok()) << reduceLoss.error();
  args = reduceLoss.argTemplates();
  args[0].f64 = {3.0, 1.0, 3.0, 3.0, /**/ 0.0, 2.0, -1.0, 2.0};
  args[1].f64 = {3.0, 2.0};
  reduceLoss.run(args, &grads);
  EXPECT_EQ(grads[0].f64,
            (std::vector<double>{1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0}));
}

} // namespace

namespace {

/// f32 matmuls and batched matmuls lowered to OpenBLAS calls
/// (convert-zb-to-runtime: one zbrt_sgemm per batch matrix) compute the same
/// loss and gradients as the linalg lowering, within f32 rounding.
TEST(RuntimeMatmulTest, MatchesLinalgLowering) {
  std::string source = R"(
func.func @main(%a: tensor<2x3x4x5xf64> {zb.param}, %b: tensor<2x3x6x5xf64> {zb.param},
                %c: tensor<5x4xf64> {zb.param}, %w: tensor<2x3x4x4xf64>) -> tensor<f64> {
  %a32 = zb.cast %a : tensor<2x3x4x5xf64> -> tensor<2x3x4x5xf32>
  %b32 = zb.cast %b : tensor<2x3x6x5xf64> -> tensor<2x3x6x5xf32>
  %c32 = zb.cast %c : tensor<5x4xf64> -> tensor<5x4xf32>
  %s = zb.batch_matmul %a32, %b32 {transpose_rhs} : (tensor<2x3x4x5xf32>, tensor<2x3x6x5xf32>) -> tensor<2x3x4x6xf32>
  %t = zb.batch_matmul %s, %b32 : (tensor<2x3x4x6xf32>, tensor<2x3x6x5xf32>) -> tensor<2x3x4x5xf32>
  %r = zb.reshape %t : tensor<2x3x4x5xf32> -> tensor<24x5xf32>
  %m = zb.matmul %r, %c32 : (tensor<24x5xf32>, tensor<5x4xf32>) -> tensor<24x4xf32>
  %m4 = zb.reshape %m : tensor<24x4xf32> -> tensor<2x3x4x4xf32>
  %y = zb.cast %m4 : tensor<2x3x4x4xf32> -> tensor<2x3x4x4xf64>
  %p = zb.mul %y, %w : tensor<2x3x4x4xf64>
  %l = zb.reduce_sum %p axes [0, 1, 2, 3] : tensor<2x3x4x4xf64> -> tensor<f64>
  return %l : tensor<f64>
})";
  CompiledLoss linalg(source);
  ASSERT_TRUE(linalg.ok()) << linalg.error();
  CompiledLoss blas(source, nullptr, /*useRuntime=*/true);
  ASSERT_TRUE(blas.ok()) << blas.error();
  std::mt19937_64 rng(5);
  std::vector<HostTensor> args = randomArgs(linalg, {}, rng);
  std::vector<HostTensor> g1, g2;
  double l1 = linalg.run(args, &g1), l2 = blas.run(args, &g2);
  EXPECT_NEAR(l1, l2, 1e-5 * std::abs(l1));
  double maxRel = 0;
  for (size_t k = 0; k < g1.size(); ++k) {
    double diff = 0, scale = 0;
    for (size_t j = 0; j < g1[k].f64.size(); ++j) {
      diff = std::max(diff, std::abs(g1[k].f64[j] - g2[k].f64[j]));
      scale = std::max(scale, std::abs(g1[k].f64[j]));
    }
    maxRel = std::max(maxRel, diff / scale);
  }
  std::printf("[ runtime  ] f32 OpenBLAS vs linalg: loss %.6f vs %.6f, max "
              "gradient rel diff %.3e\n",
              l1, l2, maxRel);
  EXPECT_LT(maxRel, 1e-5);
}

} // namespace
