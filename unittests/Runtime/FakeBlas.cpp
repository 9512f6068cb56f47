//===- FakeBlas.cpp - the stand-in's cuBLAS --------------------------------===//
//
// Part of libzb_fake_cuda.so (FakeCuda.cpp): cublasSgemm_v2 computes the
// column-major product of cuBLAS's documentation naively in double (an
// independent check of the runtime's row-major mapping), on operands that
// must lie in device memory; GEMMs on a captured stream are recorded
// (FakeGraph.cpp). ZB_FAKE_CUDA_FAIL_GEMM=N fails the N-th GEMM of a rank.
// cublasGemmEx (and its strided batched form) takes only the types the
// runtime's bf16 GEMMs use (A, B, C in CUDA_R_16BF, CUBLAS_COMPUTE_32F,
// CUBLAS_GEMM_DEFAULT; anything else is CUBLAS_STATUS_NOT_SUPPORTED) and
// computes naively in float32 (products of bf16 values are exact in
// float32, the sum is rounded at each addition in k order), rounding each
// element of C to bf16 with a rounding of its own (not libzbrt's).
//
//===----------------------------------------------------------------------===//

#include "FakeCudaInternal.h"
#include "FakeDeviceMemory.h"
#include "FakeGraph.h"
#include "FakeKernels.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

using namespace zbfake;

