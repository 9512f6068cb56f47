// RUN: zb-opt %s --split-input-file -zb-autocast -zb-autodiff -zb-split-backward=rebuild-attention-views=true | FileCheck %s
// RUN: zb-opt %s --split-input-file -zb-autocast -zb-autodiff -zb-split-backward | FileCheck %s --check-prefix=SAVED

// rebuild-attention-views: the bfloat16 attention gradient reads q, k and v
// as head views (slice, reshape, transpose) rebuilt in B from the
// forward's QKV projection %[[QKV]], and the result as the head view of the
// merged result %[[Y]] that the output projection reads: what B needs from
// F is those two token-major tensors (zb-gpu-attention-calls reads them in
// place), not the four [B, H, T, D] copies.
// CHECK-LABEL: func.func @main
// CHECK: %[[QKV:.*]] = zb.matmul %{{.*}}, %{{.*}} {zb.id = 2 : i64} : (tensor<80x32xbf16>, tensor<32x96xbf16>) -> tensor<80x96xbf16>
// CHECK: %[[O:.*]], %[[LSE:.*]] = zb.attention
// CHECK: %[[OT:.*]] = zb.transpose %[[O]] permutation [0, 2, 1, 3] {zb.id = 13 : i64}
// CHECK: %[[Y:.*]] = zb.reshape %[[OT]] {zb.id = 14 : i64} : tensor<2x40x2x16xbf16> -> tensor<80x32xbf16>
// CHECK: %[[DY:.*]] = zb.transpose %{{.*}} permutation [0, 2, 1, 3] {zb.act_grad, zb.origin = 13 : i64, zb.phase = #zb.phase<B>}
// CHECK: %[[QS:.*]] = zb.slice %[[QKV]] [0, 0] to [80, 32] strides [1, 1] {zb.origin = 12 : i64, zb.phase = #zb.phase<B>}
// CHECK: %[[QR:.*]] = zb.reshape %[[QS]] {zb.origin = 12 : i64, zb.phase = #zb.phase<B>}
// CHECK: %[[Q:.*]] = zb.transpose %[[QR]] permutation [0, 2, 1, 3] {zb.origin = 12 : i64, zb.phase = #zb.phase<B>}
// CHECK: zb.slice %[[QKV]] [0, 32] to [80, 64]
// CHECK: %[[K:.*]] = zb.transpose
// CHECK: zb.slice %[[QKV]] [0, 64] to [80, 96]
// CHECK: %[[V:.*]] = zb.transpose
// CHECK: %[[YR:.*]] = zb.reshape %[[Y]] {zb.origin = 12 : i64, zb.phase = #zb.phase<B>} : tensor<80x32xbf16> -> tensor<2x40x2x16xbf16>
// CHECK: %[[YO:.*]] = zb.transpose %[[YR]] permutation [0, 2, 1, 3] {zb.origin = 12 : i64, zb.phase = #zb.phase<B>} : tensor<2x40x2x16xbf16> -> tensor<2x2x40x16xbf16>
// CHECK: zb.attention_grad %[[Q]], %[[K]], %[[V]], %[[YO]], %[[LSE]], %[[DY]]

