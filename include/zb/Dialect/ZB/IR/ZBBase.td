//===- ZBBase.td - zb dialect definition -------------------*- tablegen -*-===//
#ifndef ZB_DIALECT_ZB_IR_ZBBASE_TD
#define ZB_DIALECT_ZB_IR_ZBBASE_TD

include "mlir/IR/OpBase.td"

def ZB_Dialect : Dialect {
  let name = "zb";
  let cppNamespace = "::zb";
  let summary = "Tensor ops and pipeline ops for zero-bubble pipeline-parallel training";
  let description = [{
    The `zb` dialect holds a model's forward-and-loss graph as value-semantic
    tensor ops (`zb.matmul`, `zb.add`, `zb.relu`, ...), the backward ops that
    `zb-autodiff` adds (each marked with the forward op it differentiates, and
    after `zb-split-backward` with its phase B or W), and the point-to-point
    communication ops (`zb.send`, `zb.recv`) of the per-rank step functions
    built by `zb-lower-pipeline`.

    Discardable attributes used by the passes:
      - `zb.param` (unit, on function arguments): a trainable parameter.
      - `zb.id` (i64, on forward ops): a unique id given by `zb-autodiff`.
      - `zb.origin` (i64, on backward ops): the `zb.id` of the forward op the
        backward op differentiates (or whose result gradient it accumulates).
      - `zb.act_grad` (unit, on backward ops): produces the gradient (or a
        gradient contribution) of an activation, i.e. of a value that is not
        a parameter; the roots of the B chain.
      - `zb.phase` (`#zb.phase<B>` or `#zb.phase<W>`, on backward ops): set
        by `zb-split-backward`.
      - `zb.stage` (i64): the pipeline stage (set by `zb-partition-stages`).

    Typed attributes of the pipeline (ZBAttributes.td), checked by the
    dialect's attribute verifiers wherever they appear:
      - `zb.pipeline` (`#zb.pipeline`, on the module): the stages with their
        functions and costs (`zb-partition-stages`).
      - `zb.kind` (`#zb.kind`, on stage functions) and `zb.role`
        (`#zb.role`, on their arguments and results).
      - `zb.schedule` (`#zb.schedule`, on the module): every rank's F/B/W
        actions (`zb-schedule`).
      - `zb.rank_args` (array of `#zb.rank_arg`, on step functions): what
        each argument is (`zb-lower-pipeline`).
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasConstantMaterializer = 1;
  // convert-zb-to-linalg and convert-zb-to-runtime build scf.for loops
  // (zb.scatter_add, batched GEMM calls); loading scf with the dialect keeps
  // them usable on their own (`zb-opt --convert-zb-to-linalg`).
  let dependentDialects = ["::mlir::scf::SCFDialect"];
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

class ZB_Op<string mnemonic, list<Trait> traits = []>
    : Op<ZB_Dialect, mnemonic, traits>;

#endif // ZB_DIALECT_ZB_IR_ZBBASE_TD
