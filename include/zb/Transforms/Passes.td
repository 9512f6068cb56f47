//===- Passes.td - zb transformation passes ----------------*- tablegen -*-===//
#ifndef ZB_TRANSFORMS_PASSES_TD
#define ZB_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def ZBFuseAttention : Pass<"zb-fuse-attention", "mlir::ModuleOp"> {
  let summary = "Fuses the exported attention into zb.attention";
  let description = [{
    Finds, in the forward-and-loss function named by `function` (before
    `zb-autocast` and `zb-autodiff`), attention as the exporters write it
    and replaces it with one `zb.attention`:

        S = zb.batch_matmul q, k {transpose_rhs}   (or k transposed by zb.transpose)
        S = S * c  or  S / c                       (a positive splat constant; optional)
        S = S + mask                               (optional; mask not computed from S)
        S = zb.causal_mask S                       (optional; fill -inf or <= -1e9)
        P = zb.softmax S axis <last>
        O = zb.batch_matmul P, v                   (or v^T with transpose_rhs)

    in any order of the scale, mask and causal steps, each at most once.
    Every intermediate value must have that one use (a value read
    elsewhere is not fused), and the mask must not depend on a parameter
    (`zb.param`). A mask that is a `zb.broadcast_in_dim` of a smaller
    tensor is taken before the broadcast (reshaped to the scores' rank
    with 1s), so that the backward pass keeps the small tensor. A mask
    that is a constant holding the causal mask (0 where key <= query, a
    hiding fill after it, in every [Tq, Tk] slice: how torch.onnx folds
    the mask of a transformers causal LM called without attention_mask)
    becomes the `causal` flag. q and k multiplied each by a positive splat
    constant before the product (torch.onnx writes sdpa's scale as
    sqrt(scale) on both) are taken unmultiplied, the constants joining
    `scale`; k^T written as reshape(transpose(reshape(k))) is taken as k.

    The attention's gradient (`zb.attention_grad`) then recomputes the
    probabilities from the saved log-sum-exp: the `Tq x Tk` scores and
    probabilities are not kept between F and B (FlashAttention, Dao 2023).
    Each fused attention is reported as a remark when `remarks` is set.
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"main\"",
           "Name of the forward-and-loss function">,
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Emit a remark at each fused attention">
  ];
  let statistics = [
    Statistic<"numFused", "fused", "Attentions fused into zb.attention">
  ];
  let dependentDialects = ["::zb::ZBDialect"];
}

def ZBFuseCrossEntropy : Pass<"zb-fuse-cross-entropy", "mlir::ModuleOp"> {
  let summary = "Keeps each cross-entropy's log-sum-exp for its gradient and reads the logits in their own precision";
  let description = [{
    The classifier's half of llm.c's and Liger-Kernel's fused
    classifier, at the graph level. In the forward-and-loss function named
    by `function` (after `zb-autocast`, before `zb-autodiff`), every
    `zb.cross_entropy` without a second result gets one: `lse`, the
    log-sum-exp of each position's logits. Its gradient is then
    `exp(logits - lse) - one_hot(targets)`, scaled: one elementwise pass,
    where the plain op's gradient recomputes the softmax (two row
    reductions and the probabilities in memory).

    A widening `zb.cast` between the logits and the cross-entropy (the
    float32 copy that autocast or the exporter's `logits.float()` makes of
    the bfloat16 logits), possibly followed by `zb.reshape`s, is absorbed
    when the cast and reshapes have no other use: the reshapes move before
    it and the op reads the narrow logits, computing in its float32
    result type. Between F and B the narrow logits and the lse are kept,
    not a float32 copy: half the bytes of the largest activation of a
    language model's last stage (tokens x vocabulary).

    Each rewritten op is reported as a remark when `remarks` is set.
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"main\"",
           "Name of the forward-and-loss function">,
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Emit a remark at each rewritten cross-entropy">
  ];
  let statistics = [
    Statistic<"numFused", "fused", "Cross-entropies given their lse">,
    Statistic<"numCastsAbsorbed", "casts-absorbed",
              "Widening casts of the logits absorbed">
  ];
  let dependentDialects = ["::zb::ZBDialect"];
}

