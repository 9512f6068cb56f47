//===- Blas.h - zb runtime: GEMMs through cuBLAS ----------------*- C++ -*-===//
//
// Not installed. cuBLAS loaded with dlopen (libcublas.so.13, or
// ZBRT_CUBLAS), no header: a handle on the compute stream, fp32 math unless
// the plan allows TF32 (ZBRT_CUDA_ALLOW_TF32), pedantic under
// ZBRT_CUDA_DETERMINISTIC. zbrt_sgemm's row-major contract maps onto
// cuBLAS's column-major calls; the bfloat16 GEMMs are cublasGemmEx and
// cublasGemmStridedBatchedEx with A, B and C in CUDA_R_16BF and
// CUBLAS_COMPUTE_32F (float32 accumulation; the handle disallows
// reductions in the output type). Errors end the job with the call, the
// pass and cuBLAS's status.
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_CUDA_BLAS_H
#define ZBRT_LIB_CUDA_BLAS_H

#include "Driver.h"

#include "../Backend.h"

namespace zbrt {
namespace cuda {

class Blas {
public:
  /// Loads cuBLAS and makes the handle (ends the job when it cannot).
  void start(Handle compute, int32_t flags);
  void sgemm(const Gemm &g);
  void sgemmStridedBatched(const Gemm &g, int64_t strideA, int64_t strideB,
                           int64_t strideC, int64_t batch);
  void gemmBf16(const GemmBf16 &g);
  void gemmBf16StridedBatched(const GemmBf16 &g, int64_t strideA,
                              int64_t strideB, int64_t strideC, int64_t batch);
  void finalize();

private:
  using CublasHandle = void *;
  struct Api {
    int (*create)(CublasHandle *);
    int (*destroy)(CublasHandle);
    int (*setStream)(CublasHandle, Handle);
    int (*setMathMode)(CublasHandle, int);
    int (*sgemm)(CublasHandle, int, int, int, int, int, const float *,
                 const float *, int, const float *, int, const float *, float *,
                 int);
    int (*sgemmStridedBatched)(CublasHandle, int, int, int, int, int,
                               const float *, const float *, int, long long,
                               const float *, int, long long, const float *,
                               float *, int, long long, int);
    const char *(*statusString)(int);
    int (*setWorkspace)(CublasHandle, void *, size_t);
    // cublasGemmEx(handle, transa, transb, m, n, k, alpha, A, Atype, lda,
    // B, Btype, ldb, beta, C, Ctype, ldc, computeType, algo)
    int (*gemmEx)(CublasHandle, int, int, int, int, int, const void *,
                  const void *, int, int, const void *, int, int, const void *,
                  void *, int, int, int, int);
    // cublasGemmStridedBatchedEx: cublasGemmEx's arguments with strideA,
    // strideB, strideC after lda, ldb, ldc and batchCount after strideC.
    int (*gemmStridedBatchedEx)(CublasHandle, int, int, int, int, int,
                                const void *, const void *, int, int, long long,
                                const void *, int, int, long long, const void *,
                                void *, int, int, long long, int, int, int);
  };
  void check(int status, const char *call);
  Api api{};
  CublasHandle handle = nullptr;
  /// cuBLAS's workspace, set once (cublasSetWorkspace): a GEMM captured
  /// into a CUDA graph then allocates nothing (cuBLAS's advice for graphs).
  CUdeviceptr workspace = 0;
};

} // namespace cuda
} // namespace zbrt

#endif // ZBRT_LIB_CUDA_BLAS_H
