//===- Passes.td - zb code generation passes ---------------*- tablegen -*-===//
#ifndef ZB_CODEGEN_PASSES_TD
#define ZB_CODEGEN_PASSES_TD

include "mlir/Pass/PassBase.td"

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

def ZBBufferDeallocation : Pass<"zb-buffer-deallocation", "mlir::ModuleOp"> {
  let summary = "Frees the step function's buffers after their last use; "
                "ownership-based deallocation for the other functions";
  let description = [{
    Runs after one-shot bufferization, in place of upstream's
    `ownership-based-buffer-deallocation` (which it runs, with its
    canonicalisations and `buffer-deallocation-simplification`, on every
    function except a rank's step function). Upstream places the
    deallocation of a buffer at the end of the block that defines it: in a
    step function, one straight-line block of F/B/W calls, every
    microbatch's saved activations would then live until the end of the
    step (peak memory grows with the microbatch count, against the
    schedule's M_B/M_W accounting and `--memory-limit`), and the one
    `bufferization.dealloc` of all of them lowers to an alias check that is
    quadratic in their number, at compile time and at run time.

    A step function (attribute `zb.rank`) of a single block instead gets one
    `memref.dealloc` per buffer it owns, right after the last operation that
    uses the buffer or a view of it. It owns the results of `func.call`
    (the function boundary ABI of ownership-based deallocation: a returned
    buffer belongs to the caller and does not alias an argument) and of
    `memref.alloc`; a memref result of any other operation is treated as a
    view of all its memref operands (conservative: it extends their
    lifetime). A call is assumed not to keep a buffer after it returns
    (`zbrt_send_memref` copies the message). Buffers that reach the
    terminator are not freed. A step
    function with more than one block, or with an operation whose regions
    yield memrefs, falls back to ownership-based deallocation.
    Follow with `bufferization-lower-deallocations`.
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def ZBOutlineStepLoops : Pass<"zb-outline-step-loops", "mlir::ModuleOp"> {
  let summary = "Moves the loop nests of a step function into private "
                "functions, one per distinct nest";
  let description = [{
    Runs on memrefs, after bufferization and deallocation. A step function
    (attribute `zb.rank`) is one straight-line block whose length grows with
    the microbatch count: its own loop nests (the in-order sums of the
    microbatches' weight gradients, copies of input slices) made the later
    lowering quadratic in that length (scf-to-cf splits the block once per
    loop) and gave LLVM one huge function of loops. Every top-level
    operation of a step function that has regions and no results (a linalg
    operation on memrefs) becomes a call of a private function
    `<step>_loops_<N>` that takes its operands and the values its regions
    use from outside, and contains the operation itself; identical
    operations (same printed body and operand types) share one function.
    The arithmetic is unchanged (the same operation runs on the same
    buffers), so results are bit-identical.
  }];
}

def ZBExpandBFloat16 : Pass<"zb-expand-bf16", "mlir::ModuleOp"> {
  let summary = "bf16 <-> f32 conversions as integer operations";
  let description = [{
    The last step of bfloat16 as a storage type (`--precision bf16`): after
    upstream's `arith-emulate-unsupported-floats` and
    `math-extend-to-supported-types` have made every arithmetic and math op
    on bf16 compute in f32 between an `arith.extf` and an `arith.truncf`,
    this pass rewrites those conversions as integer operations (upstream's
    bf16 expansion patterns: extf is a 16-bit shift; truncf rounds to
    nearest even and keeps NaN a NaN), which every target lowers, the CPU
    included (x86 without AVX512-BF16 would otherwise call `__truncsfbf2`,
    which libgcc 12 lacks). Nothing else changes: a float32 program is left
    as it is.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def ZBMemRefCopyToLinalg : Pass<"zb-memref-copy-to-linalg", "mlir::ModuleOp"> {
  let summary = "Rewrites memref.copy as linalg.copy (loops, not a runtime call)";
  let description = [{
    Runs after bufferization. Every `memref.copy` becomes a `linalg.copy`
    with the same source and target, which convert-linalg-to-loops lowers to
    loops (and a GPU path maps to a kernel). Without this pass
    finalize-memref-to-llvm lowers a copy of non-contiguous memrefs to a call
    of `memrefCopy` from MLIR's C runner utilities, which would make every
    rank program load libmlir_c_runner_utils (and with it libMLIR and
    libLLVM) at run time; a rank program then needs only libzbrt. The copy
    is exact, so results are unchanged.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def ZBFuseElementwise : Pass<"zb-fuse-elementwise", "mlir::ModuleOp"> {
  let summary = "Producer-consumer fusion of elementwise linalg.generic ops, bounded";
  let description = [{
    Fuses an elementwise `linalg.generic` into its consumer when it is the
    producer's only use (nothing is recomputed; every value is computed by
    the same scalar operations in the same order, so results stay
    bit-identical), or when the producer is a widening float cast (one
    `arith.extf`, exact: recomputed in each consumer, which then reads the
    narrow tensor; autocast's float32 copies of bfloat16 values feeding
    several reductions are not written at all),
    as upstream's linalg-fuse-elementwise-ops does, but only
    while the fused body stays at most `max-fused-ops` operations. Upstream
    fusion re-creates the whole fused body at every step, which is quadratic
    in the length of a chain (a 2,000-op chain took 1.6 s, a 20,000-op chain
    minutes); bounded, it is linear and a long chain becomes a few loop nests
    of `max-fused-ops` operations each.
  }];
  let options = [
    Option<"maxFusedOps", "max-fused-ops", "int64_t", /*default=*/"128",
           "Largest fused body, in operations (>= 2)">
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def ZBConstantGlobals : Pass<"zb-constant-globals", "mlir::ModuleOp"> {
  let summary = "Makes the memref.global of every tensor constant, in program order";
  let description = [{
    Before one-shot-bufferize: creates the `memref.global` of every
    `arith.constant` of tensor type (bufferization::getGlobalFor, 64-byte
    aligned as one-shot-bufferize asks), walking the module in program
    order. One-shot-bufferize then finds each global already made and
    reuses it. Without this pass the globals are made in the order
    one-shot-bufferize visits functions, which depends on pointer values:
    the same model compiled twice gave rank programs whose constants were
    ordered (and, for two constants of one type, named) differently. With
    it a compile is reproducible byte for byte.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

#endif // ZB_CODEGEN_PASSES_TD