namespace {

// library_types.h and cublas_api.h's values (CUDA 13).
constexpr int kCudaR16BF = 14;         // CUDA_R_16BF
constexpr int kCublasCompute32F = 68;  // CUBLAS_COMPUTE_32F
constexpr int kCublasGemmDefault = -1; // CUBLAS_GEMM_DEFAULT
constexpr int kInvalidValueStatus = 7, kNotSupportedStatus = 15;
/// CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION, a flag or-ed into a
/// math mode.
constexpr int kDisallowReducedPrecisionReduction = 16;

float fromBf16(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// `f` rounded to bfloat16: to nearest, ties to the even one; a NaN stays a
/// NaN (quiet).
uint16_t toBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  uint32_t high = bits >> 16, low = bits & 0xffffu;
  if ((high & 0x7f80u) == 0x7f80u && (high & 0x7fu) + low != 0)
    return (uint16_t)(high | 0x40u);
  if (low > 0x8000u || (low == 0x8000u && (high & 1u)))
    ++high; // may carry into the exponent, up to the infinity
  return (uint16_t)high;
}

/// What cuBLAS checks of a column-major GEMM before computing it, after the
/// stand-in's injected failure (ZB_FAKE_CUDA_FAIL_GEMM=N: the N-th GEMM
/// fails): sizes, leading dimensions, and A, B, C device memory of
/// `elemBytes`-byte elements over their extents (named "<name> A" ...). A
/// status to return at once (0 where m or n is 0, or kernels are no-ops),
/// or nullopt: compute the product.
std::optional<int> checkGemm(const char *name, size_t elemBytes, int transa,
                             int transb, int m, int n, int k, const void *a,
                             int lda, const void *b, int ldb, const void *c,
                             int ldc) {
  ++gStats.gemms;
  long failAt = envLong("ZB_FAKE_CUDA_FAIL_GEMM", 0);
  if (failAt > 0 && gStats.gemms == failAt && faultsHere())
    return 13; // CUBLAS_STATUS_EXECUTION_FAILED
  if (m < 0 || n < 0 || k < 0 || ldc < (m > 1 ? m : 1) ||
      lda < ((transa ? k : m) > 1 ? (transa ? k : m) : 1) ||
      ldb < ((transb ? n : k) > 1 ? (transb ? n : k) : 1))
    return kInvalidValueStatus;
  if (m == 0 || n == 0)
    return 0;
  // The extent of each operand in elements (last column's end).
  auto extent = [](int rows, int cols, int ld) {
    return (size_t)(cols - 1) * (size_t)ld + (size_t)rows;
  };
  std::string what(name);
  if ((k > 0 &&
       (!isDevice(a, elemBytes * extent(transa ? k : m, transa ? m : k, lda),
                  (what + " A").c_str()) ||
        !isDevice(b, elemBytes * extent(transb ? n : k, transb ? k : n, ldb),
                  (what + " B").c_str()))) ||
      !isDevice(c, elemBytes * extent(m, n, ldc), (what + " C").c_str()))
    return kInvalidValueStatus;
  // No-op kernels (FakeKernels.cpp): GEMMs are checked, not computed.
  if (zbfake::noopKernels())
    return 0;
  return std::nullopt;
}

} // namespace

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
  mode &= ~kDisallowReducedPrecisionReduction;
  return mode == 0 || mode == 2 || mode == 3 ? 0 : 7;
}
const char *cublasGetStatusString(int status) {
  return status == 13   ? "CUBLAS_STATUS_EXECUTION_FAILED"
         : status == 7  ? "CUBLAS_STATUS_INVALID_VALUE"
         : status == 15 ? "CUBLAS_STATUS_NOT_SUPPORTED"
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
      return cublasSgemm_v2(handle, transa, transb, m, n, k, &scalars[0], a, lda, b,
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
  if (std::optional<int> status = checkGemm("cublasSgemm", 4, transa, transb,
                                             m, n, k, a, lda, b, ldb, c, ldc))
    return *status;
  zbfake::noteWrite(gBlasStream, c);
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
      return cublasSgemmStridedBatched(handle, transa, transb, m, n, k, &scalars[0],
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

/// cublasGemmEx as the runtime's bf16 GEMMs call it: column-major C[m x n]
/// = alpha op(A)[m x k] op(B)[k x n] + beta C with A, B, C bfloat16 and
/// alpha, beta, the products and their sum float32 (beta == 0: C is not
/// read); C rounded to bfloat16.
int cublasGemmEx(void *handle, int transa, int transb, int m, int n, int k,
                 const void *alpha, const void *a, int aType, int lda,
                 const void *b, int bType, int ldb, const void *beta, void *c,
                 int cType, int ldc, int computeType, int algo) {
  if (aType != kCudaR16BF || bType != kCudaR16BF || cType != kCudaR16BF ||
      computeType != kCublasCompute32F || algo != kCublasGemmDefault)
    return kNotSupportedStatus;
  // With CUBLAS_COMPUTE_32F the scalars are floats.
  const float al = *static_cast<const float *>(alpha),
              be = *static_cast<const float *>(beta);
  if (zbfake::capturing(gBlasStream)) {
    // The scalars are host memory, read when the call is captured.
    zbfake::captureNode(gBlasStream, [=] {
      return cublasGemmEx(handle, transa, transb, m, n, k, &al, a, aType, lda, b,
                   bType, ldb, &be, c, cType, ldc, computeType, algo);
    });
    return 0;
  }
  {
    const long long values[] = {transa, transb, m,   n,     k,
                                lda,    ldb,    ldc, aType, computeType};
    zbfake::digest(values, sizeof values);
    for (const void *p : {a, b, (const void *)c})
      zbfake::digestPointer(p);
    zbfake::digest(&al, sizeof al);
    zbfake::digest(&be, sizeof be);
  }
  if (std::optional<int> status = checkGemm("cublasGemmEx", 2, transa,
                                             transb, m, n, k, a, lda, b, ldb,
                                             c, ldc))
    return *status;
  zbfake::noteWrite(gBlasStream, c);
  zbfake::DeviceAccess open;
  const auto *A = static_cast<const uint16_t *>(a);
  const auto *B = static_cast<const uint16_t *>(b);
  auto *C = static_cast<uint16_t *>(c);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      float sum = 0.0f;
      for (int l = 0; l < k; ++l) {
        float av =
            fromBf16(transa ? A[l + (size_t)i * lda] : A[i + (size_t)l * lda]);
        float bv =
            fromBf16(transb ? B[j + (size_t)l * ldb] : B[l + (size_t)j * ldb]);
        sum += av * bv;
      }
      uint16_t &out = C[i + (size_t)j * ldc];
      float value = al * sum;
      if (be != 0.0f)
        value += be * fromBf16(out);
      out = toBf16(value);
    }
  return 0;
}

/// cublasGemmStridedBatchedEx: `batch` cublasGemmEx products at constant
/// element strides between the matrices.
int cublasGemmStridedBatchedEx(void *handle, int transa, int transb, int m,
                               int n, int k, const void *alpha, const void *a,
                               int aType, int lda, long long strideA,
                               const void *b, int bType, int ldb,
                               long long strideB, const void *beta, void *c,
                               int cType, int ldc, long long strideC, int batch,
                               int computeType, int algo) {
  if (aType != kCudaR16BF || bType != kCudaR16BF || cType != kCudaR16BF ||
      computeType != kCublasCompute32F || algo != kCublasGemmDefault)
    return kNotSupportedStatus;
  if (zbfake::capturing(gBlasStream)) {
    const float scalars[2] = {*static_cast<const float *>(alpha),
                              *static_cast<const float *>(beta)};
    zbfake::captureNode(gBlasStream, [=] {
      return cublasGemmStridedBatchedEx(handle, transa, transb, m, n, k, &scalars[0],
                                 a, aType, lda, strideA, b, bType, ldb, strideB,
                                 &scalars[1], c, cType, ldc, strideC, batch,
                                 computeType, algo);
    });
    return 0;
  }
  if (batch < 0)
    return kInvalidValueStatus;
  ++gStats.batchedGemms;
  for (int i = 0; i < batch; ++i) {
    int status =
        cublasGemmEx(handle, transa, transb, m, n, k, alpha,
                     static_cast<const uint16_t *>(a) + i * strideA, aType, lda,
                     static_cast<const uint16_t *>(b) + i * strideB, bType, ldb,
                     beta, static_cast<uint16_t *>(c) + i * strideC, cType, ldc,
                     computeType, algo);
    if (status != 0)
      return status;
  }
  return 0;
}

} // extern "C"
