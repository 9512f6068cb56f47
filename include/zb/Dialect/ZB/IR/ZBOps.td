//===- ZBOps.td - zb dialect ops ---------------------------*- tablegen -*-===//
#ifndef ZB_DIALECT_ZB_IR_ZBOPS_TD
#define ZB_DIALECT_ZB_IR_ZBOPS_TD

include "zb/Dialect/ZB/IR/ZBBase.td"
include "zb/Dialect/ZB/IR/ZBInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def ZB_FloatTensor : RankedTensorOf<[AnyFloat]>;
def ZB_BoolTensor : RankedTensorOf<[I1]>;
def ZB_AnyTensor : RankedTensorOf<[AnyFloat, I1, AnySignlessInteger]>;

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def ZB_ConstantOp : ZB_Op<"constant", [ConstantLike, Pure]> {
  let summary = "A constant tensor";
  let description = [{
    ```mlir
    %c = zb.constant dense<1.0> : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs ZB_AnyTensor:$result);
  let hasCustomAssemblyFormat = 1;
  let hasFolder = 1;
  let hasVerifier = 1;
  let builders = [OpBuilder<(ins "::mlir::ElementsAttr":$value), [{
    build($_builder, $_state, ::llvm::cast<::mlir::Type>(value.getType()), value);
  }]>];
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

class ZB_BinaryOp<string mnemonic, list<Trait> traits = []>
    : ZB_Op<mnemonic, !listconcat(traits, [Pure,
        AllTypesMatch<["lhs", "rhs", "result"]>,
        DeclareOpInterfaceMethods<ZB_GradientOpInterface>])> {
  let arguments = (ins ZB_FloatTensor:$lhs, ZB_FloatTensor:$rhs);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def ZB_AddOp : ZB_BinaryOp<"add", [Commutative]> {
  let summary = "Elementwise addition (operands of the same shape)";
}
def ZB_SubOp : ZB_BinaryOp<"sub"> {
  let summary = "Elementwise subtraction";
}
def ZB_MulOp : ZB_BinaryOp<"mul", [Commutative]> {
  let summary = "Elementwise multiplication";
}
def ZB_DivOp : ZB_BinaryOp<"div"> {
  let summary = "Elementwise division";
}

class ZB_UnaryOp<string mnemonic, list<Trait> traits = []>
    : ZB_Op<mnemonic, !listconcat(traits, [Pure, AllTypesMatch<["operand", "result"]>,
        DeclareOpInterfaceMethods<ZB_GradientOpInterface>])> {
  let arguments = (ins ZB_FloatTensor:$operand);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($result)";
}

def ZB_NegOp : ZB_UnaryOp<"neg"> { let summary = "Elementwise negation"; }
def ZB_ReluOp : ZB_UnaryOp<"relu"> { let summary = "Elementwise max(x, 0)"; }
def ZB_ExpOp : ZB_UnaryOp<"exp"> { let summary = "Elementwise e^x"; }
def ZB_LogOp : ZB_UnaryOp<"log"> { let summary = "Elementwise natural logarithm"; }
def ZB_TanhOp : ZB_UnaryOp<"tanh"> { let summary = "Elementwise tanh"; }

def ZB_CompareOp : ZB_Op<"compare", [Pure, AllTypesMatch<["lhs", "rhs"]>,
    DeclareOpInterfaceMethods<ZB_GradientOpInterface>]> {
  let summary = "Elementwise comparison producing booleans";
  let description = [{
    `predicate` is one of `eq`, `ne`, `lt`, `le`, `gt`, `ge` (ordered float
    comparison).
    ```mlir
    %m = zb.compare "gt", %x, %zero : tensor<4x8xf32> -> tensor<4x8xi1>
    ```
  }];
  let arguments = (ins StrAttr:$predicate, ZB_FloatTensor:$lhs,
                       ZB_FloatTensor:$rhs);
  let results = (outs ZB_BoolTensor:$result);
  let assemblyFormat =
      "$predicate `,` $lhs `,` $rhs attr-dict `:` type($lhs) `->` type($result)";
  let hasVerifier = 1;
}

def ZB_SelectOp : ZB_Op<"select", [Pure,
    AllTypesMatch<["on_true", "on_false", "result"]>,
    DeclareOpInterfaceMethods<ZB_GradientOpInterface>]> {
  let summary = "Elementwise select: cond ? on_true : on_false";
  let arguments = (ins ZB_BoolTensor:$cond, ZB_FloatTensor:$on_true,
                       ZB_FloatTensor:$on_false);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat =
      "$cond `,` $on_true `,` $on_false attr-dict `:` type($cond) `,` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def ZB_MatmulOp : ZB_Op<"matmul", [Pure,
    DeclareOpInterfaceMethods<ZB_GradientOpInterface>]> {
  let summary = "Matrix product of 2-D tensors with optional transposes";
  let description = [{
    `result = op(lhs) * op(rhs)` where `op(x)` is `x^T` when the matching
    `transpose_lhs` / `transpose_rhs` unit attribute is present. With
    op(lhs) of shape MxK and op(rhs) of shape KxN the result is MxN.
    ```mlir
    %y = zb.matmul %x, %w {transpose_rhs} : (tensor<16x8xf32>, tensor<32x8xf32>) -> tensor<16x32xf32>
    ```
    Gradients: `d lhs = dY * op(rhs)^T` (the B part for activations),
    `d rhs = op(lhs)^T * dY` (the W part for weights), each transposed back
    when the operand itself was transposed.
  }];
  let arguments = (ins ZB_FloatTensor:$lhs, ZB_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` `(` type($lhs) `,` type($rhs) `)` `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shape ops and reductions
//===----------------------------------------------------------------------===//

def ZB_BroadcastInDimOp : ZB_Op<"broadcast_in_dim", [Pure,
    DeclareOpInterfaceMethods<ZB_GradientOpInterface>]> {
  let summary = "Broadcasts a tensor to a larger shape";
  let description = [{
    Operand dimension `i` maps to result dimension `dims[i]` (strictly
    increasing); it must have the result's size there or size 1.
    ```mlir
    %b = zb.broadcast_in_dim %bias dims [1] : tensor<32xf32> -> tensor<16x32xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$operand, DenseI64ArrayAttr:$dims);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat =
      "$operand `dims` $dims attr-dict `:` type($operand) `->` type($result)";
  let hasVerifier = 1;
}

def ZB_ReshapeOp : ZB_Op<"reshape", [Pure,
    DeclareOpInterfaceMethods<ZB_GradientOpInterface>]> {
  let summary = "Reshapes a tensor (same number of elements, row-major order)";
  let arguments = (ins ZB_FloatTensor:$operand);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

class ZB_ReduceOp<string mnemonic> : ZB_Op<mnemonic, [Pure,
    DeclareOpInterfaceMethods<ZB_GradientOpInterface>]> {
  let arguments = (ins ZB_FloatTensor:$operand, DenseI64ArrayAttr:$axes);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat =
      "$operand `axes` $axes attr-dict `:` type($operand) `->` type($result)";
  let hasVerifier = 1;
}

def ZB_ReduceSumOp : ZB_ReduceOp<"reduce_sum"> {
  let summary = "Sum over the given axes (the axes are removed)";
  let description = [{
    ```mlir
    %s = zb.reduce_sum %x axes [0] : tensor<16x32xf32> -> tensor<32xf32>
    ```
  }];
}
def ZB_ReduceMeanOp : ZB_ReduceOp<"reduce_mean"> {
  let summary = "Mean over the given axes (the axes are removed)";
}

//===----------------------------------------------------------------------===//
// Communication (per-rank step functions, after zb-lower-pipeline)
//===----------------------------------------------------------------------===//

def ZB_SendOp : ZB_Op<"send"> {
  let summary = "Sends a tensor to another pipeline rank";
  let description = [{
    Point-to-point send of `value` to rank `peer` with message tag `tag`
    (see `zbrt_tag` in runtime/include/zbrt/zbrt.h). Non-blocking for the
    sender; matched by exactly one `zb.recv` on the peer.
    ```mlir
    zb.send %y to 1 tag 6 : tensor<16x32xf32>
    ```
  }];
  let arguments = (ins ZB_AnyTensor:$value, I64Attr:$peer, I64Attr:$tag);
  let assemblyFormat = "$value `to` $peer `tag` $tag attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def ZB_RecvOp : ZB_Op<"recv"> {
  let summary = "Receives a tensor from another pipeline rank (blocking)";
  let description = [{
    ```mlir
    %x = zb.recv from 0 tag 6 : tensor<16x32xf32>
    ```
  }];
  let arguments = (ins I64Attr:$peer, I64Attr:$tag);
  let results = (outs ZB_AnyTensor:$result);
  let assemblyFormat = "`from` $peer `tag` $tag attr-dict `:` type($result)";
  let hasVerifier = 1;
}

#endif // ZB_DIALECT_ZB_IR_ZBOPS_TD
