//===- MemrefABI.cpp - zb runtime: memref forms of GEMMs and send/recv ----===//
//
// Entry points for code lowered by convert-zb-to-runtime: memref arguments
// with dynamic strides. Row-major views (inner stride 1) and transposed views
// (outer stride 1) go straight to the backend's GEMM; anything else is
// copied into a temporary of the backend (Backend::allocTemporary). The
// float32 and bfloat16 GEMMs share the code (templates over the element
// type); messages of any element type are bytes.
//
//===----------------------------------------------------------------------===//

#include "zbrt/zbrt.h"

#include "BackendSelection.h"
#include "Gemm.h"
#include "../Internal.h"

#include <algorithm>
#include <optional>
#include <type_traits>
#include <vector>

using namespace zbrt;
using detail::fatalf;

namespace {

/// A temporary of `count` elements of T that the backend's GEMMs and
/// messages can use (managed memory under the CUDA backend); the backend
/// lets the host touch it (Backend::allocTemporary) and sync() waits before
/// the host reads what the backend wrote.
template <typename T> struct Temp {
  T *data = nullptr;
  explicit Temp(size_t count)
      : data(static_cast<T *>(backend().allocTemporary(
            count * sizeof(T), "a strided operand's copy"))) {}
  Temp(Temp &&other) noexcept : data(other.data) { other.data = nullptr; }
  Temp(const Temp &) = delete;
  ~Temp() {
    if (data)
      backend().freeTemporary(data, "a strided operand's copy");
  }
  /// Before the host reads what the backend wrote.
  static void sync() { backend().hostAccess("a strided result's copy"); }
};

/// A 2-D strided view: element (i, j) at data[i * rowStride + j * colStride]
/// (T: float, or uint16_t holding bfloat16).
template <typename T> struct View {
  T *data;
  int64_t rows, cols, rowStride, colStride;
};

/// A BLAS operand equivalent to `v` (or op(v)^T when `transposed` flips):
/// row-major storage `data` with leading dimension `ld`.
template <typename T> struct BlasOperand {
  const T *data;
  bool transposed; // storage holds v^T
  int64_t ld;
  std::optional<Temp<T>> copy; // owns the data when the view was copied
};

/// Whether `v` is in a BLAS layout as it stands: row-major with leading
/// dimension `ld` (transposed = false), or its transpose is (true).
template <typename T>
bool blasLayout(const View<T> &v, bool &transposed, int64_t &ld) {
  // With one row (column) the row (column) stride is irrelevant.
  int64_t rowStride = v.rows <= 1 ? v.cols : v.rowStride;
  int64_t colStride = v.cols <= 1 ? 1 : v.colStride;
  if (colStride == 1 && rowStride >= std::max<int64_t>(v.cols, 1)) {
    transposed = false;
    ld = rowStride;
    return true;
  }
  int64_t tRowStride = v.cols <= 1 ? v.rows : v.colStride;
  int64_t tColStride = v.rows <= 1 ? 1 : v.rowStride;
  if (tColStride == 1 && tRowStride >= std::max<int64_t>(v.rows, 1)) {
    transposed = true;
    ld = tRowStride;
    return true;
  }
  return false;
}

template <typename T> BlasOperand<T> asBlas(const View<T> &v) {
  BlasOperand<T> op{v.data, false, 0, std::nullopt};
  if (blasLayout(v, op.transposed, op.ld))
    return op;
  op.copy.emplace((size_t)(v.rows * v.cols));
  T *copy = op.copy->data;
  for (int64_t i = 0; i < v.rows; ++i)
    for (int64_t j = 0; j < v.cols; ++j)
      copy[i * v.cols + j] = v.data[i * v.rowStride + j * v.colStride];
  op.data = copy;
  op.ld = std::max<int64_t>(v.cols, 1);
  return op;
}

/// The row-major GEMM C = op(A) op(B) (alpha 1, beta 0) of the ABI on BLAS
/// operands: zbrt_sgemm for float, checkedGemmBf16 for bfloat16 (errors
/// naming `fn`).
void rowMajorGemm(const char *, const float *a, const float *b, float *c,
                  int64_t M, int64_t N, int64_t K, int32_t ta, int32_t tb,
                  int64_t lda, int64_t ldb, int64_t ldc) {
  zbrt_sgemm((int64_t)a, (int64_t)b, (int64_t)c, M, N, K, ta, tb, 1.0f, 0.0f,
             lda, ldb, ldc);
}
void rowMajorGemm(const char *fn, const uint16_t *a, const uint16_t *b,
                  uint16_t *c, int64_t M, int64_t N, int64_t K, int32_t ta,
                  int32_t tb, int64_t lda, int64_t ldb, int64_t ldc) {
  checkedGemmBf16(fn, GemmBf16{a, b, c, M, N, K, ta != 0, tb != 0, 1.0f, 0.0f,
                               lda, ldb, ldc});
}

/// Computes C[M x N] = op(A) * op(B), A and B given as stored; `fn` names
/// the entry point in errors.
template <typename T>
void gemmViews(const char *fn, const View<T> &a, const View<T> &b,
               const View<T> &c, bool transA, bool transB) {
  int64_t M = transA ? a.cols : a.rows, K = transA ? a.rows : a.cols;
  int64_t kB = transB ? b.cols : b.rows, N = transB ? b.rows : b.cols;
  if (K != kB || c.rows != M || c.cols != N)
    fatalf("%s: shape mismatch: A %lldx%lld%s, B %lldx%lld%s, C %lldx%lld", fn,
           (long long)a.rows, (long long)a.cols, transA ? " (transposed)" : "",
           (long long)b.rows, (long long)b.cols, transB ? " (transposed)" : "",
           (long long)c.rows, (long long)c.cols);
  if (M == 0 || N == 0)
    return;
  BlasOperand<T> ao = asBlas(a), bo = asBlas(b);
  int32_t ta = (int32_t)(transA != ao.transposed);
  int32_t tb = (int32_t)(transB != bo.transposed);
  int64_t cRowStride = c.rows <= 1 ? c.cols : c.rowStride;
  int64_t cColStride = c.cols <= 1 ? 1 : c.colStride;
  if (cColStride == 1 && cRowStride >= N) {
    rowMajorGemm(fn, ao.data, bo.data, c.data, M, N, K, ta, tb, ao.ld, bo.ld,
                 cRowStride);
    return;
  }
  Temp<T> tmp((size_t)(M * N));
  rowMajorGemm(fn, ao.data, bo.data, tmp.data, M, N, K, ta, tb, ao.ld, bo.ld,
               N);
  Temp<T>::sync();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      c.data[i * c.rowStride + j * c.colStride] = tmp.data[i * N + j];
}

/// The backend's strided-batched GEMM of float (sgemmStridedBatched) or
/// bfloat16 (gemmBf16StridedBatched) operands.
bool backendStridedBatched(const Gemm &g, int64_t strideA, int64_t strideB,
                           int64_t strideC, int64_t batch) {
  return backend().sgemmStridedBatched(g, strideA, strideB, strideC, batch);
}
bool backendStridedBatched(const GemmBf16 &g, int64_t strideA, int64_t strideB,
                           int64_t strideC, int64_t batch) {
  return backend().gemmBf16StridedBatched(g, strideA, strideB, strideC, batch);
}

/// One strided-batched GEMM of the backend (cublasSgemmStridedBatched,
/// cublasGemmStridedBatchedEx) for `batch` matrices at constant batch
/// strides, when every operand's matrix is in a BLAS layout (rows or
/// columns contiguous), C's rows are and the backend has such a call; false
/// otherwise (the caller then loops over the matrices).
template <typename T>
bool gemmStridedBatched(const View<T> &a, const View<T> &b, const View<T> &c,
                        int64_t batch, int64_t aBatchStride,
                        int64_t bBatchStride, int64_t cBatchStride, bool transA,
                        bool transB) {
  int64_t M = transA ? a.cols : a.rows, K = transA ? a.rows : a.cols;
  int64_t kB = transB ? b.cols : b.rows, N = transB ? b.rows : b.cols;
  if (K != kB || c.rows != M || c.cols != N || M == 0 || N == 0 || K == 0)
    return false;
  bool aT = false, bT = false, cT = false;
  int64_t lda = 0, ldb = 0, ldc = 0;
  if (!blasLayout(a, aT, lda) || !blasLayout(b, bT, ldb) ||
      !blasLayout(c, cT, ldc) || cT)
    return false;
  using Call = std::conditional_t<std::is_same_v<T, float>, Gemm, GemmBf16>;
  return backendStridedBatched(Call{a.data, b.data, c.data, M, N, K,
                                    transA != aT, transB != bT, 1.0f, 0.0f, lda,
                                    ldb, ldc},
                               aBatchStride, bBatchStride, cBatchStride, batch);
}

/// The batched memref forms: C[i] = op(A[i]) op(B[i]) over the leading
/// dimension of three rank-3 memrefs (`batchFn` names the entry point in
/// errors about the batch, `matrixFn` in errors about a matrix).
template <typename T>
void batchedGemm(const char *batchFn, const char *matrixFn, T *aAligned,
                 int64_t aOffset, const int64_t aSizes[3],
                 const int64_t aStrides[3], T *bAligned, int64_t bOffset,
                 const int64_t bSizes[3], const int64_t bStrides[3],
                 T *cAligned, int64_t cOffset, const int64_t cSizes[3],
                 const int64_t cStrides[3], bool transA, bool transB) {
  const int64_t batch = aSizes[0];
  if (batch != bSizes[0] || batch != cSizes[0] || batch < 0)
    fatalf("%s: batch sizes differ: A %lld, B %lld, C %lld", batchFn,
           (long long)batch, (long long)bSizes[0], (long long)cSizes[0]);
  View<T> a0{aAligned + aOffset, aSizes[1], aSizes[2], aStrides[1],
             aStrides[2]};
  View<T> b0{bAligned + bOffset, bSizes[1], bSizes[2], bStrides[1],
             bStrides[2]};
  View<T> c0{cAligned + cOffset, cSizes[1], cSizes[2], cStrides[1],
             cStrides[2]};
  if (batch > 0 && gemmStridedBatched(a0, b0, c0, batch, aStrides[0],
                                      bStrides[0], cStrides[0], transA, transB))
    return;
  for (int64_t i = 0; i < batch; ++i) {
    View<T> a = a0, b = b0, c = c0;
    a.data += i * aStrides[0];
    b.data += i * bStrides[0];
    c.data += i * cStrides[0];
    gemmViews(matrixFn, a, b, c, transA, transB);
  }
}

void checkSize(const char *what, int64_t size) {
  if (size < 0 || size > (int64_t)1 << 29)
    fatalf("%s: unsupported size %lld elements", what, (long long)size);
}

} // namespace