// Without the option the gradient reads the forward's own views (saved).
// SAVED: %[[Q:.*]] = zb.transpose %{{.*}} permutation [0, 2, 1, 3] {zb.id = 5 : i64}
// SAVED: %[[K:.*]] = zb.transpose %{{.*}} permutation [0, 2, 1, 3] {zb.id = 8 : i64}
// SAVED: %[[V:.*]] = zb.transpose %{{.*}} permutation [0, 2, 1, 3] {zb.id = 11 : i64}
// SAVED: %[[O:.*]], %[[LSE:.*]] = zb.attention %[[Q]], %[[K]], %[[V]]
// SAVED: zb.attention_grad %[[Q]], %[[K]], %[[V]], %[[O]], %[[LSE]]
func.func @main(%x: tensor<80x32xf32>, %w: tensor<32x96xf32> {zb.param}, %wo: tensor<32x32xf32> {zb.param}) -> tensor<f32> {
  %qkv = zb.matmul %x, %w : (tensor<80x32xf32>, tensor<32x96xf32>) -> tensor<80x96xf32>
  %qs = zb.slice %qkv [0, 0] to [80, 32] strides [1, 1] : tensor<80x96xf32> -> tensor<80x32xf32>
  %qr = zb.reshape %qs : tensor<80x32xf32> -> tensor<2x40x2x16xf32>
  %q = zb.transpose %qr permutation [0, 2, 1, 3] : tensor<2x40x2x16xf32> -> tensor<2x2x40x16xf32>
  %ks = zb.slice %qkv [0, 32] to [80, 64] strides [1, 1] : tensor<80x96xf32> -> tensor<80x32xf32>
  %kr = zb.reshape %ks : tensor<80x32xf32> -> tensor<2x40x2x16xf32>
  %k = zb.transpose %kr permutation [0, 2, 1, 3] : tensor<2x40x2x16xf32> -> tensor<2x2x40x16xf32>
  %vs = zb.slice %qkv [0, 64] to [80, 96] strides [1, 1] : tensor<80x96xf32> -> tensor<80x32xf32>
  %vr = zb.reshape %vs : tensor<80x32xf32> -> tensor<2x40x2x16xf32>
  %v = zb.transpose %vr permutation [0, 2, 1, 3] : tensor<2x40x2x16xf32> -> tensor<2x2x40x16xf32>
  %o, %lse = zb.attention %q, %k, %v {causal, scale = 0.25 : f64} : (tensor<2x2x40x16xf32>, tensor<2x2x40x16xf32>, tensor<2x2x40x16xf32>) -> (tensor<2x2x40x16xf32>, tensor<2x2x40xf32>)
  %ot = zb.transpose %o permutation [0, 2, 1, 3] : tensor<2x2x40x16xf32> -> tensor<2x40x2x16xf32>
  %y = zb.reshape %ot : tensor<2x40x2x16xf32> -> tensor<80x32xf32>
  %z = zb.matmul %y, %wo : (tensor<80x32xf32>, tensor<32x32xf32>) -> tensor<80x32xf32>
  %l = zb.reduce_sum %z axes [0, 1] : tensor<80x32xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Head dimension 8 (the kernels take multiples of 16): the gradient reads
// the forward's views, as without the option.
// CHECK-LABEL: func.func @main
// CHECK: %[[Q:.*]] = zb.transpose %{{.*}} permutation [0, 2, 1, 3] {zb.id = 5 : i64}
// CHECK: %[[K:.*]] = zb.transpose %{{.*}} permutation [0, 2, 1, 3] {zb.id = 8 : i64}
// CHECK: %[[V:.*]] = zb.transpose %{{.*}} permutation [0, 2, 1, 3] {zb.id = 11 : i64}
// CHECK: %[[O:.*]], %[[LSE:.*]] = zb.attention %[[Q]], %[[K]], %[[V]]
// CHECK: zb.attention_grad %[[Q]], %[[K]], %[[V]], %[[O]], %[[LSE]]
func.func @main(%x: tensor<80x32xf32>, %w: tensor<32x96xf32> {zb.param}, %wo: tensor<32x32xf32> {zb.param}) -> tensor<f32> {
  %qkv = zb.matmul %x, %w : (tensor<80x32xf32>, tensor<32x96xf32>) -> tensor<80x96xf32>
  %qs = zb.slice %qkv [0, 0] to [80, 32] strides [1, 1] : tensor<80x96xf32> -> tensor<80x32xf32>
  %qr = zb.reshape %qs : tensor<80x32xf32> -> tensor<2x40x4x8xf32>
  %q = zb.transpose %qr permutation [0, 2, 1, 3] : tensor<2x40x4x8xf32> -> tensor<2x4x40x8xf32>
  %ks = zb.slice %qkv [0, 32] to [80, 64] strides [1, 1] : tensor<80x96xf32> -> tensor<80x32xf32>
  %kr = zb.reshape %ks : tensor<80x32xf32> -> tensor<2x40x4x8xf32>
  %k = zb.transpose %kr permutation [0, 2, 1, 3] : tensor<2x40x4x8xf32> -> tensor<2x4x40x8xf32>
  %vs = zb.slice %qkv [0, 64] to [80, 96] strides [1, 1] : tensor<80x96xf32> -> tensor<80x32xf32>
  %vr = zb.reshape %vs : tensor<80x32xf32> -> tensor<2x40x4x8xf32>
  %v = zb.transpose %vr permutation [0, 2, 1, 3] : tensor<2x40x4x8xf32> -> tensor<2x4x40x8xf32>
  %o, %lse = zb.attention %q, %k, %v {causal, scale = 0.25 : f64} : (tensor<2x4x40x8xf32>, tensor<2x4x40x8xf32>, tensor<2x4x40x8xf32>) -> (tensor<2x4x40x8xf32>, tensor<2x4x40xf32>)
  %ot = zb.transpose %o permutation [0, 2, 1, 3] : tensor<2x4x40x8xf32> -> tensor<2x40x4x8xf32>
  %y = zb.reshape %ot : tensor<2x40x4x8xf32> -> tensor<80x32xf32>
  %z = zb.matmul %y, %wo : (tensor<80x32xf32>, tensor<32x32xf32>) -> tensor<80x32xf32>
  %l = zb.reduce_sum %z axes [0, 1] : tensor<80x32xf32> -> tensor<f32>
  return %l : tensor<f32>
}
