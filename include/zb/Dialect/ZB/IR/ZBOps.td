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
def ZB_IndexTensor : RankedTensorOf<[I32, I64]>;
def ZB_CastSourceTensor : RankedTensorOf<[AnyFloat, I1, AnySignlessInteger]>;
def ZB_CastResultTensor : RankedTensorOf<[AnyFloat, I32, I64]>;

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
def ZB_PowOp : ZB_BinaryOp<"pow"> {
  let summary = "Elementwise power lhs^rhs (tensor exponent)";
  let description = [{
    Gradients: `d lhs = g * rhs * lhs^(rhs - 1)`, `d rhs = g * log(lhs) * result`
    (defined for `lhs > 0`).
  }];
}
def ZB_MaxOp : ZB_BinaryOp<"max", [Commutative]> {
  let summary = "Elementwise maximum";
  let description = [{
    The gradient goes to the larger operand; where both are equal each
    operand gets half of it (deterministic tie split, as in JAX and
    `torch.maximum`). NaN propagates (`arith.maximumf`).
  }];
}

class ZB_UnaryOp<string mnemonic, list<Trait> traits = []>
    : ZB_Op<mnemonic, !listconcat(traits, [Pure, AllTypesMatch<["operand", "result"]>,
        DeclareOpInterfaceMethods<ZB_GradientOpInterface>])> {
  let arguments = (ins ZB_FloatTensor:$operand);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($result)";
}

