//===- Passes.td - zb conversion passes --------------------*- tablegen -*-===//
#ifndef ZB_CONVERSION_PASSES_TD
#define ZB_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

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
    bit-identical), as upstream's linalg-fuse-elementwise-ops does, but only
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

def ZBGpuMapReductions : Pass<"zb-gpu-map-reductions"> {
  let summary = "Block-parallel reductions (gpu.launch + gpu.all_reduce) for linalg reductions on buffers";
  let description = [{
    For the CUDA target, after bufferization and before the remaining
    linalg ops become parallel loops. A `linalg.generic` on buffers whose
    innermost loop is a reduction (row reductions: softmax, layer_norm,
    rms_norm, cross-entropy and their gradients; full reductions), whose
    outputs are indexed by parallel loops only and each combined by one
    `arith.addf`, `mulf`, `maximumf`, `maxnumf`, `minimumf`, `minnumf`,
    `addi`, `muli`, `maxsi` or `minsi` with the output's value used nowhere
    else in the body, becomes a `gpu.launch` with one block per output
    element (the parallel loops flattened, row-major) and
    clamp(next power of two of the reduced size, 32, max-threads) threads.
    Thread t keeps a partial result starting from the combiner's identity
    (-0.0 for addf, -inf for max, ...) over the flattened reduction indices
    r = t, t + threads, ... (innermost fastest: consecutive threads read
    consecutive elements), the block combines the partials with one uniform
    `gpu.all_reduce`, and thread 0 combines the total with the output's
    value. The result equals the linalg op's up to the order of the
    combinations (exact for max/min and integers; floating-point sums and
    products are reassociated).

    A reduction whose innermost loop is parallel (a column sum: bias
    gradients, layer_norm's gamma and beta gradients, a softmax over a
    leading axis), with the same combiners, becomes a gpu.launch of
    ceil(outputs / X) blocks of X x Y threads: X = the output count's next
    power of two up to 32 consecutive output elements (the parallel loops
    flattened row-major: consecutive threads read consecutive elements),
    Y = the reduced count's next power of two up to max-threads / X threads
    that stride over the flattened reduction indices, each keeping a
    partial from the identity; the Y partials of a column are combined in
    workgroup memory (memref<Y x X>, a tree of log2(Y) levels separated by
    gpu.barrier) and thread (x, 0) combines the total with the output's
    value. Reassociated like the block reductions.

    Every other reduction on buffers with static shapes whose outputs are
    indexed by parallel loops (an unrecognised combiner, a reduction over
    one element, all of them with max-threads=0) becomes a gpu.launch with
    one thread per output
    element (the parallel loops flattened row-major, block-size threads per
    block: consecutive threads, consecutive elements) that runs the
    reduction loops in the linalg op's order from the output's value: the
    CPU backend's arithmetic exactly. (convert-linalg-to-parallel-loops
    would leave a reduction loop that is outside a parallel one on the
    host, launching a kernel per iteration.) Elementwise ops are left
    alone.

    A `linalg.fill` that initialises an output (a `memref.alloc` of the
    same block whose only users before the reduction are that fill and the
    reduction, as this output, indexed by a permutation of the parallel
    loops) is folded into every one of these kernels: they start from the
    fill's value instead of loading the output, and the fill is erased (one
    kernel launch fewer per reduction; the same arithmetic).
  }];
  let options = [
    Option<"maxThreads", "max-threads", "int64_t", /*default=*/"256",
           "Most threads of a block reduction (a power of two, 32 .. 1024; "
           "0: every reduction thread-per-output)">,
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "Threads per block of a thread-per-output reduction">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect"];
}

