//===- ZBAttributes.td - zb pipeline attributes ------------*- tablegen -*-===//
//
// The typed attributes that carry the pipeline's state between passes:
// the B/W phase of a backward op, the role of a stage function's argument
// or result, the kind of a stage function, the per-stage costs, the pipeline
// (zb-partition-stages), the schedule with its F/B/W actions (zb-schedule)
// and the argument list of a rank's step function (zb-lower-pipeline).
// See ../../../../../docs/walkthrough.md for where each one appears.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_DIALECT_ZB_IR_ZBATTRIBUTES_TD
#define ZB_DIALECT_ZB_IR_ZBATTRIBUTES_TD

include "zb/Dialect/ZB/IR/ZBBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def ZB_Phase : I32EnumAttr<"Phase", "backward phase (paper Section 2)", [
    I32EnumAttrCase<"B", 0>, // gradient of the input: on the critical path
    I32EnumAttrCase<"W", 1>  // gradient of the weights: free to move
  ]> {
  let cppNamespace = "::zb";
  let genSpecializedAttr = 0;
}
def ZB_PhaseAttr : EnumAttr<ZB_Dialect, ZB_Phase, "phase"> {
  let assemblyFormat = "`<` $value `>`";
  let description = [{
    On backward ops after `zb-split-backward`: `#zb.phase<B>` computes an
    input (activation) gradient, `#zb.phase<W>` a parameter gradient.
  }];
}

def ZB_ActionKind : I32EnumAttr<"ActionKind", "kind of a scheduled pass", [
    I32EnumAttrCase<"F", 0>, I32EnumAttrCase<"B", 1>, I32EnumAttrCase<"W", 2>
  ]> {
  let cppNamespace = "::zb";
  let genSpecializedAttr = 0;
}

def ZB_ScheduleCostConvention : I32EnumAttr<"ScheduleCostConvention",
    "how a schedule's cost is measured (docs/references.md: the paper's Table 5)", [
    I32EnumAttrCase<"Makespan", 0, "makespan">,
    I32EnumAttrCase<"StageSpan", 1, "stage_span">
  ]> {
  let cppNamespace = "::zb";
  let genSpecializedAttr = 0;
}

def ZB_ScheduleOptimizerSync : I32EnumAttr<"ScheduleOptimizerSync",
    "how a compiled schedule synchronises the optimizer step (Section 4)", [
    I32EnumAttrCase<"None", 0, "none">,
    I32EnumAttrCase<"PostValidation", 1, "post-validation">
  ]> {
  let cppNamespace = "::zb";
  let genSpecializedAttr = 0;
}

def ZB_StageFuncKind : I32EnumAttr<"StageFuncKind", "kind of a stage function", [
    I32EnumAttrCase<"forward", 0>, I32EnumAttrCase<"backward_input", 1>,
    I32EnumAttrCase<"backward_weight", 2>
  ]> {
  let cppNamespace = "::zb";
  let genSpecializedAttr = 0;
}
def ZB_StageFuncKindAttr : EnumAttr<ZB_Dialect, ZB_StageFuncKind, "kind"> {
  let assemblyFormat = "`<` $value `>`";
  let description = [{
    `zb.kind` on a stage function made by `zb-partition-stages`: its F, B or
    W pass.
  }];
}

def ZB_Role : I32EnumAttr<"Role", "role of a stage function's value", [
    I32EnumAttrCase<"param", 0>,      // a trainable parameter (zb.index)
    I32EnumAttrCase<"batch", 1>,      // a model input of the microbatch
    I32EnumAttrCase<"act", 2>,        // activation from the previous stage
    I32EnumAttrCase<"saved", 3>,      // kept from F for B/W
    I32EnumAttrCase<"grad", 4>,       // activation gradient between stages
    I32EnumAttrCase<"residual", 5>,   // kept from B for W
    I32EnumAttrCase<"param_grad", 6>, // a parameter's gradient (W result)
    I32EnumAttrCase<"loss", 7>        // the microbatch loss (last stage)
  ]> {
  let cppNamespace = "::zb";
  let genSpecializedAttr = 0;
}
def ZB_RoleAttr : EnumAttr<ZB_Dialect, ZB_Role, "role"> {
  let assemblyFormat = "`<` $value `>`";
  let description = [{
    `zb.role` on the arguments and results of stage functions: where the
    value comes from or goes to (see `zb-partition-stages`).
  }];
}

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

// A double (stored as an APFloat, which has a hash) printed so that it
// parses back to the same bits.
class ZB_F64Parameter<string desc, string default = "">
    : AttrParameter<"::llvm::APFloat", desc> {
  let comparator = "$_lhs.bitwiseIsEqual($_rhs)";
  let parser = [{ [&]() -> ::mlir::FailureOr<::llvm::APFloat> {
    double v;
    if ($_parser.parseFloat(v))
      return ::mlir::failure();
    return ::llvm::APFloat(v);
  }() }];
  let printer = [{ $_printer.printFloat($_self) }];
  let defaultValue = default;
}

