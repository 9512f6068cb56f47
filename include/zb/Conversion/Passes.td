//===- Passes.td - zb conversion passes --------------------*- tablegen -*-===//
#ifndef ZB_CONVERSION_PASSES_TD
#define ZB_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

include "mlir/Pass/PassBase.td"

def ZBDecomposeAttention : Pass<"zb-decompose-attention", "mlir::ModuleOp"> {
  let summary = "Lowers zb.attention and zb.attention_grad to primitive zb ops";
  let description = [{
    Runs before convert-zb-to-runtime, so that the products become GEMM
    calls (OpenBLAS, cuBLAS). `zb.attention` becomes `S = scale * q k^T
    (+ mask)`, the causal mask, the softmax of S as zb.softmax decomposes
    (exp(S - max) / sum), `O = P v` and `lse = max + log(sum)`;
    `zb.attention_grad` recomputes `P = exp(S - lse)` and forms the
    gradients with four more products (FlashAttention-2's backward, Dao 2023,
    Algorithm 2, unblocked: the Tq x Tk tensors live inside the op's own
    computation only). S, P and their reductions are computed in the lse's
    element type (float32 under bfloat16 autocast), the products in the
    query's. The formulas are include/zb/Dialect/ZB/IR/ZBAttention.h's.
  }];
  let dependentDialects = ["::zb::ZBDialect"];
}

def ConvertZBToRuntime : Pass<"convert-zb-to-runtime", "mlir::ModuleOp"> {
  let summary = "Lowers f32 matmuls, zb.send and zb.recv to zbrt_* runtime calls";
  let description = [{
    Runs on tensors, before bufferization. An f32 `zb.matmul` becomes a call
    of `zbrt_sgemm_memref` (OpenBLAS) on a fresh output buffer, an f32
    `zb.batch_matmul` an `scf.for` over the batch calling it per matrix;
    `zb.send` / `zb.recv` of f32, i64 and i32 tensors become calls of
    `zbrt_send_memref` / `zbrt_recv_memref` (`_i64` / `_i32`, MPI) on the
    tensor flattened to 1-D. Buffers enter the calls as memrefs with a fully
    dynamic strided layout (`bufferization.to_buffer` + `memref.cast`), see
    runtime/include/zbrt/zbrt.h; the names come from zbrt/Symbols.h. Other
    matmuls are left for convert-zb-to-linalg; send/recv of other element
    types is an error.

    The pass is a partial conversion with the patterns of
    `populateZBToRuntimePatterns` and the target of
    `configureZBToRuntimeConversionLegality`
    (include/zb/Conversion/ZBToRuntime/ZBToRuntime.h).
  }];
  let dependentDialects = ["::mlir::func::FuncDialect", "::mlir::memref::MemRefDialect",
      "::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
      "::mlir::scf::SCFDialect"];
}

def ConvertZBToLinalg : Pass<"convert-zb-to-linalg", "mlir::ModuleOp"> {
  let summary = "Lowers zb tensor compute ops to linalg on tensors";
  let description = [{
    Elementwise ops become `linalg.generic` with parallel iterators,
    broadcasts and reductions `linalg.generic` with projected maps,
    constants `arith.constant`, reshapes `tensor.collapse_shape` /
    `expand_shape` through a 1-D tensor, slices / pads / concats / splits
    `tensor.extract_slice` / `insert_slice`, matmuls `linalg.matmul` /
    `linalg.batch_matmul`, `zb.scatter_add` an `scf.for` over the indices;
    softmax, layer_norm, rms_norm and cross_entropy are first decomposed into
    simpler zb ops. `zb.send` / `zb.recv` must have been lowered by
    convert-zb-to-runtime (an error otherwise).

    The pass is a partial conversion with the patterns of
    `populateZBToLinalgPatterns` and the target of
    `configureZBToLinalgConversionLegality`
    (include/zb/Conversion/ZBToLinalg/ZBToLinalg.h, which lists what each op
    becomes); a GPU path applies the same patterns.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
      "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
      "::mlir::scf::SCFDialect"];
}

#endif // ZB_CONVERSION_PASSES_TD
