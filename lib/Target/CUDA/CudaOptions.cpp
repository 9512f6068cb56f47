//===- CudaOptions.cpp - the CUDA target's options and their check --------===//
#include "zb/Target/CUDA/CudaOptions.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Path.h"

#include <cmath>

using namespace zb;

std::string CudaOptions::toolkitRoot() const {
  if (!toolkitPath.empty())
    return toolkitPath;
#ifdef ZB_CUDA_TOOLKIT_ROOT
  return ZB_CUDA_TOOLKIT_ROOT;
#else
  return "";
#endif
}

GpuSpec CudaOptions::spec() const {
  GpuSpec gpu;
  gpu.tf32Gemms = allowTf32;
  gpu.launchSeconds = launchUs * 1e-6;
  return gpu;
}

/// --gpu-arch for --target cuda: "sm_<digits>" names in increasing order.
static llvm::Error checkArchitectures(llvm::StringRef list) {
  llvm::SmallVector<llvm::StringRef> archs;
  list.split(archs, ',', -1, false);
  if (archs.empty())
    return llvm::createStringError(
        "--gpu-arch must name an architecture like sm_90, got '" + list + "'");
  for (llvm::StringRef arch : archs)
    if (!arch.starts_with("sm_") || arch.size() < 5 ||
        !llvm::all_of(arch.drop_front(3), llvm::isDigit))
      return llvm::createStringError(
          "--gpu-arch must name an architecture like sm_90, got '" + arch +
          "'");
  if (!llvm::is_sorted(archs, [](llvm::StringRef a, llvm::StringRef b) {
        return a.size() < b.size() || (a.size() == b.size() && a < b);
      }))
    return llvm::createStringError(
        "--gpu-arch: name the architectures in increasing order (the PTX "
        "embedded is the first one's), got '" +
        list + "'");
  return llvm::Error::success();
}

llvm::Error zb::validateCudaOptions(const CudaOptions &options,
                                    Target target) {
  auto error = [](const llvm::Twine &msg) {
    return llvm::createStringError(msg);
  };
  if (options.blockSize < 32 || options.blockSize > 1024 ||
      options.blockSize % 32 != 0)
    return error("--gpu-block-size must be a multiple of 32 in 32 .. 1024, "
                 "got " +
                 llvm::Twine(options.blockSize));
  if (options.reductionThreads != 0 &&
      (options.reductionThreads < 32 || options.reductionThreads > 1024 ||
       !llvm::isPowerOf2_64(static_cast<uint64_t>(options.reductionThreads))))
    return error("--gpu-reduction-threads must be 0 or a power of two in "
                 "32 .. 1024, got " +
                 llvm::Twine(options.reductionThreads));
  if (!std::isfinite(options.launchUs) || options.launchUs < 0 ||
      options.launchUs > 1e6)
    return error("--gpu-launch-us must be a number of microseconds in 0 .. "
                 "1e6, got " +
                 llvm::formatv("{0}", options.launchUs).str());
  if (options.allowTf32 && !hasGpuKernels(target))
    return error("--allow-tf32 needs --target cuda or cuda-emu (TF32 is a "
                 "cuBLAS math mode of the CUDA runtime)");
  if (options.report && !hasGpuKernels(target))
    return error("--gpu-report needs --target cuda or cuda-emu (the report "
                 "lists the GPU kernels)");
  if (target != Target::Cuda)
    return llvm::Error::success();
  if (llvm::Error e = checkArchitectures(options.arch))
    return e;
  std::string toolkit = options.toolkitRoot();
  if (toolkit.empty())
    return error("--target cuda: no CUDA toolkit (zb was built without "
                 "one): pass --cuda-path DIR");
  llvm::SmallString<256> ptxas(toolkit);
  llvm::sys::path::append(ptxas, "bin", "ptxas");
  if (!llvm::sys::fs::can_execute(ptxas))
    return error("--target cuda: no CUDA toolkit at '" + toolkit + "' (" +
                 ptxas + " not found): pass --cuda-path DIR");
  return llvm::Error::success();
}
