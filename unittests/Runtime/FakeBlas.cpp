//===- FakeBlas.cpp - the stand-in's cuBLAS --------------------------------===//
//
// Part of libzb_fake_cuda.so (FakeCuda.cpp): cublasSgemm_v2 computes the
// column-major product of cuBLAS's documentation naively in double (an
// independent check of the runtime's row-major mapping), on operands that
// must lie in device memory; GEMMs on a captured stream are recorded
// (FakeGraph.cpp). ZB_FAKE_CUDA_FAIL_GEMM=N fails the N-th GEMM of a rank.
//
//===----------------------------------------------------------------------===//

#include "FakeCudaInternal.h"
#include "FakeDeviceMemory.h"
#include "FakeGraph.h"
#include "FakeKernels.h"

#include <cstddef>

using namespace zbfake;

extern "C" {

int cublasCreate_v2(void **handle) {
  static int h;
  *handle = &h;
  return 0;
}
int cublasDestroy_v2(void *) { return 0; }
// The handle's stream: GEMMs on it while it is captured are recorded.
static void *gBlasStream;
int cublasSetStream_v2(void *, void *stream) {
  gBlasStream = stream;
  return stream ? 0 : 7;
}
/// A workspace must be device memory (cuBLAS's advice for graphs).
int cublasSetWorkspace_v2(void *, void *workspace, size_t bytes) {
  return bytes == 0 || isDevice(workspace, bytes, "cublasSetWorkspace") ? 0
                                                                         : 7;
}
int cublasSetMathMode(void *, int mode) {
  return mode == 0 || mode == 2 || mode == 3 ? 0 : 7;
}
const char *cublasGetStatusString(int status) {
  return status == 13  ? "CUBLAS_STATUS_EXECUTION_FAILED"
         : status == 7 ? "CUBLAS_STATUS_INVALID_VALUE"
                       : "CUBLAS_STATUS_UNKNOWN";
}
/// Column-major C[m x n] = alpha op(A)[m x k] op(B)[k x n] + beta C, as
/// cuBLAS documents cublasSgemm (beta == 0: C is not read).
int cublasSgemm_v2(void *handle, int transa, int transb, int m, int n, int k,
                   const float *alpha, const float *a, int lda,
                   const float *b, int ldb, const float *beta, float *c,
                   int ldc) {
  if (zbfake::capturing(gBlasStream)) {
    // The scalars are host memory, read when the call is captured.
    float scalars[2] = {*alpha, *beta};
    zbfake::captureNode(gBlasStream, [=] {
      cublasSgemm_v2(handle, transa, transb, m, n, k, &scalars[0], a, lda, b,
                     ldb, &scalars[1], c, ldc);
    });
    return 0;
  }
  {
    const long long values[] = {transa, transb, m, n, k, lda, ldb, ldc};
    zbfake::digest(values, sizeof values);
    for (const void *p : {(const void *)a, (const void *)b, (const void *)c})
      zbfake::digestPointer(p);
    zbfake::digest(alpha, sizeof *alpha);
    zbfake::digest(beta, sizeof *beta);
  }
  ++gStats.gemms;
  long failAt = envLong("ZB_FAKE_CUDA_FAIL_GEMM", 0);
  if (failAt > 0 && gStats.gemms == failAt && faultsHere())
    return 13; // CUBLAS_STATUS_EXECUTION_FAILED
  if (m < 0 || n < 0 || k < 0 || ldc < (m > 1 ? m : 1) ||
      lda < ((transa ? k : m) > 1 ? (transa ? k : m) : 1) ||
      ldb < ((transb ? n : k) > 1 ? (transb ? n : k) : 1))
    return 7;
  if (m == 0 || n == 0)
    return 0;
  // The extent of each operand in elements (last column's end).
  auto extent = [](int rows, int cols, int ld) {
    return (size_t)(cols - 1) * (size_t)ld + (size_t)rows;
  };
  if ((k > 0 &&
       (!isDevice(a, 4 * extent(transa ? k : m, transa ? m : k, lda),
                  "cublasSgemm A") ||
        !isDevice(b, 4 * extent(transb ? n : k, transb ? k : n, ldb),
                  "cublasSgemm B"))) ||
      !isDevice(c, 4 * extent(m, n, ldc), "cublasSgemm C"))
    return 7;
  // No-op kernels (FakeKernels.cpp): GEMMs are checked, not computed.
  if (zbfake::noopKernels())
    return 0;
  zbfake::DeviceAccess open;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      double sum = 0;
      for (int l = 0; l < k; ++l) {
        double av = transa ? a[l + (size_t)i * lda] : a[i + (size_t)l * lda];
        double bv = transb ? b[j + (size_t)l * ldb] : b[l + (size_t)j * ldb];
        sum += av * bv;
      }
      float &out = c[i + (size_t)j * ldc];
      out = (float)(*alpha * sum + (*beta == 0.0f ? 0.0 : *beta * (double)out));
    }
  return 0;
}

/// cuBLAS's strided batched form: `batch` column-major products at constant
/// element strides between the matrices.
int cublasSgemmStridedBatched(void *handle, int transa, int transb, int m,
                              int n, int k, const float *alpha, const float *a,
                              int lda, long long strideA, const float *b,
                              int ldb, long long strideB, const float *beta,
                              float *c, int ldc, long long strideC,
                              int batch) {
  if (zbfake::capturing(gBlasStream)) {
    float scalars[2] = {*alpha, *beta};
    zbfake::captureNode(gBlasStream, [=] {
      cublasSgemmStridedBatched(handle, transa, transb, m, n, k, &scalars[0],
                                a, lda, strideA, b, ldb, strideB, &scalars[1],
                                c, ldc, strideC, batch);
    });
    return 0;
  }
  if (batch < 0)
    return 7;
  ++gStats.batchedGemms;
  for (int i = 0; i < batch; ++i) {
    int status = cublasSgemm_v2(handle, transa, transb, m, n, k, alpha,
                                a + i * strideA, lda, b + i * strideB, ldb,
                                beta, c + i * strideC, ldc);
    if (status != 0)
      return status;
  }
  return 0;
}

} // extern "C"
