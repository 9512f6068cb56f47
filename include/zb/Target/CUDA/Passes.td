//===- Passes.td - zb CUDA target passes -------------------*- tablegen -*-===//
#ifndef ZB_TARGET_CUDA_PASSES_TD
#define ZB_TARGET_CUDA_PASSES_TD

include "mlir/Pass/PassBase.td"

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
    value. Reassociated like the block reductions. When those blocks are
    few (a 512-wide bias gradient: 16) and the reduction long, the
    reduction is split over S blocks per tile (columnSplits: the power of
    two that brings the blocks to 264, two per SM of an H100/H200, while
    every thread keeps 4 indices at least): block (b, s) reduces indices
    [s * chunk, (s + 1) * chunk) and stores its column totals into a
    memref<S x outputs> (memref.alloc), and a second gpu.launch, one thread
    per output, combines the S partials in order and then the output's
    value (memref.dealloc after it).

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

def ZBGpuAttentionCalls : Pass<"zb-gpu-attention-calls", "mlir::ModuleOp"> {
  let summary = "Marks each zb.attention and zb.attention_grad the fused tensor-core kernels can run as a call on buffers";
  let description = [{
    For the CUDA targets, before zb-decompose-attention: a `zb.attention`
    whose query, key, value and result are bfloat16 and whose lse is
    float32, with head dimensions (query/key and value) multiples of 16 up
    to 128, causal or not, without a mask or with a static float32,
    bfloat16 or float16 one, becomes a call on buffers, as
    convert-zb-to-runtime makes a GEMM one:

        func.call @__zb_gpu_attention_forward_N(%q, %k, %v, %o, %lse)
            {zb.scale = S : f64, zb.causal}
            : (memref<BHxTqxDxbf16>, memref<BHxTkxDxbf16>,
               memref<BHxTkxDvxbf16>, memref<BHxTqxDvxbf16>,
               memref<BHxTqxf32>) -> ()

    the batch dimensions collapsed into one (`BH`), the operands'
    buffers (`bufferization.to_buffer`, identity layout) and fresh result
    buffers read back as the op's results. A `zb.attention_grad` with the
    same types (its result and result_grad bfloat16, a float32 lse_grad if
    any) likewise becomes

        func.call @__zb_gpu_attention_backward_N(%q, %k, %v, %o, %lse, %dO,
            [%lse_grad,] %dq, %dk, %dv, %di) {zb.scale, zb.causal, zb.lse_grad}

    with `%di` a float32 scratch buffer [BH, Tq]. A mask is passed last,
    its buffer as it is (all of its dimensions, each that of the scores or
    1: a padding mask [B, 1, Tq, Tk] is read by every head), with
    `zb.mask` and `zb.batch_dims`, the scores' leading dimensions that BH
    collapses (the kernels find the mask's element from them).
    zb-gpu-attention-kernels replaces each call by its kernels after
    bufferization. Any other zb.attention or zb.attention_grad (float32, a
    float64 or dynamic mask, another head size) is left to
    zb-decompose-attention.

    With `token-major` (default), a q, k, v or dO that is a head view of a
    token-major tensor X [..., W] (zb/Transforms/HeadViews.h: zb.transpose
    [0, 2, 1, 3] of a zb.reshape of X, or of X's zb.slice or zb.split on its
    last axis; W and the heads' first column multiples of 8) is passed as
    X's buffer [B T, W] itself, and a result or gradient whose only use is
    the transpose and reshape back to [..., H D] is written into a [B T,
    H D] buffer that replaces that reshape, or into one [B T, W] buffer for
    a zb.concat on the last axis of several (sums of zb.pads of adjacent
    pieces, the gradient of slices, are made concats first). The call then
    has `zb.layout` (per tensor q, k, v, o[, dO, dq, dk, dv]: -1 for a
    [B H, T, D] buffer, else the heads' first column) and `zb.shape` [B, H,
    Tq, Tk, D, Dv]. No copy is made for those views (FlashAttention's
    kernels read [B, T, H, D] likewise).
  }];
  let options = [
    Option<"tokenMajor", "token-major", "bool", /*default=*/"true",
           "Read and write the token-major tensors that the heads are "
           "views of in place">
  ];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::tensor::TensorDialect"];
}

def ZBGpuAttentionKernels : Pass<"zb-gpu-attention-kernels", "mlir::ModuleOp"> {
  let summary = "The FlashAttention-2 forward and backward kernels on tensor cores for zb-gpu-attention-calls' calls";
  let description = [{
    After gpu-kernel-outlining: every call of a
    `__zb_gpu_attention_forward_N` declaration (zb-gpu-attention-calls)
    becomes a `gpu.launch_func` of a kernel of its own `gpu.module`, the
    forward pass of FlashAttention-2 (Dao 2023, Algorithm 1) for those
    shapes:

    - grid (ceil(Tq / 64), BH), 128 threads: each warp computes 16 query
      rows of one (batch, head) against every key block of 64 keys (up to
      the diagonal block when causal);
    - S = Q K^T and O += P V are `nvvm.mma.sync` m16n8k16 instructions
      (bfloat16 operands, float32 accumulation: HMMA on sm_80 and later),
      with the S fragments reused in registers as P's;
    - S is rounded to bfloat16 (as the unfused path's GEMM writes it, so
      that the decomposed backward's recomputed probabilities match the
      saved lse), scaled and masked (`-inf` for a key past Tk and, when
      causal, after the query) in float32;
    - online softmax per row: the running maximum over the quad of lanes
      that holds a row (`gpu.shuffle xor` 1 and 2), the accumulated O
      rescaled by exp(m_old - m_new); a row whose every key so far is
      hidden uses 0 as its maximum;
    - at the end O is divided by the row's sum of the bfloat16-rounded
      weights that P V used (so O's weights sum to one; 0 for a row of
      hidden keys) and rounded to bfloat16, and lse = m + log(sum) (-inf
      for such a row).

    Each `__zb_gpu_attention_backward_N` call (a `zb.attention_grad`)
    becomes two kernels, FlashAttention-2's backward (Dao 2023,
    Algorithm 2) split by output so that no atomics are needed, computing
    exactly what zb-decompose-attention's backward computes (S and dP
    rounded to bfloat16 as its GEMMs write them, P = exp(S - lse),
    dS = P (dP - Di), scale dS rounded to bfloat16): (1) per 16 query rows,
    Di = rowsum(dO * O) (- lse_grad), written to the call's scratch
    buffer, and dQ over the key blocks; (2) per 16 key rows, dK and dV over
    the query blocks (from the diagonal when causal), S^T = K Q^T and
    dP^T = V dO^T with K's and V's rows as the A operands, reading kernel
    (1)'s Di. Rows past the end compute as the last row, as above.

    Each iteration stages the block of 64 rows that all four warps read
    (K and V in F and dQ, Q and dO in dK/dV) in workgroup memory, 16-byte
    loads and stores (`alignment`) between two `gpu.barrier`s, rows padded
    by 8 elements so that a B fragment's 32 lanes read 32 banks; each
    warp's own 16 rows (its A operands) stay in registers for the whole
    kernel. A mask is read per score from global memory and added after
    the scale, as zb-decompose-attention adds it. Rows past Tq compute as
    row Tq - 1 and store its values again, so that no lane branches. The kernel carries `zb.kernel_kind =
    "attention"` and its FLOPs (`zb.flops`: 4 Tq Tk D per (batch, head),
    about half when causal) for the kernel report. The declarations are
    erased.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"16",
           "Byte alignment claimed for the 16-byte staging accesses (0: "
           "the element's, for the CPU emulation)">
  ];
}

def ZBGpuNormCalls : Pass<"zb-gpu-norm-calls", "mlir::ModuleOp"> {
  let summary = "Marks each float32 zb.layer_norm and zb.rms_norm as a call of the one-kernel norm on buffers";
  let description = [{
    For the CUDA targets, before convert-zb-to-linalg: a `zb.layer_norm` or
    `zb.rms_norm` whose input, weight, bias and result are float32 of
    static shape (autocast keeps norms in float32) becomes

        func.call @__zb_gpu_norm_N(%x, %weight, [%bias,] %y)
            {zb.norm = "layer" | "rms", zb.epsilon = E : f64}
            : (memref<RxDxf32>, memref<Dxf32>, [memref<Dxf32>,]
               memref<RxDxT>) -> ()

    with the leading dimensions collapsed into R. When the norm's one user
    is a `zb.cast` to a narrower float (the bfloat16 copy that autocast
    makes for the next GEMM), `%y` has that type and replaces the cast.
    zb-gpu-norm-kernels replaces the call by its kernel. Other norms are
    decomposed by convert-zb-to-linalg as before.
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::tensor::TensorDialect"];
}

def ZBGpuNormKernels : Pass<"zb-gpu-norm-kernels", "mlir::ModuleOp"> {
  let summary = "The one-kernel layer norm and RMS norm for zb-gpu-norm-calls' calls";
  let description = [{
    After gpu-kernel-outlining: every call of a `__zb_gpu_norm_N`
    declaration becomes the launch of a kernel of its own `gpu.module`:
    grid ceil(R / 4), 128 threads, one warp per row. Lane l reads columns
    l, l + 32, ... (coalesced); the row's sum (layer norm), then its
    centred sum of squares (or sum of squares for RMS norm), are reduced
    over the warp with `gpu.shuffle xor` 16, 8, 4, 2, 1; rstd =
    1 / sqrt(sum / D + epsilon); the normalised row, times the weight (plus
    the bias), is written once in `%y`'s type. The decomposition computes
    the same float32 formulas in five kernels (reductions in another
    order: results differ by float32 rounding). A row past R computes as
    row R - 1 and a column past D as column D - 1, written again with
    their own values, so that no lane branches. The kernel carries
    `zb.kernel_kind = "row-norm"` for the kernel report. The declarations
    are erased.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
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
    a `func.call`; the gpu.modules are erased.

    A kernel with warp collectives (`gpu.shuffle`, `nvvm.mma.sync`: the
    fused attention kernel) runs in lock-step instead: every operation runs
    for every thread of the block before the next one starts, each value a
    per-thread array, values that depend on no thread computed once. Its
    loops must have the same bounds in every thread (as a warp's
    collectives need on the GPU); a shuffle (xor) reads its partner lane's
    value (valid when the partner is below the width), and an mma.sync
    m16n8k16 with bfloat16 operands and a float32 accumulator computes each
    lane's D fragment from its warp's A, B and C fragments (the PTX ISA's
    fragment layouts; float32 sums in k order, where the tensor core's
    order is unspecified). Lock-step implies a barrier after every
    operation, so it cannot show a missing gpu.barrier.

    Errors: a kernel with more than one block, a barrier or all-reduce
    inside control flow, subgroup reductions, private attributions, a
    non-scalar value live across a cut, an asynchronous launch; in a
    lock-step kernel, a loop whose bounds differ between threads, other
    control flow (scf.if), a shuffle other than xor, another mma.sync.
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

def ZBGpuSinkConstants : Pass<"zb-gpu-sink-constants"> {
  let summary = "Moves the constant tensors a gpu.launch reads into the kernel (device memory)";
  let description = [{
    For the CUDA target, before gpu-kernel-outlining. A constant tensor of
    the model (position ids, a causal mask, a RoPE table, folded at import)
    is a `memref.global constant` of the rank program; host code that passes
    its `memref.get_global` to a kernel would hand the GPU a pointer into the
    host's copy of the rank library, which a kernel cannot read. This pass
    moves every `memref.get_global` of a constant global that a `gpu.launch`
    body uses, with the views on it (`memref.subview`, `memref.cast`,
    `memref.collapse_shape`, `memref.expand_shape`, `memref.reinterpret_cast`)
    and their constant operands, into the launch body. gpu-kernel-outlining
    then copies the global into the kernel's `gpu.module`: it becomes a
    device global of the fatbin, in device memory from the moment the
    runtime loads the module (once per rank program, not per step), and the
    kernel reads it there. Non-constant globals and views of other buffers
    are left alone (zb-gpu-check-device-memory refuses what still reaches a
    kernel from host memory). A vector `arith.constant` the body uses (a
    vectorised fill) is cloned into it as well, instead of becoming a kernel
    argument: an emulated kernel (`--target cuda-emu`) with a bfloat16
    vector argument would convert it through float32 on x86, a call of
    `__truncsfbf2`, which libgcc lacks.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

def ZBGpuCheckDeviceMemory : Pass<"zb-gpu-check-device-memory", "mlir::ModuleOp"> {
  let summary = "Refuses a kernel or runtime operand that is host memory";
  let description = [{
    For the CUDA target, after gpu-kernel-outlining: every buffer a kernel
    (`gpu.launch_func`) or a runtime call of the rank program (`zbrt_*`:
    GEMMs through cuBLAS, messages through NCCL) reads or writes must be
    device memory: a step argument (parameters, gradients, inputs: zb-run
    allocates them on the device) or a `memref.alloc` (the runtime's
    allocator gives device memory under the CUDA backend). A buffer that
    comes from a `memref.get_global` or a `memref.alloca` in host code,
    directly, through views or through calls of the module's own functions,
    is host memory: the GPU would fault on it (an illegal address) or read
    garbage. The pass reports each such use as an error at the launch or
    call, naming the kernel or runtime function, the operand and the
    host-memory source, and fails.
  }];
}

def ZBGpuCheckHostLoops : Pass<"zb-gpu-check-host-loops", "mlir::ModuleOp"> {
  let summary = "Refuses host code that computes on device memory";
  let description = [{
    For the CUDA target, after convert-parallel-loops-to-gpu and
    gpu-kernel-outlining: the rank program's host code only allocates,
    launches kernels and calls the runtime, so the host never waits for the
    GPU to see data (zb-gpu-wrap-scalar-ops and zb-gpu-sink-serial-loops put
    every element access into a kernel). The pass fails with an error at
    the operation
    - on an `scf.parallel` left outside a `gpu.module` ("a parallel loop was
      not mapped to a GPU kernel"): it would run on the host, on device
      buffers;
    - on a `memref.load` or `memref.store` of a float or integer element
      outside a `gpu.module` ("host code reads/writes device memory outside a
      GPU kernel"). Index and i1 buffers are exempt: they are the host lists
      of the ownership-based deallocation.
    The IR is unchanged.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def ZBGpuReportKernels : Pass<"zb-gpu-report-kernels", "mlir::ModuleOp"> {
  let summary = "The kernel report: every kernel launch and runtime GEMM with its roofline cost";
  let description = [{
    For the CUDA target, right after gpu-kernel-outlining (where the
    launches' grids and the kernels' bodies are still visible): collects
    every `gpu.launch_func` and runtime GEMM of the module with its grid,
    block, bytes read and written and FLOPs (zb::collectGpuKernelLaunches,
    zb/Target/CUDA/KernelReport.h) and hands them to the caller: zb-compile
    builds the pass with a callback (zb::createZBGpuReportKernels(callback),
    for --gpu-report and --gpu-costs). Built from its name (zb-opt), the pass
    prints the report's table on stdout (zb::gpuReportText: per kernel the
    H100 roofline time plus `launch-us` microseconds, then the F/B/W sums
    per stage). `every-stage-function`: count every function with a
    `zb.stage` once (a module of stage functions before zb-lower-pipeline,
    as --gpu-costs lowers it), not the calls of a step function. The IR is
    unchanged.
  }];
  let options = [
    Option<"everyStageFunction", "every-stage-function", "bool",
           /*default=*/"false",
           "Count every stage function once (before zb-lower-pipeline)">,
    Option<"launchUs", "launch-us", "double", /*default=*/"3.0",
           "Microseconds added to every kernel launch and GEMM">,
  ];
}

def ZBGpuNarrowIndex : Pass<"zb-gpu-narrow-index", "mlir::ModuleOp"> {
  let summary = "Kernel index arithmetic on constants and in 32 bits where it fits";
  let description = [{
    For the CUDA target, after gpu-kernel-outlining (and after the kernel
    report, which it leaves unchanged). Outlining passes every value a
    launch body uses as a kernel argument, the loop bounds and the sizes
    that delinearise a flattened index included, so ptxas sees a division
    and remainder by a run-time 64-bit value per element: a call of its
    64-bit division routine. This pass:

    1. replaces every integer, index or float argument of a `gpu.func`
       kernel that all of its `gpu.launch_func`s pass the same constant for
       by that constant inside the kernel (the argument stays, unused: the
       launch sites are unchanged);
    2. runs upstream's int-range-optimizations (folds what the ranges of
       `gpu.thread_id`/`gpu.block_id`, bounded by the kernel's
       `known_block_size` and `known_grid_size`, decide: the bounds check of
       a launch that covers its loop exactly) and
       arith-int-range-narrowing{int-bitwidths-supported=32} (index
       arithmetic whose operands and results provably fit in 32 bits as i32
       ops between `arith.index_castui`s), then canonicalize, on every
       `gpu.module`.

    The delinearisation of a flattened index then divides a 32-bit value by
    a constant (a multiply-high and a shift, or a shift for a power of
    two). Arithmetic whose range does not fit (a tensor of 2^31 elements or
    more) stays in 64 bits. The results are the same integers.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect"];
}

def ZBGpuVectorizeElementwise : Pass<"zb-gpu-vectorize-elementwise"> {
  let summary = "Four consecutive elements per thread of an elementwise loop, with vector<4> loads and stores";
  let description = [{
    For the CUDA target, before zb-gpu-flatten-parallel-loops: an outermost
    `scf.parallel` without results, with zero lower bounds, unit steps and
    constant upper bounds whose innermost is a multiple of 4, whose body
    holds only loads, stores and pure ops without regions (every load
    before every store) iterates over a quarter of the innermost range:
    iteration k handles elements 4k .. 4k + 3. A load or store whose last
    index is the innermost induction variable (and no other index depends
    on it) of a 32-bit element type, with a static offset and leading
    strides that are multiples of 4 and a unit last stride, becomes one
    `vector.load`/`vector.store` of vector<4> at 4k with the alignment
    option (16: ld/st.global.v4, float4, on the GPU, whose buffers are
    16-byte aligned; 0 for the CPU emulation, which makes no such claim);
    everything else is repeated per lane with the induction variable
    4k + lane. Consecutive threads then access consecutive 16-byte vectors
    (coalesced) and each element is computed by the same scalar operations
    in the same order as before: results are bit-identical. 16-bit elements
    (bf16 under --precision bf16) are vectorised too: a loop whose every
    such access is 16-bit takes 8 lanes (vector<8>, 16 bytes, leading strides
    and offset multiples of 8), a loop mixing them with 32-bit ones 4 (the
    16-bit vectors then claim 8-byte alignment).
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"16",
           "Byte alignment claimed for the vector accesses (0: the element's)">
  ];
  let dependentDialects = ["::mlir::vector::VectorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

#endif // ZB_TARGET_CUDA_PASSES_TD
