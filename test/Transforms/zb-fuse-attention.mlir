// RUN: zb-opt %s -zb-fuse-attention -split-input-file | FileCheck %s
// RUN: zb-opt %s -zb-fuse-attention -split-input-file | zb-opt -split-input-file | FileCheck %s
// RUN: zb-opt %s '-zb-fuse-attention=remarks=true' -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: zb-opt %s -zb-fuse-attention -zb-autodiff -split-input-file | FileCheck %s --check-prefix=GRAD
// RUN: zb-opt %s -zb-fuse-attention -zb-autocast -split-input-file | FileCheck %s --check-prefix=BF16

// Each fused attention is reported at its softmax (six of the seven
// cases below; the fourth is not fused).
// REMARK: zb-fuse-attention.mlir:[[#]]:8: remark: fused attention: causal, scale 2.500000e-01
// REMARK: zb-fuse-attention.mlir:[[#]]:8: remark: fused attention: causal, masked, scale 2.500000e-01
// REMARK: zb-fuse-attention.mlir:[[#]]:8: remark: fused attention: scale 1.000000e+00
// REMARK: zb-fuse-attention.mlir:[[#]]:8: remark: fused attention: scale 1.000000e+00
// REMARK: zb-fuse-attention.mlir:[[#]]:8: remark: fused attention: causal, scale 2.500000e-01
// REMARK: zb-fuse-attention.mlir:[[#]]:8: remark: fused attention: masked, scale 2.500000e-01
// REMARK-NOT: remark: fused

