//===- Blas.cpp - zb runtime: GEMMs through cuBLAS ------------------------===//

#include "Blas.h"

#include "../DynamicLibrary.h"
#include "../Internal.h"

#include "zbrt/zbrt.h"

#include <climits>
#include <string>

using namespace zbrt;
using namespace zbrt::cuda;
using detail::fatalf;

namespace {
// cublas_v2.h's values (no header).
constexpr int kOpN = 0, kOpT = 1;
constexpr int kDefaultMath = 0;
constexpr int kPedanticMath = 2;
constexpr int kTf32Math = 3;
/// CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION: a mixed-precision GEMM
/// (bf16 output, float32 compute) reduces split-K partial sums in float32,
/// not in the output type (no effect on fp32 GEMMs).
constexpr int kDisallowReducedPrecisionReduction = 16;
// library_types.h's cudaDataType_t, cublas_api.h's cublasComputeType_t and
// cublasGemmAlgo_t (CUDA 13): CUDA_R_16BF, CUBLAS_COMPUTE_32F (float32
// accumulation, alpha and beta as float), CUBLAS_GEMM_DEFAULT.
constexpr int kCudaR16BF = 14;
constexpr int kCublasCompute32F = 68;
constexpr int kCublasGemmDefault = -1;
} // namespace

void Blas::check(int status, const char *call) {
  if (status == 0)
    return;
  char action[128];
  detail::currentAction(action, sizeof action);
  fatalf("cuBLAS error in %s (%s): %s (status %d)", call, action,
         api.statusString ? api.statusString(status) : "unknown", status);
}

void Blas::start(Handle compute, int32_t flags) {
  const char *name = libraryFromEnv("ZBRT_CUBLAS", "libcublas.so.13");
  std::string error;
#define ZBRT_CUBLAS_ROW(field, symbol, optional, result, params)               \
  {symbol, api.field, optional},
  void *library =
      openLibrary(name, {ZBRT_CUBLAS_FUNCTIONS(ZBRT_CUBLAS_ROW)}, error);
#undef ZBRT_CUBLAS_ROW
  if (!library)
    fatalf("the CUDA backend needs cuBLAS: %s", error.c_str());
  check(api.create(&handle), "cublasCreate");
  check(api.setStream(handle, compute), "cublasSetStream");
  // fp32 GEMMs in fp32 unless the plan allows TF32 (zb-compile
  // --allow-tf32); --deterministic pins the pedantic (reproducible) mode.
  int mode = (flags & ZBRT_CUDA_ALLOW_TF32)      ? kTf32Math
             : (flags & ZBRT_CUDA_DETERMINISTIC) ? kPedanticMath
                                                 : kDefaultMath;
  // The bf16 GEMMs accumulate in float32, their split-K reductions too.
  check(api.setMathMode(handle, mode | kDisallowReducedPrecisionReduction),
        "cublasSetMathMode");
  if (api.setWorkspace) {
    // 32 MiB, what cuBLAS documents for Hopper (CUBLAS_WORKSPACE_CONFIG).
    constexpr size_t kWorkspaceBytes = size_t(32) << 20;
    zbrt::cuda::check(driver().cuMemAlloc(&workspace, kWorkspaceBytes),
                      "cuMemAlloc (cuBLAS workspace)", kWorkspaceBytes);
    check(api.setWorkspace(handle, reinterpret_cast<void *>(workspace),
                           kWorkspaceBytes),
          "cublasSetWorkspace");
  }
}

void Blas::sgemm(const Gemm &g) {
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the
  // row-major storage of a matrix is the column-major storage of its
  // transpose, so the operands swap and keep their transpose flags.
  check(api.sgemm(handle, g.transB ? kOpT : kOpN, g.transA ? kOpT : kOpN,
                  (int)g.N, (int)g.M, (int)g.K, &g.alpha, g.b, (int)g.ldb, g.a,
                  (int)g.lda, &g.beta, g.c, (int)g.ldc),
        "cublasSgemm");
}

void Blas::sgemmStridedBatched(const Gemm &g, int64_t strideA, int64_t strideB,
                               int64_t strideC, int64_t batch) {
  if (g.M > INT_MAX || g.N > INT_MAX || g.K > INT_MAX || g.lda > INT_MAX ||
      g.ldb > INT_MAX || g.ldc > INT_MAX || batch > INT_MAX)
    fatalf("cublasSgemmStridedBatched: size or stride exceeds cuBLAS's int "
           "range");
  // As in sgemm: the column-major product of the transposes.
  check(api.sgemmStridedBatched(
            handle, g.transB ? kOpT : kOpN, g.transA ? kOpT : kOpN, (int)g.N,
            (int)g.M, (int)g.K, &g.alpha, g.b, (int)g.ldb, strideB, g.a,
            (int)g.lda, strideA, &g.beta, g.c, (int)g.ldc, strideC, (int)batch),
        "cublasSgemmStridedBatched");
}

void Blas::gemmBf16(const GemmBf16 &g) {
  // As in sgemm: the column-major product of the transposes. alpha and
  // beta are floats (the compute type's), the operands bf16.
  check(api.gemmEx(handle, g.transB ? kOpT : kOpN, g.transA ? kOpT : kOpN,
                   (int)g.N, (int)g.M, (int)g.K, &g.alpha, g.b, kCudaR16BF,
                   (int)g.ldb, g.a, kCudaR16BF, (int)g.lda, &g.beta, g.c,
                   kCudaR16BF, (int)g.ldc, kCublasCompute32F,
                   kCublasGemmDefault),
        "cublasGemmEx");
}

void Blas::gemmBf16StridedBatched(const GemmBf16 &g, int64_t strideA,
                                  int64_t strideB, int64_t strideC,
                                  int64_t batch) {
  if (g.M > INT_MAX || g.N > INT_MAX || g.K > INT_MAX || g.lda > INT_MAX ||
      g.ldb > INT_MAX || g.ldc > INT_MAX || batch > INT_MAX)
    fatalf("cublasGemmStridedBatchedEx: size or stride exceeds cuBLAS's int "
           "range");
  check(api.gemmStridedBatchedEx(
            handle, g.transB ? kOpT : kOpN, g.transA ? kOpT : kOpN, (int)g.N,
            (int)g.M, (int)g.K, &g.alpha, g.b, kCudaR16BF, (int)g.ldb, strideB,
            g.a, kCudaR16BF, (int)g.lda, strideA, &g.beta, g.c, kCudaR16BF,
            (int)g.ldc, strideC, (int)batch, kCublasCompute32F,
            kCublasGemmDefault),
        "cublasGemmStridedBatchedEx");
}

void Blas::finalize() {
  if (handle)
    api.destroy(handle);
  handle = nullptr;
  if (workspace)
    driver().cuMemFree(workspace);
  workspace = 0;
}
