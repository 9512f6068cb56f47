//===- GradientCheck.h - JIT-run zb functions, finite differences -*- C++ -*-===//
//
// Test harness: compiles a forward-and-loss function written in the zb
// dialect (float64, arguments marked `zb.param` are differentiated), runs
// zb-autodiff, lowers to LLVM (convert-zb-to-linalg, one-shot bufferization,
// loops, LLVM dialect) and JIT-compiles it with MLIR's ExecutionEngine. The
// compiled program returns the loss and the gradient of every parameter; the
// same program evaluates the loss for central finite differences.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_UNITTESTS_DIALECT_GRADIENTCHECK_H
#define ZB_UNITTESTS_DIALECT_GRADIENTCHECK_H

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace zb {
struct GpuCodegenOptions;
} // namespace zb

namespace zb::test {

/// A host tensor: f64 data, or i32/i64 indices.
struct HostTensor {
  std::vector<int64_t> shape;
  enum Kind { F64, I32, I64 } kind = F64;
  std::vector<double> f64;
  std::vector<int32_t> i32;
  std::vector<int64_t> i64;
  int64_t numElements() const;
};

/// Hook that builds the backward part of the function itself (for ops that
/// zb-autodiff does not handle yet, e.g. multi-result ops): called on the
/// parsed module instead of running zb-autodiff; must leave @main returning
/// (loss, d loss / d param for every zb.param argument in order).
using ManualBackward = std::function<mlir::LogicalResult(mlir::ModuleOp)>;

/// A compiled `@main(args...) -> (loss, grads...)`.
class CompiledLoss {
public:
  /// Parses `source` (a module with a function @main returning a 0-d f64
  /// loss), differentiates it (zb-autodiff, or `manual`), lowers and
  /// JIT-compiles it. On failure, `error()` says why.
  /// With `useRuntime`, f32 (batched) matmuls go through
  /// convert-zb-to-runtime and OpenBLAS (libzbrt) like zb-compile's output.
  /// With `gpu` (GpuCodegenOptions::emulate set), the compute runs as the
  /// CUDA target's kernels, emulated on the CPU (zb-gpu-emulate).
  CompiledLoss(const std::string &source, ManualBackward manual = nullptr,
               bool useRuntime = false,
               const zb::GpuCodegenOptions *gpu = nullptr);
  ~CompiledLoss();

  const std::string &error() const { return errorMessage; }
  bool ok() const { return errorMessage.empty(); }

  /// Argument types of @main, and which arguments are parameters.
  const std::vector<HostTensor> &argTemplates() const { return templates; }
  const std::vector<unsigned> &paramIndices() const { return params; }

  /// Runs the program: returns the loss, and fills `grads` (one per
  /// parameter, in `paramIndices()` order) when non-null.
  double run(const std::vector<HostTensor> &args,
             std::vector<HostTensor> *grads = nullptr);

private:
  std::string errorMessage;
  std::unique_ptr<mlir::MLIRContext> context;
  std::unique_ptr<mlir::ExecutionEngine> engine;
  std::vector<HostTensor> templates;
  std::vector<unsigned> params;
};

/// Result of a gradient check: per parameter, max |g - fd| / max |fd|.
struct GradientCheckResult {
  std::vector<double> relErrors;
  double maxRelError = 0;
  double loss = 0;
};

/// Input generation for one argument.
struct ArgInit {
  double lo = -1.0, hi = 1.0; ///< uniform range of float arguments
  double minAbs = 0.0;        ///< keep |x| >= minAbs (away from kinks at 0)
  int64_t maxIndex = 1;       ///< integer arguments: uniform in [0, maxIndex)
};

/// Random arguments for `loss`, argument i drawn with `inits[i]` (default
/// ArgInit when `inits` is shorter).
std::vector<HostTensor> randomArgs(const CompiledLoss &loss,
                                   const std::vector<ArgInit> &inits,
                                   std::mt19937_64 &rng);

/// Compares the compiled gradients with central finite differences
/// (step `h`) of the compiled loss at `args`.
GradientCheckResult checkGradients(CompiledLoss &loss,
                                   const std::vector<HostTensor> &args,
                                   double h = 1e-5);

} // namespace zb::test

#endif // ZB_UNITTESTS_DIALECT_GRADIENTCHECK_H
