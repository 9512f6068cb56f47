//===- CudaOptions.h - the CUDA target's options ----------------*- C++ -*-===//
//
// What zb-compile's GPU flags set for --target cuda and cuda-emu, with their
// one check and the two things derived from them: the toolkit the fatbin is
// built with and the GPU the kernel report and --gpu-costs time against.
// The driver holds one CudaOptions (CompileOptions::cuda) and knows nothing
// else of the target's flags.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_TARGET_CUDA_CUDAOPTIONS_H
#define ZB_TARGET_CUDA_CUDAOPTIONS_H

#include "zb/Formats/Options.h"
#include "zb/Target/CUDA/KernelReport.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace zb {

struct CudaOptions {
  /// GPU architectures of --target cuda (--gpu-arch), comma-separated in
  /// increasing order ("sm_80,sm_90"): one cubin each, plus the first one's
  /// PTX.
  std::string arch = "sm_90";
  /// --allow-tf32: the runtime's cuBLAS GEMMs may use TF32 tensor cores
  /// (plan.json `allow_tf32`); the kernel report then times GEMMs at the
  /// TF32 peak.
  bool allowTf32 = false;
  /// Microseconds added to every kernel launch and GEMM of the kernel report
  /// and of --gpu-costs (--gpu-launch-us; GpuSpec::launchSeconds; 0: the
  /// pure roofline).
  double launchUs = 3.0;
  /// Threads per block of the elementwise kernels (--gpu-block-size;
  /// 32 .. 1024, a multiple of 32).
  int64_t blockSize = 256;
  /// Most threads of a block reduction (--gpu-reduction-threads; a power of
  /// two 32 .. 1024, or 0: every reduction one thread per output with a
  /// serial loop, the CPU backend's arithmetic).
  int64_t reductionThreads = 256;
  /// --gpu-attention-kernel: run each eligible zb.attention and
  /// zb.attention_grad (bfloat16, no mask, head dims multiples of 16 up to
  /// 128) as fused FlashAttention-2 kernels on tensor cores
  /// (zb-gpu-attention-kernels); false: decompose every one.
  bool attentionKernel = true;
  /// --gpu-attention-token-major: the attention kernels read q, k, v and
  /// write the result and the gradients in place in the token-major tensors
  /// the exporter's head transposes are views of (zb/Transforms/HeadViews.h;
  /// B rebuilds the views, zb-split-backward rebuild-attention-views);
  /// false: each head view is a copy, as before.
  bool attentionTokenMajor = true;
  /// --gpu-norm-kernel: run each float32 layer norm and RMS norm as one
  /// kernel, a warp per row (zb-gpu-norm-kernels); false (or
  /// reductionThreads 0, the CPU backend's arithmetic): decompose them.
  bool normKernel = true;
  /// --gpu-report: write gpu_report.json and gpu_report.txt (every kernel
  /// and GEMM of every rank program with its grid, block, bytes, FLOPs and
  /// H100 roofline time; T_F/T_B/T_W sums per stage; KernelReport.h).
  bool report = false;
  /// CUDA toolkit root (--cuda-path); empty: the toolkit CMake found when zb
  /// was built (ZB_CUDA_TOOLKIT_ROOT).
  std::string toolkitPath;
  /// --gpu-costs (default on), without --profile or --schedule-file:
  /// schedule with the kernels' roofline T_F/T_B/T_W (the sums of each
  /// pass's kernels and GEMMs on the H100) instead of the zb-level cost
  /// model; written to OUTDIR/gpu_costs.json in zb-run --profile's format.
  bool costs = true;

  /// `toolkitPath`, else the toolkit zb was built with, else "".
  std::string toolkitRoot() const;
  /// The GPU the kernel report and --gpu-costs time against: the H100's
  /// peaks, `allowTf32`, `launchUs`.
  GpuSpec spec() const;
};

/// Checks `options` for `target`. Errors name the flag: "--gpu-block-size
/// must be a multiple of 32 in 32 .. 1024, got 48"; --allow-tf32 and
/// --gpu-report without GPU kernels (cpu, h100); for cuda, a malformed or
/// unordered --gpu-arch, no toolkit, or no bin/ptxas in it.
llvm::Error validateCudaOptions(const CudaOptions &options, Target target);

} // namespace zb

#endif // ZB_TARGET_CUDA_CUDAOPTIONS_H
