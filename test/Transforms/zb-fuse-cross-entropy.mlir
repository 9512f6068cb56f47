// RUN: zb-opt %s -zb-fuse-cross-entropy -split-input-file | FileCheck %s
// RUN: zb-opt %s -zb-fuse-cross-entropy -split-input-file | zb-opt -split-input-file | FileCheck %s
// RUN: zb-opt %s '-zb-fuse-cross-entropy=remarks=true' -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: zb-opt %s -zb-fuse-cross-entropy -zb-autodiff -split-input-file | FileCheck %s --check-prefix=GRAD

// Each rewritten op is reported at the op; the fourth case already has
// its lse and is left alone.
// REMARK: zb-fuse-cross-entropy.mlir:[[#]]:11: remark: zb-fuse-cross-entropy: lse kept for the gradient{{$}}
// REMARK: zb-fuse-cross-entropy.mlir:[[#]]:11: remark: zb-fuse-cross-entropy: lse kept for the gradient; logits read in 'bf16' (widening cast absorbed)
// REMARK: zb-fuse-cross-entropy.mlir:[[#]]:11: remark: zb-fuse-cross-entropy: lse kept for the gradient{{$}}
// REMARK: zb-fuse-cross-entropy.mlir:[[#]]:11: remark: zb-fuse-cross-entropy: lse kept for the gradient{{$}}
// REMARK-NOT: remark:

