//===- ZBToRuntime.h - zb ops to calls of the zb runtime --------*- C++ -*-===//
//
// The patterns of convert-zb-to-runtime: zb ops that become calls of zbrt_*
// functions (runtime/include/zbrt/zbrt.h; the names come from
// runtime/include/zbrt/Symbols.h). They run on tensors, before
// bufferization, and need no type converter. Buffers enter the calls as
// memrefs with a fully dynamic strided layout
// (memref<?x?xf32, strided<[?, ?], offset: ?>>, rank 1 for send/recv), so any
// buffer the bufferizer picks is passed without a copy and the calls are real
// uses for buffer deallocation. Each pattern declares the function it calls
// (a private func.func at the start of the enclosing module) the first time
// it is needed.
//
//  - zb.matmul (f32): zbrt_sgemm_memref(A, B, C, transA, transB) on
//    bufferization.to_buffer of the operands and a fresh memref.alloc for C,
//    transposes as i32 flags; the result is bufferization.to_tensor of C.
//  - zb.batch_matmul (f32): the batch dims collapsed to one, then an scf.for
//    over the batch calling zbrt_sgemm_memref on rank-reduced 2-D subviews.
//  - zb.send: the tensor flattened to 1-D (rank 0 becomes 1 element), then
//    zbrt_send_memref[_i64|_i32](buffer, peer, tag) by element type.
//  - zb.recv: a fresh 1-D memref.alloc filled by zbrt_recv_memref[_i64|_i32],
//    reshaped to the result type.
// Other element types: matmuls are left alone (convert-zb-to-linalg lowers
// them); send/recv of anything but f32, i64 and i32 is an error.
//
// A GPU path reuses the communication patterns (its buffers are device
// memory, so it needs runtime functions that accept them) and lowers matmuls
// elsewhere: hence the two sets.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_CONVERSION_ZBTORUNTIME_ZBTORUNTIME_H
#define ZB_CONVERSION_ZBTORUNTIME_ZBTORUNTIME_H

#include "mlir/IR/PatternMatch.h"

namespace mlir {
class ConversionTarget;
} // namespace mlir

namespace zb {

/// zb.send / zb.recv -> zbrt_{send,recv}_memref[_i64|_i32] calls. A send or
/// receive of another element type fails with an error on the op.
void populateZBToRuntimeCommunicationPatterns(mlir::RewritePatternSet &patterns,
                                              mlir::PatternBenefit benefit = 1);

/// f32 zb.matmul / zb.batch_matmul -> zbrt_sgemm_memref calls (OpenBLAS);
/// other element types do not match.
void populateZBToRuntimeGemmPatterns(mlir::RewritePatternSet &patterns,
                                     mlir::PatternBenefit benefit = 1);

/// Both sets above (what convert-zb-to-runtime applies).
void populateZBToRuntimePatterns(mlir::RewritePatternSet &patterns,
                                 mlir::PatternBenefit benefit = 1);

/// Marks zb.send / zb.recv and f32 zb.matmul / zb.batch_matmul illegal;
/// func, memref, bufferization, arith, scf and tensor legal. Other zb ops are
/// left alone.
void configureZBToRuntimeConversionLegality(mlir::ConversionTarget &target);

} // namespace zb

#endif // ZB_CONVERSION_ZBTORUNTIME_ZBTORUNTIME_H