extern "C" void
zbrt_sgemm_memref(float *, float *aAligned, int64_t aOffset, int64_t aSize0,
                  int64_t aSize1, int64_t aStride0, int64_t aStride1, float *,
                  float *bAligned, int64_t bOffset, int64_t bSize0,
                  int64_t bSize1, int64_t bStride0, int64_t bStride1, float *,
                  float *cAligned, int64_t cOffset, int64_t cSize0,
                  int64_t cSize1, int64_t cStride0, int64_t cStride1,
                  int32_t transA, int32_t transB) {
  gemmViews<float>("zbrt_sgemm_memref",
                   {aAligned + aOffset, aSize0, aSize1, aStride0, aStride1},
                   {bAligned + bOffset, bSize0, bSize1, bStride0, bStride1},
                   {cAligned + cOffset, cSize0, cSize1, cStride0, cStride1},
                   transA != 0, transB != 0);
}

extern "C" void zbrt_sgemm_batched_memref(
    float *, float *aAligned, int64_t aOffset, int64_t aSize0, int64_t aSize1,
    int64_t aSize2, int64_t aStride0, int64_t aStride1, int64_t aStride2,
    float *, float *bAligned, int64_t bOffset, int64_t bSize0, int64_t bSize1,
    int64_t bSize2, int64_t bStride0, int64_t bStride1, int64_t bStride2,
    float *, float *cAligned, int64_t cOffset, int64_t cSize0, int64_t cSize1,
    int64_t cSize2, int64_t cStride0, int64_t cStride1, int64_t cStride2,
    int32_t transA, int32_t transB) {
  const int64_t aSizes[] = {aSize0, aSize1, aSize2},
                aStrides[] = {aStride0, aStride1, aStride2};
  const int64_t bSizes[] = {bSize0, bSize1, bSize2},
                bStrides[] = {bStride0, bStride1, bStride2};
  const int64_t cSizes[] = {cSize0, cSize1, cSize2},
                cStrides[] = {cStride0, cStride1, cStride2};
  batchedGemm("zbrt_sgemm_batched_memref", "zbrt_sgemm_memref", aAligned,
              aOffset, aSizes, aStrides, bAligned, bOffset, bSizes, bStrides,
              cAligned, cOffset, cSizes, cStrides, transA != 0, transB != 0);
}