def ZB_NegOp : ZB_UnaryOp<"neg"> {
  let summary = "Elementwise negation";
  let hasFolder = 1;
}
def ZB_ReluOp : ZB_UnaryOp<"relu"> { let summary = "Elementwise max(x, 0)"; }
def ZB_ExpOp : ZB_UnaryOp<"exp"> { let summary = "Elementwise e^x"; }
def ZB_LogOp : ZB_UnaryOp<"log"> { let summary = "Elementwise natural logarithm"; }
def ZB_TanhOp : ZB_UnaryOp<"tanh"> { let summary = "Elementwise tanh"; }
def ZB_SqrtOp : ZB_UnaryOp<"sqrt"> { let summary = "Elementwise square root"; }
def ZB_RsqrtOp : ZB_UnaryOp<"rsqrt"> {
  let summary = "Elementwise reciprocal square root 1 / sqrt(x)";
}
def ZB_ErfOp : ZB_UnaryOp<"erf"> { let summary = "Elementwise error function"; }
def ZB_SigmoidOp : ZB_UnaryOp<"sigmoid"> {
  let summary = "Elementwise logistic sigmoid 1 / (1 + e^-x)";
}
def ZB_SiluOp : ZB_UnaryOp<"silu"> {
  let summary = "Elementwise SiLU (swish): x * sigmoid(x)";
}
def ZB_GeluOp : ZB_UnaryOp<"gelu"> {
  let summary = "Elementwise GELU, exact (erf) or tanh approximation";
  let description = [{
    `approximate = "none"` (default): `0.5 * x * (1 + erf(x / sqrt(2)))`;
    `approximate = "tanh"`: `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))`
    (the two forms of `torch.nn.functional.gelu`).
    ```mlir
    %y = zb.gelu %x {approximate = "tanh"} : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$operand,
                       DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let hasVerifier = 1;
}

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

def ZB_CastOp : ZB_Op<"cast", [Pure,
    DeclareOpInterfaceMethods<ZB_GradientOpInterface>]> {
  let summary = "Elementwise element-type conversion";
  let description = [{
    To a float: float to float rounds to nearest (`arith.extf` /
    `arith.truncf`); signed integers convert with `arith.sitofp`, `i1` with
    `arith.uitofp` (true is 1.0). To an i32/i64 integer (index arithmetic
    on data: position ids, shifted labels): floats truncate toward zero
    (`arith.fptosi`, as ONNX Cast and `torch.Tensor.long`; undefined for
    NaN or a value out of the integer's range), `i1` is 0 or 1, other
    integers sign-extend or truncate. The gradient of a float operand with
    a float result is the result gradient cast back; integer operands and
    integer results have none.
    ```mlir
    %f = zb.cast %ids : tensor<4xi64> -> tensor<4xf32>
    %p = zb.cast %positions : tensor<4xf32> -> tensor<4xi64>
    ```
  }];
  let arguments = (ins ZB_CastSourceTensor:$operand);
  let results = (outs ZB_CastResultTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($operand) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
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

def ZB_BatchMatmulOp : ZB_Op<"batch_matmul", [Pure,
    DeclareOpInterfaceMethods<ZB_GradientOpInterface>]> {
  let summary = "Batched matrix product with optional transposes";
  let description = [{
    Operands of rank r >= 3 with the same leading r-2 (batch) dimensions:
    for every batch index, `result[b] = op(lhs[b]) * op(rhs[b])` where `op`
    transposes the last two dimensions when `transpose_lhs` /
    `transpose_rhs` is present. With op(lhs[b]) of shape MxK and op(rhs[b])
    of shape KxN the result is `[batch..., M, N]`.
    ```mlir
    // attention scores: q [B*H, T, D] times k^T
    %s = zb.batch_matmul %q, %k {transpose_rhs}
        : (tensor<8x16x32xf32>, tensor<8x16x32xf32>) -> tensor<8x16x16xf32>
    ```
    Gradients as for `zb.matmul`, batch by batch.
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
  let arguments = (ins ZB_AnyTensor:$operand);
  let results = (outs ZB_AnyTensor:$result);
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
def ZB_ReduceMaxOp : ZB_ReduceOp<"reduce_max"> {
  let summary = "Maximum over the given axes (the axes are removed)";
  let description = [{
    The gradient goes to the maximal elements; when several elements of a
    reduced group are equal to the maximum, each gets an equal share
    (deterministic tie split).
  }];
}

def ZB_TransposeOp : ZB_Op<"transpose", [Pure,
    DeclareOpInterfaceMethods<ZB_GradientOpInterface>]> {
  let summary = "Permutes the dimensions of a tensor";
  let description = [{
    Result dimension `i` is operand dimension `permutation[i]`.
    ```mlir
    %t = zb.transpose %x permutation [0, 2, 1, 3]
        : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
    ```
  }];
  let arguments = (ins ZB_AnyTensor:$operand, DenseI64ArrayAttr:$permutation);
  let results = (outs ZB_AnyTensor:$result);
  let assemblyFormat =
      "$operand `permutation` $permutation attr-dict `:` type($operand) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def ZB_SliceOp : ZB_Op<"slice", [Pure,
    DeclareOpInterfaceMethods<ZB_GradientOpInterface>]> {
  let summary = "Static strided slice";
  let description = [{
    Takes, in every dimension d, the elements `start[d], start[d] +
    strides[d], ...` below `limit[d]` (all static, `0 <= start <= limit <=
    size`, `strides >= 1`). Result size: `ceil((limit - start) / stride)`.
    ```mlir
    %q = zb.slice %qkv [0, 0] to [16, 32] strides [1, 1]
        : tensor<16x96xf32> -> tensor<16x32xf32>
    ```
    The gradient is `zb.pad` of the result gradient with zeros.
  }];
  let arguments = (ins ZB_AnyTensor:$operand, DenseI64ArrayAttr:$start,
                       DenseI64ArrayAttr:$limit, DenseI64ArrayAttr:$strides);
  let results = (outs ZB_AnyTensor:$result);
  let assemblyFormat =
      "$operand $start `to` $limit `strides` $strides attr-dict `:` type($operand) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def ZB_PadOp : ZB_Op<"pad", [Pure,
    DeclareOpInterfaceMethods<ZB_GradientOpInterface>]> {
  let summary = "Pads with zeros: edge padding and interior padding";
  let description = [{
    In every dimension d puts `low[d]` zeros before, `high[d]` zeros after and
    `interior[d]` zeros between consecutive elements (all >= 0), as
    `stablehlo.pad` with a zero padding value. Result size:
    `low + high + size + (size - 1) * interior`. This is the gradient of
    `zb.slice` (and `zb.slice` the gradient of `zb.pad`).
    ```mlir
    %p = zb.pad %x low [0, 1] high [0, 2] interior [0, 0]
        : tensor<4x5xf32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$operand, DenseI64ArrayAttr:$low,
                       DenseI64ArrayAttr:$high, DenseI64ArrayAttr:$interior);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat =
      "$operand `low` $low `high` $high `interior` $interior attr-dict `:` type($operand) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def ZB_ConcatOp : ZB_Op<"concat", [Pure,
    DeclareOpInterfaceMethods<ZB_GradientOpInterface>]> {
  let summary = "Concatenates tensors along one axis";
  let description = [{
    ```mlir
    %c = zb.concat %a, %b axis 1
        : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<4x8xf32>
    ```
    The gradient of each operand is its slice of the result gradient.
  }];
  let arguments = (ins Variadic<ZB_AnyTensor>:$inputs, I64Attr:$axis);
  let results = (outs ZB_AnyTensor:$result);
  let assemblyFormat =
      "$inputs `axis` $axis attr-dict `:` `(` type($inputs) `)` `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def ZB_SplitOp : ZB_Op<"split", [Pure,
    DeclareOpInterfaceMethods<ZB_MultiResultGradientOpInterface>]> {
  let summary = "Splits a tensor along one axis into consecutive pieces";
  let description = [{
    The sizes of the pieces are those of the result types along `axis`; they
    add up to the operand's size there.
    ```mlir
    %q, %k, %v = zb.split %qkv axis 1
        : tensor<16x96xf32> -> tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>
    ```
    Gradient (MultiResultGradientOpInterface): the concatenation of the
    result gradients, zeros for results that do not reach the loss.
  }];
  let arguments = (ins ZB_AnyTensor:$operand, I64Attr:$axis);
  let results = (outs Variadic<ZB_AnyTensor>:$results);
  let assemblyFormat =
      "$operand `axis` $axis attr-dict `:` type($operand) `->` type($results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Embedding lookup
//===----------------------------------------------------------------------===//

def ZB_GatherOp : ZB_Op<"gather", [Pure,
    DeclareOpInterfaceMethods<ZB_GradientOpInterface>]> {
  let summary = "Gathers rows of a table (embedding lookup)";
  let description = [{
    `result[i..., j...] = table[indices[i...], j...]`: the result shape is
    the indices' shape followed by the table's shape without its first
    dimension. Indices (i32 or i64) must lie in `[0, table rows)`; an index
    out of range is undefined behaviour (like an out-of-bounds load).
    ```mlir
    %e = zb.gather %wte, %tokens : (tensor<512x64xf32>, tensor<4x16xi64>) -> tensor<4x16x64xf32>
    ```
    Gradient w.r.t. the table: `zb.scatter_add` of the result gradient;
    the indices are not differentiable.
  }];
  let arguments = (ins ZB_FloatTensor:$table, ZB_IndexTensor:$indices);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat =
      "$table `,` $indices attr-dict `:` `(` type($table) `,` type($indices) `)` `->` type($result)";
  let hasVerifier = 1;
}

def ZB_ScatterAddOp : ZB_Op<"scatter_add", [Pure,
    DeclareOpInterfaceMethods<ZB_GradientOpInterface>]> {
  let summary = "Sums rows into a zero table at the given indices";
  let description = [{
    Starts from a zero tensor of the result type and adds
    `updates[i..., j...]` to `result[indices[i...], j...]`, in row-major
    order of `i` (deterministic). The adjoint of `zb.gather`: the shapes
    are those of gather with `updates` in place of gather's result.
    ```mlir
    %dw = zb.scatter_add %g, %tokens : (tensor<4x16x64xf32>, tensor<4x16xi64>) -> tensor<512x64xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$updates, ZB_IndexTensor:$indices);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat =
      "$updates `,` $indices attr-dict `:` `(` type($updates) `,` type($indices) `)` `->` type($result)";
  let hasVerifier = 1;
}

def ZB_OneHotOp : ZB_Op<"one_hot", [Pure]> {
  let summary = "One-hot encoding of integer class indices";
  let description = [{
    `result[i..., c] = (indices[i...] == c) ? 1 : 0`, the result shape is the
    indices' shape followed by the number of classes. An index outside
    `[0, classes)` gives a row of zeros.
    ```mlir
    %oh = zb.one_hot %targets : tensor<16xi64> -> tensor<16x512xf32>
    ```
  }];
  let arguments = (ins ZB_IndexTensor:$indices);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = "$indices attr-dict `:` type($indices) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Composite ops (neural-network layers)
//===----------------------------------------------------------------------===//

def ZB_SoftmaxOp : ZB_Op<"softmax", [Pure, AllTypesMatch<["operand", "result"]>,
    DeclareOpInterfaceMethods<ZB_GradientOpInterface>]> {
  let summary = "Softmax along one axis";
  let description = [{
    `result = exp(x - max) / sum(exp(x - max))` along `axis` (numerically
    stable). Gradient: `dx = y * (g - sum(g * y, axis))`.
    ```mlir
    %p = zb.softmax %scores axis 2 : tensor<8x16x16xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$operand, I64Attr:$axis);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = "$operand `axis` $axis attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def ZB_LayerNormOp : ZB_Op<"layer_norm", [Pure,
    DeclareOpInterfaceMethods<ZB_GradientOpInterface>]> {
  let summary = "Layer normalization over the last dimension, with weight and bias";
  let description = [{
    `y = (x - mean(x)) / sqrt(var(x) + epsilon) * weight + bias`, mean and
    (biased) variance over the last dimension; `weight` and `bias` are 1-D
    of that size (`torch.nn.LayerNorm(d)`).
    ```mlir
    %y = zb.layer_norm %x, %w, %b {epsilon = 1.0e-05 : f64}
        : (tensor<4x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<4x16x64xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$input, ZB_FloatTensor:$weight,
                       ZB_FloatTensor:$bias,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat =
      "$input `,` $weight `,` $bias attr-dict `:` `(` type($input) `,` type($weight) `,` type($bias) `)` `->` type($result)";
  let hasVerifier = 1;
}

def ZB_RmsNormOp : ZB_Op<"rms_norm", [Pure,
    DeclareOpInterfaceMethods<ZB_GradientOpInterface>]> {
  let summary = "RMS normalization over the last dimension, with weight";
  let description = [{
    `y = x / sqrt(mean(x^2) + epsilon) * weight` over the last dimension;
    `weight` is 1-D of that size (Llama's RMSNorm).
    ```mlir
    %y = zb.rms_norm %x, %w {epsilon = 1.0e-06 : f64}
        : (tensor<4x16x64xf32>, tensor<64xf32>) -> tensor<4x16x64xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$input, ZB_FloatTensor:$weight,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$epsilon);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat =
      "$input `,` $weight attr-dict `:` `(` type($input) `,` type($weight) `)` `->` type($result)";
  let hasVerifier = 1;
}

def ZB_CrossEntropyOp : ZB_Op<"cross_entropy", [Pure,
    DeclareOpInterfaceMethods<ZB_MultiResultGradientOpInterface>]> {
  let summary = "Mean softmax cross-entropy with integer class targets";
  let description = [{
    Logits `[N..., C]`, targets `[N...]` (i32 or i64, in `[0, C)`), result a
    0-d tensor: `mean over N... of (logsumexp(logits[n, :]) -
    logits[n, targets[n]])` (`torch.nn.functional.cross_entropy` with
    the default mean reduction). With `ignore_index = k` the positions whose
    target is `k` count neither in the sum nor in the mean's denominator,
    as `cross_entropy(..., ignore_index=k)` (torch's default -100, which
    Hugging Face models put on padding and on the last position of a
    shifted label row); every position ignored gives NaN (0/0, as torch).

    The result's element type is the logits' or a wider float type: the
    op then computes in the result's type (bfloat16 logits, a float32
    loss: torch's autocast, which runs cross-entropy in float32, without a
    float32 copy of the logits). The optional second result `lse`
    `[N...]`, of the result's element type, is `logsumexp(logits[n, :])`
    per position (zb-fuse-cross-entropy adds it).

    Gradient w.r.t. the logits: `(softmax(logits) - one_hot(targets)) *
    valid * g / count(valid)` (plus `softmax(logits) * g_lse` when `lse`
    reaches the loss), rounded to the logits' type. With `lse` the
    softmax is `exp(logits - lse)`, one elementwise pass over the kept
    logits and lse: the backward pass neither recomputes the row
    statistics nor keeps the probabilities (the fused classifier of
    llm.c and Liger-Kernel). Targets are not differentiable.
    ```mlir
    %loss = zb.cross_entropy %logits, %targets
        : (tensor<64x512xf32>, tensor<64xi64>) -> tensor<f32>
    %masked = zb.cross_entropy %logits, %labels {ignore_index = -100 : i64}
        : (tensor<64x512xf32>, tensor<64xi64>) -> tensor<f32>
    %l, %lse = zb.cross_entropy %logits16, %labels
        : (tensor<64x512xbf16>, tensor<64xi64>) -> tensor<f32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$logits, ZB_IndexTensor:$targets,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs ZB_FloatTensor:$result, Optional<ZB_FloatTensor>:$lse);
  let builders = [OpBuilder<(ins "::mlir::Type":$result,
                                "::mlir::Value":$logits,
                                "::mlir::Value":$targets), [{
    build($_builder, $_state, result, ::mlir::Type(), logits, targets,
          ::mlir::IntegerAttr());
  }]>];
  let assemblyFormat =
      "$logits `,` $targets attr-dict `:` `(` type($logits) `,` type($targets) `)` `->` type($result) (`,` type($lse)^)?";
  let hasVerifier = 1;
}

def ZB_CausalMaskOp : ZB_Op<"causal_mask", [Pure,
    AllTypesMatch<["operand", "result"]>,
    DeclareOpInterfaceMethods<ZB_GradientOpInterface>]> {
  let summary = "Causal attention mask on the last two dimensions";
  let description = [{
    For attention scores `[..., Tq, Tk]` replaces every element with column
    `k > q` (a key after the query) by `fill` (default: negative infinity,
    so that a following `zb.softmax` gives it zero weight), and keeps the
    others; like `scores.masked_fill(triu(ones(Tq, Tk), 1), fill)`.
    ```mlir
    %m = zb.causal_mask %scores : tensor<8x16x16xf32>
    ```
    Gradient: the result gradient with the masked elements set to zero.
  }];
  let arguments = (ins ZB_FloatTensor:$operand, OptionalAttr<F64Attr>:$fill);
  let results = (outs ZB_FloatTensor:$result);
  let assemblyFormat = "$operand attr-dict `:` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The value written to masked elements (default -inf).
    double getFillValue();
  }];
}

//===----------------------------------------------------------------------===//
// Fused attention (zb-fuse-attention)
//===----------------------------------------------------------------------===//

def ZB_AttentionOp : ZB_Op<"attention", [Pure,
    DeclareOpInterfaceMethods<ZB_MultiResultGradientOpInterface>]> {
  let summary = "Scaled dot-product attention with its log-sum-exp";
  let description = [{
    For query `[batch..., Tq, D]`, key `[batch..., Tk, D]` and value
    `[batch..., Tk, Dv]` (the same batch dimensions, rank >= 3):

        S      = scale * query key^T (+ mask) (keys after the query -inf
                 where `causal`: key k > query q)
        result = softmax(S, last axis) value          [batch..., Tq, Dv]
        lse    = log(sum(exp(S), last axis))          [batch..., Tq]

    `mask` is optional and additive: of the rank of S, each dimension that
    of S or 1 (broadcast), any float type (torch's float attn_mask;
    `-inf` or a large negative number where a key is hidden). `lse` is the
    row statistic that the backward pass recomputes the probabilities
    from, as FlashAttention does (Dao 2023, Algorithms 1 and 2): only
    `result` and `lse` need to be kept for the gradient, not the
    `Tq x Tk` probabilities. A row whose every key is hidden (all of its
    S -inf) gives a zero result and lse -inf, as torch's
    scaled_dot_product_attention with its guard `where(isnan(P), 0, P)`.
    `scale` must be positive. `result` has the
    query's element type; `lse` any float type (float32 under bfloat16
    autocast, where S and its softmax are computed in float32 and the
    products in bfloat16 with float32 accumulation).

    zb-fuse-attention forms this op from the exporters' matmul, scale,
    mask, softmax and matmul. Gradient (MultiResultGradientOpInterface):
    `zb.attention_grad`. Lowered by zb-decompose-attention.
    ```mlir
    %o, %lse = zb.attention %q, %k, %v {causal, scale = 0.125 : f64}
        : (tensor<2x4x16x64xf32>, tensor<2x4x16x64xf32>,
           tensor<2x4x16x64xf32>) -> (tensor<2x4x16x64xf32>, tensor<2x4x16xf32>)
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$query, ZB_FloatTensor:$key,
                       ZB_FloatTensor:$value,
                       Optional<ZB_FloatTensor>:$mask,
                       F64Attr:$scale, UnitAttr:$causal);
  let results = (outs ZB_FloatTensor:$result, ZB_FloatTensor:$lse);
  let assemblyFormat =
      "$query `,` $key `,` $value (`mask` $mask^)? attr-dict `:` `(` type($query) `,` type($key) `,` type($value) (`,` type($mask)^)? `)` `->` `(` type($result) `,` type($lse) `)`";
  let hasVerifier = 1;
}

def ZB_AttentionGradOp : ZB_Op<"attention_grad", [Pure,
    AttrSizedOperandSegments]> {
  let summary = "Gradients of zb.attention from its saved result and lse";
  let description = [{
    The gradients of a `zb.attention` with respect to its query, key and
    value, given `result_grad` (and, when the forward's `lse` reaches the
    loss, `lse_grad`), recomputing the probabilities blockwise-ready from
    the saved `lse` instead of keeping them (FlashAttention-2's backward,
    Dao 2023, Algorithm 2):

        P  = exp(S - lse)                 (S as in zb.attention)
        dV = P^T dO
        dP = dO V^T
        Di = rowsum(dO * O) (- lse_grad)
        dS = P * (dP - Di)
        dQ = scale * dS K,   dK = scale * dS^T Q

    Operands and attributes as the forward op's, plus its two results.
    Not differentiable (no second derivatives).
    ```mlir
    %dq, %dk, %dv = zb.attention_grad %q, %k, %v, %o, %lse, %do
        mask(%m : tensor<8x1x16xf32>) {causal, scale = 0.125 : f64}
        : (tensor<8x16x64xf32>, tensor<8x16x64xf32>, tensor<8x16x64xf32>,
           tensor<8x16x64xf32>, tensor<8x16xf32>, tensor<8x16x64xf32>)
          -> (tensor<8x16x64xf32>, tensor<8x16x64xf32>, tensor<8x16x64xf32>)
    ```
  }];
  let arguments = (ins ZB_FloatTensor:$query, ZB_FloatTensor:$key,
                       ZB_FloatTensor:$value, ZB_FloatTensor:$result,
                       ZB_FloatTensor:$lse, ZB_FloatTensor:$result_grad,
                       Optional<ZB_FloatTensor>:$mask,
                       Optional<ZB_FloatTensor>:$lse_grad,
                       F64Attr:$scale, UnitAttr:$causal);
  let results = (outs ZB_FloatTensor:$query_grad, ZB_FloatTensor:$key_grad,
                      ZB_FloatTensor:$value_grad);
  let assemblyFormat =
      "$query `,` $key `,` $value `,` $result `,` $lse `,` $result_grad (`mask` `(` $mask^ `:` type($mask) `)`)? (`lse_grad` `(` $lse_grad^ `:` type($lse_grad) `)`)? attr-dict `:` `(` type($query) `,` type($key) `,` type($value) `,` type($result) `,` type($lse) `,` type($result_grad) `)` `->` `(` type($query_grad) `,` type($key_grad) `,` type($value_grad) `)`";
  let hasVerifier = 1;
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
