//===- Passes.td - zb transformation passes ----------------*- tablegen -*-===//
#ifndef ZB_TRANSFORMS_PASSES_TD
#define ZB_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

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
    `zb-partition-stages` makes explicit. With `report`, prints per function
    the number of B and W ops and the bytes of residuals crossing from B to W.
  }];
  let options = [
    Option<"report", "report", "bool", /*default=*/"false",
           "Print a summary of the split to stderr">
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
    and records the pipeline in the module attribute `zb.pipeline` (stages,
    their functions, the argument roles, T_F/T_B/T_W/T_comm in ms and
    M_B/M_W in bytes from the cost model of lib/Transforms/CostModel).
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
           "Cost model target: cpu or h100">
  ];
  let dependentDialects = ["::zb::ZBDialect", "::mlir::func::FuncDialect"];
}

def ZBSchedule : Pass<"zb-schedule", "mlir::ModuleOp"> {
  let summary = "Schedules F/B/W per rank with lib/Schedule and attaches the result";
  let description = [{
    Reads the per-stage costs and memory of `zb.pipeline`, builds the named
    schedule (`1f1b`, `zb-h1`, ... see lib/Schedule), verifies it, and
    attaches it as `zb.schedule` (per rank the ordered actions, as strings
    such as "F0.3" = forward of stage 0, microbatch 3) together with the
    simulated bubble rate and peak memory. An invalid request (too few
    microbatches, memory limit too small) is an error naming the minimum.
  }];
  let options = [
    Option<"algorithm", "algorithm", "std::string", /*default=*/"\"zb-h1\"",
           "Schedule name">,
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"8",
           "Number of microbatches per step">,
    Option<"memoryLimit", "memory-limit", "double", /*default=*/"0",
           "Memory limit per rank in bytes (0 = unlimited)">,
    Option<"profile", "profile", "std::string", /*default=*/"\"\"",
           "zb-run --profile JSON whose measured T_F/T_B/T_W/T_comm (ms) "
           "replace the cost model's (the paper's profile-then-schedule loop)">
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

def ZBLowerPipeline : Pass<"zb-lower-pipeline", "mlir::ModuleOp"> {
  let summary = "Builds one step function per rank from the schedule";
  let description = [{
    For every rank, emits `@zb_rank<r>_step` that runs the rank's scheduled
    actions in order: calls of the stage functions, `zb.send` / `zb.recv` of
    activations and activation gradients between ranks, the saved tensors
    and residuals of every microbatch kept as SSA values (stash buffers after
    bufferization), weight gradients accumulated in increasing microbatch
    order whatever the schedule's W order (bit-identical results across
    schedules), and the loss summed over microbatches. Arguments are memrefs
    in the order of docs/plan-json.md (recorded as `zb.rank_args`).
    Communication is checked before emission: every send is matched by a
    recv in the same order per rank pair, and a blocking-recv simulation
    proves the program cannot deadlock; failures name the first conflict.
  }];
  let dependentDialects = ["::zb::ZBDialect", "::mlir::func::FuncDialect",
      "::mlir::tensor::TensorDialect", "::mlir::bufferization::BufferizationDialect",
      "::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect"];
}

#endif // ZB_TRANSFORMS_PASSES_TD