extern "C" void zbrt_gemm_bf16_memref(
    uint16_t *, uint16_t *aAligned, int64_t aOffset, int64_t aSize0,
    int64_t aSize1, int64_t aStride0, int64_t aStride1, uint16_t *,
    uint16_t *bAligned, int64_t bOffset, int64_t bSize0, int64_t bSize1,
    int64_t bStride0, int64_t bStride1, uint16_t *, uint16_t *cAligned,
    int64_t cOffset, int64_t cSize0, int64_t cSize1, int64_t cStride0,
    int64_t cStride1, int32_t transA, int32_t transB) {
  gemmViews<uint16_t>("zbrt_gemm_bf16_memref",
                      {aAligned + aOffset, aSize0, aSize1, aStride0, aStride1},
                      {bAligned + bOffset, bSize0, bSize1, bStride0, bStride1},
                      {cAligned + cOffset, cSize0, cSize1, cStride0, cStride1},
                      transA != 0, transB != 0);
}

extern "C" void zbrt_gemm_bf16_batched_memref(
    uint16_t *, uint16_t *aAligned, int64_t aOffset, int64_t aSize0,
    int64_t aSize1, int64_t aSize2, int64_t aStride0, int64_t aStride1,
    int64_t aStride2, uint16_t *, uint16_t *bAligned, int64_t bOffset,
    int64_t bSize0, int64_t bSize1, int64_t bSize2, int64_t bStride0,
    int64_t bStride1, int64_t bStride2, uint16_t *, uint16_t *cAligned,
    int64_t cOffset, int64_t cSize0, int64_t cSize1, int64_t cSize2,
    int64_t cStride0, int64_t cStride1, int64_t cStride2, int32_t transA,
    int32_t transB) {
  const int64_t aSizes[] = {aSize0, aSize1, aSize2},
                aStrides[] = {aStride0, aStride1, aStride2};
  const int64_t bSizes[] = {bSize0, bSize1, bSize2},
                bStrides[] = {bStride0, bStride1, bStride2};
  const int64_t cSizes[] = {cSize0, cSize1, cSize2},
                cStrides[] = {cStride0, cStride1, cStride2};
  batchedGemm("zbrt_gemm_bf16_batched_memref", "zbrt_gemm_bf16_memref",
              aAligned, aOffset, aSizes, aStrides, bAligned, bOffset, bSizes,
              bStrides, cAligned, cOffset, cSizes, cStrides, transA != 0,
              transB != 0);
}