// GPT's causal self-attention as examples/gpt exports it: q k^T, a scale,
// the causal mask, softmax, P v.
// CHECK-LABEL: func.func @main
// CHECK: %[[Q:.*]] = zb.mul
// CHECK: %[[K:.*]] = zb.mul
// CHECK: %[[V:.*]] = zb.mul
// CHECK-NOT: zb.softmax
// CHECK-NOT: zb.batch_matmul
// CHECK: %[[O:.*]], %[[LSE:.*]] = zb.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 2.500000e-01 : f64} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8xf32>)
// CHECK-NOT: zb.causal_mask
// CHECK: zb.reduce_sum %[[O]]
// The gradient: one zb.attention_grad gives dq, dk and dv; no softmax.
// GRAD-LABEL: func.func @main
// GRAD: %[[O:.*]], %[[LSE:.*]] = zb.attention
// GRAD-NOT: zb.softmax
// GRAD: zb.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %[[O]], %[[LSE]], %{{.*}} {causal, scale = 2.500000e-01 : f64
// GRAD-NOT: zb.attention_grad
// GRAD-NOT: zb.softmax
// GRAD: return
// Under bfloat16 autocast: q, k, v and the result in bfloat16, lse float32.
// BF16-LABEL: func.func @main
// BF16: zb.attention {{.*}} : (tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>) -> (tensor<2x4x8x16xbf16>, tensor<2x4x8xf32>)
func.func @main(%x: tensor<2x4x8x16xf32>, %wq: tensor<2x4x8x16xf32> {zb.param},
                %wk: tensor<2x4x8x16xf32> {zb.param}, %wv: tensor<2x4x8x16xf32> {zb.param}) -> tensor<f32> {
  %q = zb.mul %x, %wq : tensor<2x4x8x16xf32>
  %k = zb.mul %x, %wk : tensor<2x4x8x16xf32>
  %v = zb.mul %x, %wv : tensor<2x4x8x16xf32>
  %s = zb.batch_matmul %q, %k {transpose_rhs} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
  %c = zb.constant dense<2.500000e-01> : tensor<2x4x8x8xf32>
  %ss = zb.mul %s, %c : tensor<2x4x8x8xf32>
  %m = zb.causal_mask %ss : tensor<2x4x8x8xf32>
  %p = zb.softmax %m axis 3 : tensor<2x4x8x8xf32>
  %o = zb.batch_matmul %p, %v : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %l = zb.reduce_sum %o axes [0, 1, 2, 3] : tensor<2x4x8x16xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A padding mask broadcast from [batch, keys] (kept small: reshaped to
// [2, 1, 1, 8]), k transposed by a zb.transpose, the scale as a division
// by a 0-d constant broadcast (torch's `/ sqrt(d)`), the scale after the
// mask and the causal mask first.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: tensor<2x4x8x16xf32>, %[[K:[a-z0-9]+]]: tensor<2x4x8x16xf32>, %[[V:[a-z0-9]+]]: tensor<2x4x8x16xf32>, %[[MASK:[a-z0-9]+]]: tensor<2x8xf32>
// CHECK-NOT: zb.transpose
// CHECK: %[[M:.*]] = zb.reshape %[[MASK]] : tensor<2x8xf32> -> tensor<2x1x1x8xf32>
// CHECK: zb.attention %[[Q]], %[[K]], %[[V]] mask %[[M]] {causal, scale = 2.500000e-01 : f64} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x1x1x8xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8xf32>)
// CHECK-NOT: zb.broadcast_in_dim
// CHECK-NOT: zb.constant
func.func @main(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>,
                  %mask: tensor<2x8xf32>, %w: tensor<2x4x8x16xf32> {zb.param}) -> tensor<f32> {
  %kt = zb.transpose %k permutation [0, 1, 3, 2] : tensor<2x4x8x16xf32> -> tensor<2x4x16x8xf32>
  %s = zb.batch_matmul %q, %kt : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %cm = zb.causal_mask %s {fill = -3.4028234663852886e+38 : f64} : tensor<2x4x8x8xf32>
  %mb = zb.broadcast_in_dim %mask dims [0, 3] : tensor<2x8xf32> -> tensor<2x4x8x8xf32>
  %sm = zb.add %mb, %cm : tensor<2x4x8x8xf32>
  %c0 = zb.constant dense<4.000000e+00> : tensor<f32>
  %c = zb.broadcast_in_dim %c0 dims [] : tensor<f32> -> tensor<2x4x8x8xf32>
  %sd = zb.div %sm, %c : tensor<2x4x8x8xf32>
  %p = zb.softmax %sd axis 3 : tensor<2x4x8x8xf32>
  %o = zb.batch_matmul %p, %v : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  %y = zb.mul %o, %w : tensor<2x4x8x16xf32>
  %l = zb.reduce_sum %y axes [0, 1, 2, 3] : tensor<2x4x8x16xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A bfloat16 model as exported (HF eager upcasts the softmax): the casts
// around the softmax belong to the attention; lse is float32.
// CHECK-LABEL: func.func @main
// CHECK: zb.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.000000e+00 : f64} : (tensor<8x8x16xbf16>, tensor<8x8x16xbf16>, tensor<8x8x16xbf16>) -> (tensor<8x8x16xbf16>, tensor<8x8xf32>)
// CHECK-NOT: zb.cast
func.func @main(%q: tensor<8x8x16xbf16>, %k: tensor<8x8x16xbf16>, %v: tensor<8x8x16xbf16>,
                %w: tensor<8x8x16xbf16> {zb.param}) -> tensor<bf16> {
  %s = zb.batch_matmul %q, %k {transpose_rhs} : (tensor<8x8x16xbf16>, tensor<8x8x16xbf16>) -> tensor<8x8x8xbf16>
  %sf = zb.cast %s : tensor<8x8x8xbf16> -> tensor<8x8x8xf32>
  %p = zb.softmax %sf axis 2 : tensor<8x8x8xf32>
  %pb = zb.cast %p : tensor<8x8x8xf32> -> tensor<8x8x8xbf16>
  %o = zb.batch_matmul %pb, %v : (tensor<8x8x8xbf16>, tensor<8x8x16xbf16>) -> tensor<8x8x16xbf16>
  %y = zb.mul %o, %w : tensor<8x8x16xbf16>
  %l = zb.reduce_sum %y axes [0, 1, 2] : tensor<8x8x16xbf16> -> tensor<bf16>
  return %l : tensor<bf16>
}

// -----

// Not fused: the probabilities are read twice; a softmax over another
// axis; a scale that is not a constant; a mask computed from a parameter
// (its gradient would be needed); S read twice.
// CHECK-LABEL: func.func @main
// CHECK-NOT: zb.attention
// CHECK-COUNT-5: zb.softmax
// CHECK-NOT: zb.attention
func.func @main(%q: tensor<8x8x16xf32>, %k: tensor<8x8x16xf32>, %v: tensor<8x8x16xf32>,
                   %x: tensor<8x8x8xf32>, %bias: tensor<8x8x8xf32> {zb.param}) -> tensor<f32> {
  %s = zb.batch_matmul %q, %k {transpose_rhs} : (tensor<8x8x16xf32>, tensor<8x8x16xf32>) -> tensor<8x8x8xf32>
  %p = zb.softmax %s axis 2 : tensor<8x8x8xf32>
  %o = zb.batch_matmul %p, %v : (tensor<8x8x8xf32>, tensor<8x8x16xf32>) -> tensor<8x8x16xf32>
  %l1 = zb.reduce_sum %p axes [0, 1, 2] : tensor<8x8x8xf32> -> tensor<f32>

  %s2 = zb.batch_matmul %q, %k {transpose_rhs} : (tensor<8x8x16xf32>, tensor<8x8x16xf32>) -> tensor<8x8x8xf32>
  %p2 = zb.softmax %s2 axis 1 : tensor<8x8x8xf32>
  %o2 = zb.batch_matmul %p2, %v : (tensor<8x8x8xf32>, tensor<8x8x16xf32>) -> tensor<8x8x16xf32>

  %s3 = zb.batch_matmul %q, %k {transpose_rhs} : (tensor<8x8x16xf32>, tensor<8x8x16xf32>) -> tensor<8x8x8xf32>
  %ss3 = zb.mul %s3, %x : tensor<8x8x8xf32>
  %p3 = zb.softmax %ss3 axis 2 : tensor<8x8x8xf32>
  %o3 = zb.batch_matmul %p3, %v : (tensor<8x8x8xf32>, tensor<8x8x16xf32>) -> tensor<8x8x16xf32>

  %s4 = zb.batch_matmul %q, %k {transpose_rhs} : (tensor<8x8x16xf32>, tensor<8x8x16xf32>) -> tensor<8x8x8xf32>
  %ss4 = zb.add %s4, %bias : tensor<8x8x8xf32>
  %p4 = zb.softmax %ss4 axis 2 : tensor<8x8x8xf32>
  %o4 = zb.batch_matmul %p4, %v : (tensor<8x8x8xf32>, tensor<8x8x16xf32>) -> tensor<8x8x16xf32>

  %s5 = zb.batch_matmul %q, %k {transpose_rhs} : (tensor<8x8x16xf32>, tensor<8x8x16xf32>) -> tensor<8x8x8xf32>
  %p5 = zb.softmax %s5 axis 2 : tensor<8x8x8xf32>
  %o5 = zb.batch_matmul %p5, %v : (tensor<8x8x8xf32>, tensor<8x8x16xf32>) -> tensor<8x8x16xf32>
  %l5 = zb.reduce_sum %s5 axes [0, 1, 2] : tensor<8x8x8xf32> -> tensor<f32>

  %a = zb.add %o, %o2 : tensor<8x8x16xf32>
  %b = zb.add %a, %o3 : tensor<8x8x16xf32>
  %c = zb.add %b, %o4 : tensor<8x8x16xf32>
  %d = zb.add %c, %o5 : tensor<8x8x16xf32>
  %l = zb.reduce_sum %d axes [0, 1, 2] : tensor<8x8x16xf32> -> tensor<f32>
  %l2 = zb.add %l, %l1 : tensor<f32>
  %l3 = zb.add %l2, %l5 : tensor<f32>
  return %l3 : tensor<f32>
}

// -----

// A model exported in bfloat16 with its softmax in bfloat16 (sdpa of a
// bf16 model): the lse is bfloat16 as fused; autocast makes it float32 (the
// softmax's statistics in float32, as autocast runs a softmax).
// CHECK-LABEL: func.func @main
// CHECK: zb.attention {{.*}} -> (tensor<4x8x16xbf16>, tensor<4x8xbf16>)
// BF16: zb.attention {{.*}} -> (tensor<4x8x16xbf16>, tensor<4x8xf32>)
func.func @main(%q: tensor<4x8x16xbf16>, %w: tensor<4x8x16xbf16> {zb.param}) -> tensor<bf16> {
  %s = zb.batch_matmul %q, %q {transpose_rhs} : (tensor<4x8x16xbf16>, tensor<4x8x16xbf16>) -> tensor<4x8x8xbf16>
  %p = zb.softmax %s axis 2 : tensor<4x8x8xbf16>
  %o = zb.batch_matmul %p, %q : (tensor<4x8x8xbf16>, tensor<4x8x16xbf16>) -> tensor<4x8x16xbf16>
  %y = zb.mul %o, %w : tensor<4x8x16xbf16>
  %l = zb.reduce_sum %y axes [0, 1, 2] : tensor<4x8x16xbf16> -> tensor<bf16>
  return %l : tensor<bf16>
}

// -----

// torch.onnx's export of scaled_dot_product_attention in a transformers
// causal LM called without attention_mask: q and k^T each multiplied by
// sqrt(scale) (0.5 here: scale 0.25), k^T as reshape(transpose(reshape(k))),
// the causal mask folded into a constant [batch, 1, Tq, Tk] broadcast over
// the heads. Fused as causal, with q and k themselves: no mask to read, no
// transpose, no multiplication left.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: tensor<2x2x4x16xf32>, %[[K:[a-z0-9]+]]: tensor<2x2x4x16xf32>, %[[V:[a-z0-9]+]]: tensor<2x2x4x16xf32>
// CHECK-NOT: zb.transpose
// CHECK-NOT: zb.constant
// CHECK: zb.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 2.500000e-01 : f64} : (tensor<2x2x4x16xf32>, tensor<2x2x4x16xf32>, tensor<2x2x4x16xf32>) -> (tensor<2x2x4x16xf32>, tensor<2x2x4xf32>)
// CHECK-NOT: zb.constant
// CHECK: zb.mul %{{.*}}, %{{[a-z0-9]+}} : tensor<2x2x4x16xf32>
// CHECK-NOT: zb.mul
func.func @main(%q: tensor<2x2x4x16xf32>, %k: tensor<2x2x4x16xf32>, %v: tensor<2x2x4x16xf32>,
                %w: tensor<2x2x4x16xf32> {zb.param}) -> tensor<f32> {
  %k3 = zb.reshape %k : tensor<2x2x4x16xf32> -> tensor<4x4x16xf32>
  %kt3 = zb.transpose %k3 permutation [0, 2, 1] : tensor<4x4x16xf32> -> tensor<4x16x4xf32>
  %kt = zb.reshape %kt3 : tensor<4x16x4xf32> -> tensor<2x2x16x4xf32>
  %cq = zb.constant dense<5.000000e-01> : tensor<2x2x4x16xf32>
  %qs = zb.mul %q, %cq : tensor<2x2x4x16xf32>
  %ck = zb.constant dense<5.000000e-01> : tensor<2x2x16x4xf32>
  %ks = zb.mul %kt, %ck : tensor<2x2x16x4xf32>
  %s = zb.batch_matmul %qs, %ks : (tensor<2x2x4x16xf32>, tensor<2x2x16x4xf32>) -> tensor<2x2x4x4xf32>
  %m = zb.constant dense<[[[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0, 0.0]]], [[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<2x1x4x4xf32>
  %mb = zb.broadcast_in_dim %m dims [0, 1, 2, 3] : tensor<2x1x4x4xf32> -> tensor<2x2x4x4xf32>
  %sm = zb.add %s, %mb : tensor<2x2x4x4xf32>
  %p = zb.softmax %sm axis 3 : tensor<2x2x4x4xf32>
  %o = zb.batch_matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32>
  %y = zb.mul %o, %w : tensor<2x2x4x16xf32>
  %l = zb.reduce_sum %y axes [0, 1, 2, 3] : tensor<2x2x4x16xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// The same with a constant mask that is not the causal one (the last key
// of the last query hidden too, as padding would): kept as the mask.
// CHECK-LABEL: func.func @main
// CHECK: zb.attention %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} {scale = 2.500000e-01 : f64} : (tensor<2x2x4x16xf32>, tensor<2x2x4x16xf32>, tensor<2x2x4x16xf32>, tensor<2x1x4x4xf32>)
func.func @main(%q: tensor<2x2x4x16xf32>, %k: tensor<2x2x4x16xf32>, %v: tensor<2x2x4x16xf32>,
                %w: tensor<2x2x4x16xf32> {zb.param}) -> tensor<f32> {
  %cq = zb.constant dense<5.000000e-01> : tensor<2x2x4x16xf32>
  %qs = zb.mul %q, %cq : tensor<2x2x4x16xf32>
  %ck = zb.constant dense<5.000000e-01> : tensor<2x2x4x16xf32>
  %ks = zb.mul %k, %ck : tensor<2x2x4x16xf32>
  %s = zb.batch_matmul %qs, %ks {transpose_rhs} : (tensor<2x2x4x16xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x4xf32>
  %m = zb.constant dense<[[[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0, -3.40282347E+38]]], [[[0.0, -3.40282347E+38, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, -3.40282347E+38, -3.40282347E+38], [0.0, 0.0, 0.0, -3.40282347E+38], [0.0, 0.0, 0.0, -3.40282347E+38]]]]> : tensor<2x1x4x4xf32>
  %mb = zb.broadcast_in_dim %m dims [0, 1, 2, 3] : tensor<2x1x4x4xf32> -> tensor<2x2x4x4xf32>
  %sm = zb.add %s, %mb : tensor<2x2x4x4xf32>
  %p = zb.softmax %sm axis 3 : tensor<2x2x4x4xf32>
  %o = zb.batch_matmul %p, %v : (tensor<2x2x4x4xf32>, tensor<2x2x4x16xf32>) -> tensor<2x2x4x16xf32>
  %y = zb.mul %o, %w : tensor<2x2x4x16xf32>
  %l = zb.reduce_sum %y axes [0, 1, 2, 3] : tensor<2x2x4x16xf32> -> tensor<f32>
  return %l : tensor<f32>
}
