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

/// The cuBLAS functions zbrt calls, one row each: X(field of Blas::Api,
/// exported symbol, optional, result type, parameters). Blas::Api's fields
/// and the rows Blas::start resolves are both generated from this list (as
/// the CUDA driver's, Driver.h), so a function is named once; the rows keep
/// this order (the order of zb-run's driver_calls_by_name). Optional entry
/// points are null when the library lacks them: cublasGetStatusString
/// (errors then read "unknown") and cublasSetWorkspace_v2 (no fixed
/// workspace). `CublasHandle` is cuBLAS's handle and `Handle` a CUDA stream.
///  - cublasGemmEx(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B,
///    Btype, ldb, beta, C, Ctype, ldc, computeType, algo);
///  - cublasGemmStridedBatchedEx: cublasGemmEx's arguments with strideA,
///    strideB, strideC after lda, ldb, ldc and batchCount after strideC.
#define ZBRT_CUBLAS_FUNCTIONS(X)                                               \
  X(create, "cublasCreate_v2", false, int, (CublasHandle *))                   \
  X(destroy, "cublasDestroy_v2", false, int, (CublasHandle))                   \
  X(setStream, "cublasSetStream_v2", false, int, (CublasHandle, Handle))       \
  X(setMathMode, "cublasSetMathMode", false, int, (CublasHandle, int))         \
  X(sgemm, "cublasSgemm_v2", false, int,                                       \
    (CublasHandle, int, int, int, int, int, const float *, const float *, int, \
     const float *, int, const float *, float *, int))                         \
  X(sgemmStridedBatched, "cublasSgemmStridedBatched", false, int,              \
    (CublasHandle, int, int, int, int, int, const float *, const float *, int, \
     long long, const float *, int, long long, const float *, float *, int,    \
     long long, int))                                                          \
  X(statusString, "cublasGetStatusString", true, const char *, (int))          \
  X(setWorkspace, "cublasSetWorkspace_v2", true, int,                          \
    (CublasHandle, void *, size_t))                                            \
  X(gemmEx, "cublasGemmEx", false, int,                                        \
    (CublasHandle, int, int, int, int, int, const void *, const void *, int,   \
     int, const void *, int, int, const void *, void *, int, int, int, int))   \
  X(gemmStridedBatchedEx, "cublasGemmStridedBatchedEx", false, int,            \
    (CublasHandle, int, int, int, int, int, const void *, const void *, int,   \
     int, long long, const void *, int, int, long long, const void *, void *,  \
     int, int, long long, int, int, int))

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
  /// The cuBLAS entry points, resolved by start() (see ZBRT_CUBLAS_FUNCTIONS).
  struct Api {
#define ZBRT_CUBLAS_FIELD(field, symbol, optional, result, params)             \
  result(*field) params;
    ZBRT_CUBLAS_FUNCTIONS(ZBRT_CUBLAS_FIELD)
#undef ZBRT_CUBLAS_FIELD
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