// A bool printed and parsed as `true` / `false` (default false, elided).
// An enum parameter written as a quoted string ("makespan",
// "post-validation"; names with '-' are not MLIR keywords): an unknown name
// is a parse error naming the parameter and the names it takes.
class ZB_QuotedEnumParameter<string enumName, string desc, string paramName,
                             string choices, string default>
    : AttrParameter<"::zb::" # enumName, desc> {
  let parser = [{ [&]() -> ::mlir::FailureOr<::zb::}] # enumName # [{> {
    ::llvm::SMLoc loc = $_parser.getCurrentLocation();
    std::string text;
    if ($_parser.parseString(&text))
      return ::mlir::failure();
    if (auto value = ::zb::symbolize}] # enumName # [{(text))
      return *value;
    return $_parser.emitError(loc, "#zb.schedule: }] # paramName #
        [{ must be }] # choices # [{, not \"" + text + "\""),
           ::mlir::failure();
  }() }];
  let printer = [{ $_printer << '"' << ::zb::stringify}] # enumName #
                [{($_self) << '"' }];
  let defaultValue = default;
}

class ZB_BoolParameter<string desc> : AttrParameter<"bool", desc> {
  let parser = [{ [&]() -> ::mlir::FailureOr<bool> {
    ::llvm::StringRef word;
    if ($_parser.parseKeyword(&word))
      return ::mlir::failure();
    if (word == "true" || word == "false")
      return word == "true";
    return $_parser.emitError($_parser.getCurrentLocation(),
                              "expected true or false"), ::mlir::failure();
  }() }];
  let printer = [{ $_printer << ($_self ? "true" : "false") }];
  let defaultValue = "false";
}

def ZB_RankArgKind : I32EnumAttr<"RankArgKind", "kind of a step argument", [
    I32EnumAttrCase<"param", 0>, I32EnumAttrCase<"grad", 1>,
    I32EnumAttrCase<"input", 2>, I32EnumAttrCase<"loss", 3>
  ]> {
  let cppNamespace = "::zb";
  let genSpecializedAttr = 0;
}

//===----------------------------------------------------------------------===//
// Schedule
//===----------------------------------------------------------------------===//

def ZB_ActionAttr : AttrDef<ZB_Dialect, "Action"> {
  let mnemonic = "action";
  let summary = "one scheduled pass: F, B or W of a stage for a microbatch";
  let parameters = (ins EnumParameter<ZB_ActionKind>:$kind,
                        "int64_t":$stage, "int64_t":$microbatch);
  let assemblyFormat = "`<` $kind `,` `stage` $stage `,` `mb` $microbatch `>`";
  let genVerifyDecl = 1;
}

