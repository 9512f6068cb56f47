//===- Gemm.h - zb runtime: the checked GEMMs of the ABI --------*- C++ -*-===//
//
// Not installed. For the ABI's own sources: the row-major GEMM of bfloat16
// operands that the memref forms (MemrefABI.cpp) call, as they call
// zbrt_sgemm for float32 ones (abi/Gemm.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_LIB_ABI_GEMM_H
#define ZBRT_LIB_ABI_GEMM_H

#include "../Backend.h"

namespace zbrt {

/// zbrt_sgemm's contract on bfloat16 operands (Backend.h's GemmBf16): the
/// same checks of sizes and row strides (errors are fatal and name `fn`),
/// then the active backend's gemmBf16. Nothing happens when C is empty.
void checkedGemmBf16(const char *fn, const GemmBf16 &g);

} // namespace zbrt

#endif // ZBRT_LIB_ABI_GEMM_H