// float32 logits: the op gains its lse, nothing else changes.
// CHECK-LABEL: func.func @main
// CHECK: %[[LOGITS:.*]] = zb.matmul
// CHECK: %[[LOSS:.*]], %[[LSE:.*]] = zb.cross_entropy %[[LOGITS]], %{{.*}} : (tensor<8x32xf32>, tensor<8xi64>) -> tensor<f32>, tensor<8xf32>
// CHECK: return %[[LOSS]]
// The gradient: softmax as exp(logits - lse), one elementwise chain; no
// row reduction of the logits in the backward.
// GRAD-LABEL: func.func @main
// GRAD: %[[LOGITS:.*]] = zb.matmul
// GRAD: %[[LOSS:.*]], %[[LSE:.*]] = zb.cross_entropy %[[LOGITS]]
// GRAD: %[[B:.*]] = zb.broadcast_in_dim %[[LSE]]
// GRAD: %[[S:.*]] = zb.sub %[[LOGITS]], %[[B]]
// GRAD: zb.exp %[[S]]
// GRAD-NOT: zb.softmax
// GRAD-NOT: zb.reduce_max
// GRAD: return
func.func @main(%x: tensor<8x16xf32>, %w: tensor<32x16xf32> {zb.param},
                %t: tensor<8xi64>) -> tensor<f32> {
  %logits = zb.matmul %x, %w {transpose_rhs} : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  %loss = zb.cross_entropy %logits, %t : (tensor<8x32xf32>, tensor<8xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A language model's head under bfloat16 autocast, as Hugging Face exports
// it: bfloat16 logits [batch, T, vocab], `logits.float()`, the view to
// [batch * T, vocab], cross-entropy with ignore_index. The cast is
// absorbed: the reshape reads the bfloat16 logits and the op computes in
// its float32 result type.
// CHECK-LABEL: func.func @main
// CHECK: %[[LOGITS:.*]] = zb.reshape {{.*}} -> tensor<2x4x32xbf16>
// CHECK-NOT: zb.cast
// CHECK: %[[FLAT:.*]] = zb.reshape %[[LOGITS]] : tensor<2x4x32xbf16> -> tensor<8x32xbf16>
// CHECK-NOT: zb.cast
// CHECK: %{{.*}}, %{{.*}} = zb.cross_entropy %[[FLAT]], %{{.*}} {ignore_index = -100 : i64} : (tensor<8x32xbf16>, tensor<8xi64>) -> tensor<f32>, tensor<8xf32>
// The gradient is computed in float32 and rounded to bfloat16 once, for
// the matmul's gradient products.
// GRAD-LABEL: func.func @main
// GRAD: %[[LOSS:.*]], %[[LSE:.*]] = zb.cross_entropy %[[FLAT:[0-9]+]], %{{.*}} {ignore_index = -100 : i64
// GRAD: %[[WIDE:.*]] = zb.cast %[[FLAT]] {{.*}}: tensor<8x32xbf16> -> tensor<8x32xf32>
// GRAD: zb.broadcast_in_dim %[[LSE]]
// GRAD: zb.exp
// GRAD: zb.cast %{{.*}}: tensor<8x32xf32> -> tensor<8x32xbf16>
// GRAD-NOT: zb.softmax
// GRAD: return
func.func @main(%x: tensor<8x16xbf16>, %w: tensor<32x16xbf16> {zb.param},
                %t: tensor<8xi64>) -> tensor<f32> {
  %flatlogits = zb.matmul %x, %w {transpose_rhs} : (tensor<8x16xbf16>, tensor<32x16xbf16>) -> tensor<8x32xbf16>
  %logits = zb.reshape %flatlogits : tensor<8x32xbf16> -> tensor<2x4x32xbf16>
  %wide = zb.cast %logits : tensor<2x4x32xbf16> -> tensor<2x4x32xf32>
  %flat = zb.reshape %wide : tensor<2x4x32xf32> -> tensor<8x32xf32>
  %loss = zb.cross_entropy %flat, %t {ignore_index = -100 : i64} : (tensor<8x32xf32>, tensor<8xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A float32 copy read elsewhere too stays: the op gains its lse only.
// CHECK-LABEL: func.func @main
// CHECK: %[[WIDE:.*]] = zb.cast
// CHECK: zb.cross_entropy %[[WIDE]], %{{.*}} : (tensor<8x32xf32>, tensor<8xi64>) -> tensor<f32>, tensor<8xf32>
func.func @main(%a: tensor<8x32xbf16>, %b: tensor<8x32xbf16> {zb.param},
                %t: tensor<8xi64>) -> tensor<f32> {
  %logits = zb.add %a, %b : tensor<8x32xbf16>
  %wide = zb.cast %logits : tensor<8x32xbf16> -> tensor<8x32xf32>
  %loss = zb.cross_entropy %wide, %t : (tensor<8x32xf32>, tensor<8xi64>) -> tensor<f32>
  %z = zb.reduce_sum %wide axes [0, 1] : tensor<8x32xf32> -> tensor<f32>
  %total = zb.add %loss, %z : tensor<f32>
  return %total : tensor<f32>
}

// -----

// An op that already has its lse is left as it is.
// CHECK-LABEL: func.func @main
// CHECK: zb.cross_entropy %{{.*}}, %{{.*}} : (tensor<8x32xf32>, tensor<8xi64>) -> tensor<f32>, tensor<8xf32>
// CHECK-NOT: zb.cross_entropy
func.func @main(%a: tensor<8x32xf32>, %b: tensor<8x32xf32> {zb.param},
                %t: tensor<8xi64>) -> tensor<f32> {
  %logits = zb.add %a, %b : tensor<8x32xf32>
  %loss, %lse = zb.cross_entropy %logits, %t : (tensor<8x32xf32>, tensor<8xi64>) -> tensor<f32>, tensor<8xf32>
  return %loss : tensor<f32>
}

// -----

// A narrowing cast is not absorbed (the op would compute in less than it
// was asked to).
// CHECK-LABEL: func.func @main
// CHECK: %[[NARROW:.*]] = zb.cast %{{.*}} : tensor<8x32xf32> -> tensor<8x32xbf16>
// CHECK: zb.cross_entropy %[[NARROW]], %{{.*}} : (tensor<8x32xbf16>, tensor<8xi64>) -> tensor<bf16>, tensor<8xbf16>
func.func @main(%a: tensor<8x32xf32>, %b: tensor<8x32xf32> {zb.param},
                %t: tensor<8xi64>) -> tensor<bf16> {
  %logits = zb.add %a, %b : tensor<8x32xf32>
  %narrow = zb.cast %logits : tensor<8x32xf32> -> tensor<8x32xbf16>
  %loss = zb.cross_entropy %narrow, %t : (tensor<8x32xbf16>, tensor<8xi64>) -> tensor<bf16>
  return %loss : tensor<bf16>
}
