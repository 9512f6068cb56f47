//===- Passes.td - zb conversion passes --------------------*- tablegen -*-===//
#ifndef ZB_CONVERSION_PASSES_TD
#define ZB_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertZBToRuntime : Pass<"convert-zb-to-runtime", "mlir::ModuleOp"> {
  let summary = "Lowers zb.matmul, zb.send and zb.recv to zbrt_* runtime calls";
  let description = [{
    Runs on tensors, before bufferization. `zb.matmul` becomes a call of
    `zbrt_sgemm` (OpenBLAS) on a fresh output buffer, `zb.send` / `zb.recv`
    calls of `zbrt_send` / `zbrt_recv` (MPI). Buffers cross the call
    boundary as the raw address of an identity-layout memref
    (`memref.extract_aligned_pointer_as_index`), see runtime/include/zbrt/zbrt.h.
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
    constants `arith.constant`, reshapes `tensor.reshape`-free
    `tensor.collapse_shape`/`expand_shape` through a flat buffer.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
      "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
      "::mlir::scf::SCFDialect"];
}

def ZBEmitRankEntry : Pass<"zb-emit-rank-entry", "mlir::ModuleOp"> {
  let summary = "Emits `void zb_rank_main(void **argv)` calling the rank's step function";
  let description = [{
    Runs on the LLVM dialect. Finds `_mlir_ciface_<step>` (the C interface of
    the step function) and emits `zb_rank_main`, which loads argv[i] (a
    pointer to the memref descriptor of argument i) and calls it. This is the
    entry point zb-run calls through dlsym.
  }];
  let options = [
    Option<"stepFunction", "step-function", "std::string", /*default=*/"\"\"",
           "Name of the step function (default: the only one with zb.rank)">
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // ZB_CONVERSION_PASSES_TD