def ZBAutocast : Pass<"zb-autocast", "mlir::ModuleOp"> {
  let summary = "bfloat16 mixed precision with torch.autocast's op lists";
  let description = [{
    Rewrites the forward-and-loss function named by `function` (before
    `zb-autodiff`) as PyTorch's `torch.autocast(dtype=torch.bfloat16)` runs
    it (the CUDA policy of aten/src/ATen/autocast_mode.cpp): `zb.matmul` and
    `zb.batch_matmul` take bfloat16 operands and give a bfloat16 result
    (float32 accumulation in the GEMM); `zb.exp`, `zb.log`, `zb.pow`,
    `zb.rsqrt`, `zb.softmax`, `zb.layer_norm`, `zb.rms_norm`,
    `zb.cross_entropy`, `zb.reduce_sum`, `zb.reduce_mean` and
    `zb.scatter_add` run in float32; `zb.attention` (torch's
    scaled_dot_product_attention) takes bfloat16 query, key and value and
    gives a bfloat16 result with a float32 log-sum-exp (its softmax in
    float32); every other op runs at the widest float
    type of its operands, where constants, and values computed from
    parameters alone next to an activation (a linear layer's bias), adopt
    the others' type. Operands are converted with `zb.cast`, one per value
    and type. Parameters stay float32 (master weights: their gradients come
    back through the casts in float32); a parameter exported in bfloat16
    becomes a float32 argument (its values widen exactly); explicit casts of
    the model (`x.astype(jnp.bfloat16)`) are kept. The function's result types are
    kept. An op that is not valid in the type it is given is an error at
    the op.
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"main\"",
           "Name of the forward-and-loss function">,
    Option<"dtype", "dtype", "std::string", /*default=*/"\"bf16\"",
           "The lower-precision float type (bf16)">
  ];
  let dependentDialects = ["::zb::ZBDialect"];
}

def ZBAutodiff : Pass<"zb-autodiff", "mlir::ModuleOp"> {
  let summary = "Builds the backward pass of a forward-and-loss function";
  let description = [{
    Whole-graph reverse-mode differentiation. The function named by
    `function` (default `main`) must return one scalar loss (`tensor<f32>`);
    its arguments marked `zb.param` are the trainable parameters. The pass
    appends the gradient of the loss with respect to every parameter as
    extra results, in argument order (result attribute `zb.grad_of` = the
    argument index). Forward ops get a unique `zb.id`; every backward op gets
    `zb.origin` = the id of the forward op whose gradient rule built it, so
    later passes can place it in the same pipeline stage. Each operand's
    gradient is built separately through GradientOpInterface. Gradients are
    only built for values that depend on a parameter (activity analysis).
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"main\"",
           "Name of the forward-and-loss function to differentiate">
  ];
  let dependentDialects = ["::zb::ZBDialect"];
}

def ZBSplitBackward : Pass<"zb-split-backward", "mlir::ModuleOp"> {
  let summary = "Splits backward ops into B (input gradients) and W (weight gradients)";
  let description = [{
    Zero Bubble paper, Section 2: **B** is the activation-gradient chain (the
    ops `zb-autodiff` marked `zb.act_grad`: gradients of values that are not
    parameters, which the previous stage waits for) and every backward op it
    needs; **W** is every other backward op, i.e. the ops whose results flow
    only into parameter gradients (function results marked `zb.grad_of`). Sets `zb.phase = "B" | "W"` on every backward
    op. Values produced by B and consumed by W are the residuals that
    `zb-partition-stages` makes explicit. With `recompute` (default), a
    residual that is a cheap function (elementwise ops, broadcast, transpose,
    reshape, causal mask) of forward values, parameters, batch inputs and
    constants - e.g. the upstream gradient of a sum/mean loss, a derivative
    such as gelu'(x) of a saved activation, a broadcast - is rebuilt in W
    from those values instead of being kept from B, when the forward
    activations it needs that W does not already read take fewer bytes than
    the residual; B ops left unused are erased. Also with `recompute`, a
    `zb.cast` of parameters (zb-autocast's bfloat16 weight copies) that
    backward ops read is rebuilt before them (one per origin and phase)
    instead of being saved per microbatch (torch.autocast keeps one copy per
    step). With `rebuild-attention-views` (zb-compile sets it for the CUDA
    targets' fused attention kernels), each bfloat16 `zb.attention_grad`
    (head dimensions multiples of 16 up to 128, as the kernels take) reads
    its q, k and v as head views (zb/Transforms/HeadViews.h: transpose
    [0, 2, 1, 3] of a reshape of a token-major tensor, or of its slice or
    split on the last axis) rebuilt in B from the token-major tensor, and
    its `result` as the head view of the forward's merged result (the
    transpose and reshape back that the output projection reads), so that
    what crosses from F to B is the token-major tensors, which the kernels
    read in place (zb-gpu-attention-calls), not copies in the heads'
    layout. With `report`, prints per
    function the number of B and W ops and the bytes of residuals crossing
    from B to W (zb-report prints them per stage as M_W).
  }];
  let options = [
    Option<"report", "report", "bool", /*default=*/"false",
           "Print a summary of the split to stderr">,
    Option<"rebuildAttentionViews", "rebuild-attention-views", "bool",
           /*default=*/"false",
           "Rebuild the head views that bfloat16 attention gradients read "
           "in B from the token-major tensors they are views of (for the "
           "GPU attention kernels, which read those in place)">,
    Option<"recompute", "recompute", "bool", /*default=*/"true",
           "Rebuild cheap residuals (elementwise ops and views of forward "
           "values, parameters, inputs and constants) in W instead of "
           "keeping them from B, when that needs fewer bytes">
  ];
}

def ZBPartitionStages : Pass<"zb-partition-stages", "mlir::ModuleOp"> {
  let summary = "Partitions the model into pipeline stages and outlines them";
  let description = [{
    Assigns the forward ops to `num-stages` x `virtual-stages` contiguous stages, minimising the
    slowest stage's cost (dynamic programming over the op sequence with the
    FLOP cost model); backward ops follow their origin. Each stage s is
    outlined into three functions:
      - `@stage<s>_forward(params, batch inputs, activations in) -> (activations out | loss, saved...)`
      - `@stage<s>_backward_input(params, batch inputs, saved..., grads of activations out) -> (grads of activations in, residuals...)`
      - `@stage<s>_backward_weight(params, batch inputs, saved..., residuals...) -> (parameter grads...)`
    and records the pipeline in the module attribute `zb.pipeline`, a
    `#zb.pipeline` (one `#zb.stage` per stage with its functions,
    T_F/T_B/T_W/T_comm in ms and M_B/M_W in bytes from the cost model of
    lib/Transforms/CostModel; the parameters and inputs as `#zb.value`).
    Stage functions carry `zb.kind = #zb.kind<forward>` (or backward_input,
    backward_weight) and a `zb.role = #zb.role<...>` on every argument and
    result (docs/dialect/ZBAttributes.md).

    `balance=layers` cuts at layer (transformer block) boundaries instead:
    layer L has the forward ops from the first op using a parameter of layer
    L up to the op before the first op of layer L+1. A forward op's layer is
    its `zb.layer` integer attribute if the generator set one, else the layer
    of the parameters it uses, read from their `zb.name` (gen_gpt2.py
    --names, ONNX initializer names): names are grouped by their pattern with
    digit runs replaced by `#` (`attn_w#`, `ln#_w#`, `h.#.attn.weight`); the
    layer numbers are the set of values a digit run takes in the most groups
    ({0..L-1}; `ln#_w#` also has the run {1, 2}), and in each group the last
    run with that set is the layer; ops without such parameters carry the
    layer of the op before them. Stage k of S gets
    layers [k*L/S, (k+1)*L/S) (integer division); ops before the first layer
    (embedding) go to the first stage, ops after the last (final norm, head,
    loss) to the last.

    Parameters used by several stages (tied weights, e.g. GPT-2's token
    embedding and LM head) get a copy per stage (zb.pipeline `params` entry
    `stages`); each stage's backward_weight returns its own part of the
    gradient and zb-lower-pipeline sums the parts across ranks.
  }];
  let options = [
    Option<"numStages", "num-stages", "int64_t", /*default=*/"2",
           "Number of pipeline ranks P">,
    Option<"virtualStages", "virtual-stages", "int64_t", /*default=*/"1",
           "Chunks (virtual stages) per rank V: the model is cut into P*V "
           "stages, placed on ranks by the schedule (interleaved or V-shape)">,
    Option<"function", "function", "std::string", /*default=*/"\"main\"",
           "Name of the differentiated function">,
    Option<"target", "target", "std::string", /*default=*/"\"cpu\"",
           "Cost model target: cpu, h100 (every float at 2 bytes), cuda or "
           "cuda-emu (h100's peaks, tensors at their IR sizes)">,
    Option<"balance", "balance", "std::string", /*default=*/"\"cost\"",
           "How to cut: 'cost' (dynamic programming minimising the slowest "
           "stage) or 'layers' (equal numbers of transformer blocks per "
           "stage, cut at block boundaries; embedding in the first stage, "
           "head and loss in the last)">
  ];
  let dependentDialects = ["::zb::ZBDialect", "::mlir::func::FuncDialect"];
}

def ZBSchedule : Pass<"zb-schedule", "mlir::ModuleOp"> {
  let summary = "Schedules F/B/W per rank with lib/Schedule and attaches the result";
  let description = [{
    Reads the per-stage costs and memory of `zb.pipeline`, builds the named
    schedule (`1f1b`, `zb-h1`, ... see lib/Schedule), verifies it, and
    attaches it as `zb.schedule`, a `#zb.schedule` (per rank the ordered
    actions such as `#zb.action<F, stage 0, mb 3>` = forward of stage 0,
    microbatch 3) together with the simulated bubble rate and peak memory. An invalid request (too few
    microbatches, memory limit too small) is an error naming the minimum.
  }];
  let options = [
    Option<"algorithm", "algorithm", "std::string", /*default=*/"\"zb-h1\"",
           "Schedule name">,
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"8",
           "Number of microbatches per step">,
    ListOption<"memoryLimits", "memory-limit", "double",
           "Activation memory limit in bytes: one value for every rank, or "
           "one per rank (0 = unlimited; default none)">,
    Option<"profile", "profile", "std::string", /*default=*/"\"\"",
           "zb-run --profile JSON whose measured T_F/T_B/T_W/T_comm (ms) "
           "replace the cost model's (the paper's profile-then-schedule "
           "loop); for zb-opt: zb-compile applies its costs to zb.pipeline "
           "itself (zb::applyStageCosts)">,
    Option<"scheduleFile", "schedule-file", "std::string", /*default=*/"\"\"",
           "Read the schedule from this file instead of building "
           "`algorithm` (which then names it): the PyTorch pipelining CSV "
           "or zb's schedule JSON; it must verify against this pipeline's "
           "stages and microbatches (for zb-opt: zb-compile hands the "
           "schedule it parsed to zb::createZBSchedule)">,
    Option<"optimizerSync", "optimizer-sync", "std::string",
           /*default=*/"\"none\"",
           "none, or post-validation: place each rank's validation of the "
           "previous step's optimizer step where the simulator expects the "
           "fully reduced state (the paper's Section 4)">
  ];
}

def ZBReport : Pass<"zb-report", "mlir::ModuleOp"> {
  let summary = "Prints the per-stage costs and memory of zb.pipeline";
  let description = [{
    One line per stage on stderr: `stage S: T_F=... ms T_B=... ms T_W=... ms
    T_comm=... ms M_B=... bytes M_W=... bytes` (per microbatch), then the
    totals and, when zb.schedule is present, the schedule's predicted bubble
    rate and peak memory per rank. The IR is unchanged.
  }];
}

def ZBClusterWeightGradients
    : Pass<"zb-cluster-weight-gradients", "mlir::ModuleOp"> {
  let summary = "Splits each stage's W function into independent groups of "
                "parameter gradients (the Zero Bubble paper, Appendix A)";
  let description = [{
    A W pass computes the gradients of several parameters, mostly from
    independent computations (a linear layer's weight and bias gradients
    share only their input tensors). The paper's Appendix A reorders them so
    that the computations of one parameter run together and its gradient
    all-reduce across data-parallel pipelines can start as soon as they are
    done, while the rest of the W pass still runs (its Figure 8).

    For every stage's `backward_weight` function this pass groups the
    results: two gradients are in one group when an op that depends on a
    function argument feeds both (ops computed from constants alone are
    duplicated instead), or when they are parts (`zb.part`) of the same
    parameter. With two or more groups, each group becomes a private
    function `<W>_c<j>` (j = 0, 1, ... in the order of the group's first
    result) that takes only the arguments it reads and returns the group's
    gradients with their `zb.role`/`zb.index`/`zb.part` attributes; the W
    function's body becomes the calls of those functions in order, and the
    W function gets `zb.weight_clusters = [@<W>_c0, ...]`. The W function's
    signature and results are unchanged, so every caller stays valid.
    `zb-lower-pipeline` calls the groups one by one in a stage's last W
    pass of the step and announces each group's gradients
    (`zbrt_gradients_ready`) as soon as they are final. A W function with
    one group, without `param_grad` results only, or with ops that hold
    regions is left as it is.

    `bucket-bytes` sizes the all-reduce buckets as PyTorch DDP's
    `bucket_cap_mb` does: adjacent groups are merged, in order, until each
    holds at least that many gradient bytes (the last one may hold fewer);
    0 keeps every group alone (the paper's Figure 8, one all-reduce per
    parameter). zb-compile passes `--dp-bucket-bytes` (default 4 MiB).
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", /*default=*/"0",
           "Merge adjacent groups until each holds at least this many "
           "gradient bytes (0: every group alone)">
  ];
  let dependentDialects = ["::zb::ZBDialect", "::mlir::func::FuncDialect"];
}

def ZBLowerPipeline : Pass<"zb-lower-pipeline", "mlir::ModuleOp"> {
  let summary = "Builds one step function per rank from the schedule";
  let description = [{
    For every rank, emits `@zb_rank<r>_step` that runs the rank's scheduled
    actions in order: calls of the stage functions, `zb.send` / `zb.recv` of
    activations and activation gradients between ranks, the saved tensors
    and residuals of every microbatch kept as SSA values (stash buffers after
    bufferization), weight gradients accumulated in increasing microbatch
    order whatever the schedule's W order (bit-identical results across
    schedules), and the loss summed over microbatches. A parameter with
    several uses returns one gradient part per use (`zb.part`), each summed
    over the microbatches on its own and the totals added in part order, so
    its gradient does not depend on the partition. A tied parameter
    (several stages) has a copy on every rank running one of its stages:
    after the step's last W, each rank sends its stages' gradient parts to
    the other holders (zb.send, tag zbrt_tag(0, stage, microbatches +
    parameter index + j * arguments) for the stage's j-th part) and every
    holder adds all parts in part order (stage order for per-stage sums),
    so the copies receive bit-identical gradients. A gradient final on this
    rank alone is written as soon as it is final and announced with
    `zbrt_gradients_ready(k, n)` (gradient arguments k .. k+n-1), so that
    zb-run can start its all-reduce across data-parallel pipelines while
    later passes run (the Zero Bubble paper, Appendix A); in a stage's last
    W of the step a W function split by `zb-cluster-weight-gradients` is
    called group by group inside the W's trace event, each group's
    gradients summed, written and announced before the next group runs.
    Arguments are memrefs
    in the order of docs/plan-json.md (recorded as `zb.rank_args`, one
    `#zb.rank_arg<param, i>` / `<grad, i>` / `<input, i>` / `<loss>` each).
    Communication is checked before emission: every send is matched by a
    recv in the same order per rank pair, and a blocking-recv simulation
    proves the program cannot deadlock; failures name the first conflict.
  }];
  let dependentDialects = ["::zb::ZBDialect", "::mlir::func::FuncDialect",
      "::mlir::tensor::TensorDialect", "::mlir::bufferization::BufferizationDialect",
      "::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect"];
}

def ZBExtractRank : Pass<"zb-extract-rank", "mlir::ModuleOp"> {
  let summary = "Keeps one rank's step function and the functions it calls";
  let description = [{
    Turns the output of `zb-lower-pipeline` (one step function per rank,
    marked `zb.rank = R`) into the module of one rank program, the input of
    `zb-lower-to-llvm`: keeps the step function of rank `rank` (public, with
    its `zb.rank` / `zb.rank_args` attributes), erases the other ranks' step
    functions, makes every other defined function private, drops the
    argument and result attributes of the zb dialect (`zb.role`, `zb.value`,
    `zb.index`: the ports `zb-lower-pipeline` wired; LLVM translation would
    warn about them) and then erases every private function no longer
    reachable from the step function (symbol DCE): stages of other ranks,
    the original model function. Fails, naming the ranks present, when the
    module has no step function for `rank`.
  }];
  let options = [
    Option<"rank", "rank", "int64_t", /*default=*/"0",
           "The rank whose step function (zb.rank attribute) is kept">
  ];
}

#endif // ZB_TRANSFORMS_PASSES_TD