def ZB_ScheduleAttr : AttrDef<ZB_Dialect, "Schedule"> {
  let mnemonic = "schedule";
  let summary = "the F/B/W order of every rank (zb-schedule)";
  let description = [{
    `ranks` holds one array of `#zb.action` per rank, in execution order;
    `stage_to_rank` maps each global stage (rank x chunk) to its rank.
    `bubble_rate`, `makespan_ms` (ms) and `peak_memory` (bytes per rank) are
    the simulator's prediction (lib/Schedule). `fused_backward`: B and W run
    as one pass and the gradient leaves after both (1F1B, GPipe, 1F1B-I);
    `cost_convention`: "makespan" or "stage_span" (docs/references.md).
    `optimizer_sync` = "post-validation" (the paper's Section 4; default
    "none"): `validate_before` holds per rank the index of the action before
    which the rank program validates the previous step's optimizer step
    (zbrt_validate_optimizer), where the simulator expects the fully reduced
    state to have arrived (lib/Schedule/OptimizerSync.h); an index equal to
    the rank's action count means after its last action. `directions` = 2
    (DualPipe; default 1, then not printed): the global stages form two
    routes, stages 0..L-1 for microbatches 0..m/2-1 and stages L..2L-1 (the
    same model stages, stage L+s computing zb.pipeline's stage s) for the
    rest (lib/Schedule, Schedule::directions).
  }];
  let parameters = (ins
    StringRefParameter<"schedule name">:$name,
    "int64_t":$microbatches,
    ZB_F64Parameter<"predicted bubble rate">:$bubble_rate,
    ZB_F64Parameter<"predicted makespan (ms)">:$makespan_ms,
    "::mlir::DenseF64ArrayAttr":$peak_memory,
    "::mlir::DenseI64ArrayAttr":$stage_to_rank,
    ZB_BoolParameter<"B and W fused">:$fused_backward,
    ZB_QuotedEnumParameter<"ScheduleCostConvention", "cost convention",
      "cost_convention", [{\"makespan\" or \"stage_span\"}],
      "::zb::ScheduleCostConvention::Makespan">:$cost_convention,
    "::mlir::ArrayAttr":$ranks,
    ZB_QuotedEnumParameter<"ScheduleOptimizerSync", "optimizer sync",
      "optimizer_sync", [{\"none\" or \"post-validation\"}],
      "::zb::ScheduleOptimizerSync::None">:$optimizer_sync,
    OptionalParameter<"::mlir::DenseI64ArrayAttr">:$validate_before,
    DefaultValuedParameter<"int64_t", "1">:$directions);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Pipeline
//===----------------------------------------------------------------------===//

def ZB_StageAttr : AttrDef<ZB_Dialect, "Stage"> {
  let mnemonic = "stage";
  let summary = "one pipeline stage: its functions, costs and memory";
  let description = [{
    The forward, backward-input (B) and backward-weight (W) functions of a
    stage and its costs from the cost model or a profile: `t_f`, `t_b`, `t_w`
    (ms per microbatch), `t_comm` (ms per activation transfer), `m_b` (bytes
    held from F to B) and `m_w` (bytes held from B to W), as in the paper's
    Section 3 (T_F, T_B, T_W, M_B, M_W). `cv_f`/`cv_b`/`cv_w`: measured
    coefficients of variation (-1: not measured); `profiled`: the costs
    come from `zb-run --profile`.
  }];
  let parameters = (ins "int64_t":$stage,
    "::mlir::FlatSymbolRefAttr":$forward,
    "::mlir::FlatSymbolRefAttr":$backward_input,
    "::mlir::FlatSymbolRefAttr":$backward_weight,
    ZB_F64Parameter<"T_F (ms)">:$t_f, ZB_F64Parameter<"T_B (ms)">:$t_b,
    ZB_F64Parameter<"T_W (ms)">:$t_w, ZB_F64Parameter<"T_comm (ms)">:$t_comm,
    "int64_t":$m_b, "int64_t":$m_w,
    ZB_F64Parameter<"cv of T_F", "::llvm::APFloat(-1.0)">:$cv_f,
    ZB_F64Parameter<"cv of T_B", "::llvm::APFloat(-1.0)">:$cv_b,
    ZB_F64Parameter<"cv of T_W", "::llvm::APFloat(-1.0)">:$cv_w,
    ZB_BoolParameter<"costs measured">:$profiled);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def ZB_ModelValueAttr : AttrDef<ZB_Dialect, "ModelValue"> {
  let mnemonic = "value";
  let summary = "a model parameter or input and the stages that use it";
  let parameters = (ins StringRefParameter<"model name">:$name,
    "int64_t":$index, "::mlir::Type":$type,
    "::mlir::DenseI64ArrayAttr":$stages);
  let assemblyFormat = [{
    `<` $name `,` `index` `=` $index `,` `type` `=` $type `,`
        `stages` `=` $stages `>`
  }];
  let genVerifyDecl = 1;
}

def ZB_PipelineAttr : AttrDef<ZB_Dialect, "Pipeline"> {
  let mnemonic = "pipeline";
  let summary = "the partition of the model into pipeline stages";
  let description = [{
    Set by `zb-partition-stages` on the module: `num_stages` = P x V global
    stages on `num_ranks` = P ranks with `num_chunks` = V chunks each, the
    cost model's `target`, one `#zb.stage` per stage in order, and the
    model's parameters and inputs (`#zb.value`, with the stages that use
    them; a parameter tied across stages lists several).
  }];
  let parameters = (ins "int64_t":$num_stages, "int64_t":$num_ranks,
    "int64_t":$num_chunks, StringRefParameter<"cost model target">:$target,
    "::mlir::ArrayAttr":$stages, "::mlir::ArrayAttr":$params,
    "::mlir::ArrayAttr":$inputs);
  let assemblyFormat = [{
    `<` `num_stages` `=` $num_stages `,` `num_ranks` `=` $num_ranks `,`
        `num_chunks` `=` $num_chunks `,` `target` `=` $target `,`
        `stages` `=` $stages `,` `params` `=` $params `,`
        `inputs` `=` $inputs `>`
  }];
  let genVerifyDecl = 1;
}

def ZB_RankArgAttr : AttrDef<ZB_Dialect, "RankArg"> {
  let mnemonic = "rank_arg";
  let summary = "what one argument of a rank's step function is";
  let description = [{
    `zb.rank_args` on a step function made by `zb-lower-pipeline` lists one
    `#zb.rank_arg` per argument: `param` (index = the model parameter),
    `grad` (its gradient buffer), `input` (index = the model input) or
    `loss` (the step's losses, one per microbatch).
  }];
  let parameters = (ins EnumParameter<ZB_RankArgKind>:$kind,
    DefaultValuedParameter<"int64_t", "-1">:$index);
  let assemblyFormat = "`<` $kind (`,` $index^)? `>`";
  let genVerifyDecl = 1;
}

#endif // ZB_DIALECT_ZB_IR_ZBATTRIBUTES_TD
