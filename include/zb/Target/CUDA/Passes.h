//===- Passes.h - zb CUDA target passes -------------------------*- C++ -*-===//
#ifndef ZB_TARGET_CUDA_PASSES_H
#define ZB_TARGET_CUDA_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

#include <functional>
#include <vector>

namespace zb {
#define GEN_PASS_DECL
#include "zb/Target/CUDA/Passes.h.inc"

struct GpuKernelLaunch;

/// What zb-gpu-report-kernels hands the driver: every kernel launch and
/// runtime GEMM of the module (zb/Target/CUDA/KernelReport.h).
using KernelReportCallback =
    std::function<void(std::vector<GpuKernelLaunch> launches)>;

/// zb-gpu-report-kernels with a callback instead of the printed table
/// (zb-compile's --gpu-report and --gpu-costs).
std::unique_ptr<mlir::Pass>
createZBGpuReportKernels(KernelReportCallback callback,
                         bool everyStageFunction = false);

#define GEN_PASS_REGISTRATION
#include "zb/Target/CUDA/Passes.h.inc"
} // namespace zb

#endif // ZB_TARGET_CUDA_PASSES_H