namespace {
/// zbrt_send / zbrt_recv of `size` elements of T at `data` with `stride`
/// (packed through a temporary when strided).
template <typename T>
void sendStrided(const char *fn, const T *data, int64_t size, int64_t stride,
                 int32_t peer, int32_t tag) {
  checkSize(fn, size);
  if (stride == 1 || size <= 1) {
    zbrt_send((int64_t)data, size * (int64_t)sizeof(T), peer, tag);
    return;
  }
  Temp<T> tmp((size_t)size);
  for (int64_t i = 0; i < size; ++i)
    tmp.data[i] = data[i * stride];
  zbrt_send((int64_t)tmp.data, size * (int64_t)sizeof(T), peer, tag);
}
template <typename T>
void recvStrided(const char *fn, T *data, int64_t size, int64_t stride,
                 int32_t peer, int32_t tag) {
  checkSize(fn, size);
  if (stride == 1 || size <= 1) {
    zbrt_recv((int64_t)data, size * (int64_t)sizeof(T), peer, tag);
    return;
  }
  Temp<T> tmp((size_t)size);
  zbrt_recv((int64_t)tmp.data, size * (int64_t)sizeof(T), peer, tag);
  Temp<T>::sync();
  for (int64_t i = 0; i < size; ++i)
    data[i * stride] = tmp.data[i];
}
} // namespace

