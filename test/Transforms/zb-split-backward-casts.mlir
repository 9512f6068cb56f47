// RUN: zb-opt %s -zb-autocast -zb-autodiff -zb-split-backward | FileCheck %s
// RUN: zb-opt %s -zb-autocast -zb-autodiff -zb-split-backward=recompute=false | FileCheck %s --check-prefix=SAVED

// zb-autocast's bfloat16 copies of parameters are rebuilt in the backward
// (one cast per origin and phase, with the user's origin and phase) instead
// of being saved per microbatch: the B matmul dX = dY W^T reads its own
// cast of %w2. The cast of the data input %x is an activation: kept.
// CHECK-LABEL: func.func @main
// CHECK: %[[X:.*]] = zb.cast %arg0 {zb.id = 0 : i64} : tensor<4x3xf32> -> tensor<4x3xbf16>
// CHECK: %[[W2F:.*]] = zb.cast %arg2 {zb.id = 3 : i64}
// CHECK: zb.matmul %{{.*}}, %[[W2F]] {zb.id = 4 : i64}
// CHECK: %[[W2B:.*]] = zb.cast %arg2 {zb.origin = 4 : i64, zb.phase = #zb.phase<B>} : tensor<3x2xf32> -> tensor<3x2xbf16>
// CHECK: zb.matmul %{{.*}}, %[[W2B]] {transpose_rhs, zb.act_grad, zb.origin = 4 : i64, zb.phase = #zb.phase<B>}
// CHECK: zb.matmul %[[X]], %{{.*}} {transpose_lhs, zb.origin = 2 : i64, zb.phase = #zb.phase<W>}
// Without recompute the forward cast is read by B (saved).
// SAVED: %[[W2F:.*]] = zb.cast %arg2 {zb.id = 3 : i64}
// SAVED: zb.matmul %{{.*}}, %[[W2F]] {transpose_rhs, zb.act_grad, zb.origin = 4 : i64, zb.phase = #zb.phase<B>}
func.func @main(%x: tensor<4x3xf32>, %w1: tensor<3x3xf32> {zb.param}, %w2: tensor<3x2xf32> {zb.param}) -> tensor<f32> {
  %h = zb.matmul %x, %w1 : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %y = zb.matmul %h, %w2 : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %l = zb.reduce_sum %y axes [0, 1] : tensor<4x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}