def ZBGpuEmulate : Pass<"zb-gpu-emulate", "mlir::ModuleOp"> {
  let summary = "Runs the module's GPU kernels on the CPU with GPU semantics (a checking aid)";
  let description = [{
    Runs after gpu-kernel-outlining and before gpu-async-region and NVVM:
    every `gpu.func` kernel becomes a private host function
    `__zb_emu_<module>_<kernel>(gridX, gridY, gridZ, blockX, blockY, blockZ,
    args...)` that loops over the blocks and, per block, over the threads
    once per phase; phases are cut at every top-level `gpu.barrier` and
    `gpu.all_reduce`, so every thread finishes a phase before any starts the
    next, as on the GPU. Scalars live across a cut in per-thread arrays;
    workgroup attributions are allocated per block. `gpu.all_reduce`
    combines the threads' values in the order of upstream's lowering
    (populateGpuAllReducePatterns, applied by convert-gpu-to-nvvm): an XOR
    butterfly over each 32-lane subgroup (accumulate(own, partner), a
    partner outside the active width skipped) and the same over the
    subgroups' results; so a reduction's emulated result is the GPU's bit
    for bit when the arithmetic is the same. Every `gpu.launch_func` becomes
    a `func.call`; the gpu.modules are erased. Errors: a kernel with more
    than one block, a barrier or all-reduce inside control flow, shuffles
    and subgroup reductions, private attributions, a non-scalar value live
    across a cut, an asynchronous launch.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def ZBGpuFlattenParallelLoops : Pass<"zb-gpu-flatten-parallel-loops"> {
  let summary = "Collapses every outermost multi-dimensional scf.parallel into one dimension";
  let description = [{
    For the CUDA target, between convert-linalg-to-parallel-loops and
    scf-parallel-loop-tiling: an outermost `scf.parallel` over (d0, ...,
    dn) becomes one loop over the row-major linear index (dn fastest;
    upstream's collapseParallelLoops). Tiled by the block size and mapped
    (tiles to blocks, a tile's iterations to threads), consecutive threads
    then touch consecutive elements of the innermost dimension (coalesced
    loads and stores), and every kernel has the same block size whatever the
    rank of its loop (without it a 3-D loop tiled 32 x 32 keeps its third
    dimension whole inside a block).
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def ZBGpuSinkSerialLoops : Pass<"zb-gpu-sink-serial-loops"> {
  let summary = "Interchanges a serial scf.for with the one scf.parallel it contains when that is legal";
  let description = [{
    For the CUDA target, after convert-linalg-to-parallel-loops and before
    zb-gpu-flatten-parallel-loops. A top-level `scf.for` whose body is index
    arithmetic, views, reads and exactly one `scf.parallel` (the scatter-add
    of an embedding gradient: for each token n, `acc[ids[n], :] +=
    upd[n, :]`) would stay in host code, reading the token ids from device
    memory and launching one kernel per token. It becomes the parallel loop
    (one kernel) with the serial loop inside every thread, in the same order,
    when: the parallel loop's bounds do not depend on the serial loop; it
    writes only allocations of the function; every access to a written
    allocation indexes a unit-stride subview of it with exactly the parallel
    induction variables, and the subview's offsets vary with the serial loop
    only in dimensions where the parallel loop has one iteration; and the
    serial loop's own reads are not of a written allocation. Then distinct
    threads touch distinct elements in every serial iteration and each
    element receives its updates in the original order: the results are
    bit-identical.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect"];
}

def ZBGpuWrapScalarOps : Pass<"zb-gpu-wrap-scalar-ops"> {
  let summary = "Puts every loop-free linalg op on buffers inside a one-iteration scf.parallel";
  let description = [{
    For the CUDA target, before convert-linalg-to-parallel-loops: a linalg
    op without loops (all operands rank 0: the loss summed over the
    microbatches, its mean, a fill or copy of a scalar) would lower to plain
    loads and stores left in host code, which then reads and writes device
    memory and makes the host wait for the GPU. Inside a one-iteration
    `scf.parallel` it becomes a one-thread kernel like every other loop, and
    the host code of a rank program touches no element data.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def ZBGpuMergeKernelModules : Pass<"zb-gpu-merge-kernel-modules", "mlir::ModuleOp"> {
  let summary = "All outlined kernels of a module into one gpu.module";
  let description = [{
    gpu-kernel-outlining makes one gpu.module per kernel; compiled one by
    one, every module costs a ptxas (and, for several architectures, a
    fatbinary) process: a GPT rank with 160 kernels spent 94 % of its
    compile time (10 s) there, and the runtime would load 160 modules. This
    pass moves the gpu.func of every gpu.module that holds only kernels into
    one gpu.module, `module-name` (made unique), at the place of the first;
    each kernel is renamed to its old module's name (unique among the
    module's symbols: the outliner names modules after their kernels,
    numbered) and every gpu.launch_func is redirected to @module-name::@name.
    Modules holding anything other than gpu.func kernels are left alone.
    Runs after gpu-kernel-outlining (and any pass that reads kernel module
    names, e.g. zb-compile's GPU report) and before nvvm-attach-target.
  }];
  let options = [
    Option<"moduleName", "module-name", "std::string", /*default=*/"\"zb_kernels\"",
           "Name of the merged gpu.module">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def ZBGpuFatbin : Pass<"zb-gpu-fatbin", "mlir::ModuleOp"> {
  let summary = "One fatbin per gpu.module with a cubin per attached NVVM target plus PTX";
  let description = [{
    Instead of gpu-module-to-binary when kernels are compiled for several
    architectures (zb-compile --gpu-arch sm_80,sm_90: one nvvm-attach-target
    per architecture): every target attached to a gpu.module is compiled to
    a cubin (the NVVM target's serializer, which links libdevice from
    `toolkit`; its PTX kept), and the toolkit's `fatbinary` packs the cubins
    and the PTX of the first target (the driver JIT-compiles it on a newer
    GPU) into one fatbin: the gpu.module becomes a gpu.binary with that one
    object (format fatbin), which the host code embeds. Errors: no target,
    a non-NVVM target, a failed compilation, fatbinary missing or failing.
  }];
  let options = [
    Option<"toolkit", "toolkit", "std::string", /*default=*/"\"\"",
           "CUDA toolkit root (bin/fatbinary, bin/ptxas, nvvm/libdevice)">
  ];
}

#endif // ZB_CONVERSION_PASSES_TD