extern "C" void zbrt_send_memref(float *, float *aligned, int64_t offset,
                                 int64_t size, int64_t stride, int32_t peer,
                                 int32_t tag) {
  sendStrided("zbrt_send_memref", aligned + offset, size, stride, peer, tag);
}

extern "C" void zbrt_recv_memref(float *, float *aligned, int64_t offset,
                                 int64_t size, int64_t stride, int32_t peer,
                                 int32_t tag) {
  recvStrided("zbrt_recv_memref", aligned + offset, size, stride, peer, tag);
}

extern "C" void zbrt_send_memref_i64(int64_t *, int64_t *aligned,
                                     int64_t offset, int64_t size,
                                     int64_t stride, int32_t peer,
                                     int32_t tag) {
  sendStrided("zbrt_send_memref_i64", aligned + offset, size, stride, peer,
              tag);
}
extern "C" void zbrt_recv_memref_i64(int64_t *, int64_t *aligned,
                                     int64_t offset, int64_t size,
                                     int64_t stride, int32_t peer,
                                     int32_t tag) {
  recvStrided("zbrt_recv_memref_i64", aligned + offset, size, stride, peer,
              tag);
}
extern "C" void zbrt_send_memref_i32(int32_t *, int32_t *aligned,
                                     int64_t offset, int64_t size,
                                     int64_t stride, int32_t peer,
                                     int32_t tag) {
  sendStrided("zbrt_send_memref_i32", aligned + offset, size, stride, peer,
              tag);
}
extern "C" void zbrt_recv_memref_i32(int32_t *, int32_t *aligned,
                                     int64_t offset, int64_t size,
                                     int64_t stride, int32_t peer,
                                     int32_t tag) {
  recvStrided("zbrt_recv_memref_i32", aligned + offset, size, stride, peer,
              tag);
}
extern "C" void zbrt_send_memref_bf16(uint16_t *, uint16_t *aligned,
                                      int64_t offset, int64_t size,
                                      int64_t stride, int32_t peer,
                                      int32_t tag) {
  sendStrided("zbrt_send_memref_bf16", aligned + offset, size, stride, peer,
              tag);
}
extern "C" void zbrt_recv_memref_bf16(uint16_t *, uint16_t *aligned,
                                      int64_t offset, int64_t size,
                                      int64_t stride, int32_t peer,
                                      int32_t tag) {
  recvStrided("zbrt_recv_memref_bf16", aligned + offset, size, stride, peer,
              tag);
}

extern "C" void _mlir_ciface_zbrt_sgemm_memref(ZbrtMemref2D *a, ZbrtMemref2D *b,
                                               ZbrtMemref2D *c, int32_t transA,
                                               int32_t transB) {
  zbrt_sgemm_memref(a->allocated, a->aligned, a->offset, a->sizes[0],
                    a->sizes[1], a->strides[0], a->strides[1], b->allocated,
                    b->aligned, b->offset, b->sizes[0], b->sizes[1],
                    b->strides[0], b->strides[1], c->allocated, c->aligned,
                    c->offset, c->sizes[0], c->sizes[1], c->strides[0],
                    c->strides[1], transA, transB);
}

extern "C" void _mlir_ciface_zbrt_send_memref(ZbrtMemref1D *buf, int32_t peer,
                                              int32_t tag) {
  zbrt_send_memref(buf->allocated, buf->aligned, buf->offset, buf->sizes[0],
                   buf->strides[0], peer, tag);
}

extern "C" void _mlir_ciface_zbrt_recv_memref(ZbrtMemref1D *buf, int32_t peer,
                                              int32_t tag) {
  zbrt_recv_memref(buf->allocated, buf->aligned, buf->offset, buf->sizes[0],
                   buf->strides[0], peer, tag);
}
