// RUN: zb-opt %s -zb-autocast -split-input-file -verify-diagnostics | FileCheck %s
// RUN: zb-opt %s -zb-autocast -split-input-file -verify-diagnostics | zb-opt -split-input-file | FileCheck %s
// RUN: zb-opt %s -zb-autocast -zb-autodiff -split-input-file | FileCheck %s --check-prefix=GRAD

// A pre-LN block as exporters write it: torch.autocast's bfloat16 policy.
// The layer norm runs in float32 (its input, the residual stream, is
// float32); the matmul takes bfloat16 casts of its input and of the
// parameter; the bias add joins the bfloat16 product (torch's linear/addmm);
// tanh runs in bfloat16 (widest operand); the constant scale adopts
// bfloat16; the residual add promotes to float32; the loss is float32.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>, %[[T:.*]]: tensor<8xi64>, %[[G:.*]]: tensor<4xf32> {zb.param}, %[[B:.*]]: tensor<4xf32> {zb.param}, %[[W:.*]]: tensor<4x4xf32> {zb.param}, %[[BIAS:.*]]: tensor<4xf32> {zb.param})
// CHECK: %[[N:.*]] = zb.layer_norm %[[X]], %[[G]], %[[B]] {{.*}} -> tensor<8x4xf32>
// CHECK: %[[NB:.*]] = zb.cast %[[N]] : tensor<8x4xf32> -> tensor<8x4xbf16>
// CHECK: %[[WB:.*]] = zb.cast %[[W]] : tensor<4x4xf32> -> tensor<4x4xbf16>
// CHECK: %[[Y:.*]] = zb.matmul %[[NB]], %[[WB]] {transpose_rhs} : (tensor<8x4xbf16>, tensor<4x4xbf16>) -> tensor<8x4xbf16>
// CHECK: %[[BB:.*]] = zb.broadcast_in_dim %[[BIAS]] dims [1] : tensor<4xf32> -> tensor<8x4xf32>
// CHECK: %[[BBB:.*]] = zb.cast %[[BB]] : tensor<8x4xf32> -> tensor<8x4xbf16>
// CHECK: %[[YB:.*]] = zb.add %[[Y]], %[[BBB]] : tensor<8x4xbf16>
// CHECK: %[[C:.*]] = zb.constant dense<5.000000e-01> : tensor<8x4xf32>
// CHECK: %[[CB:.*]] = zb.cast %[[C]] : tensor<8x4xf32> -> tensor<8x4xbf16>
// CHECK: %[[H:.*]] = zb.mul %[[YB]], %[[CB]] : tensor<8x4xbf16>
// CHECK: %[[A:.*]] = zb.tanh %[[H]] : tensor<8x4xbf16>
// CHECK: %[[AF:.*]] = zb.cast %[[A]] : tensor<8x4xbf16> -> tensor<8x4xf32>
// CHECK: %[[R:.*]] = zb.add %[[X]], %[[AF]] : tensor<8x4xf32>
// CHECK: %[[L:.*]] = zb.cross_entropy %[[R]], %[[T]] {{.*}} -> tensor<f32>
// CHECK: return %[[L]] : tensor<f32>
// The casts differentiate back: the parameter gradients are float32.
// GRAD-LABEL: func.func @main
// GRAD-SAME: -> (tensor<f32>, tensor<4xf32> {zb.grad_of = 2 : i64}, tensor<4xf32> {zb.grad_of = 3 : i64}, tensor<4x4xf32> {zb.grad_of = 4 : i64}, tensor<4xf32> {zb.grad_of = 5 : i64})
// GRAD-DAG: zb.matmul {{.*}} -> tensor<4x4xbf16>
// GRAD-DAG: zb.cast {{.*}} : tensor<4x4xbf16> -> tensor<4x4xf32>
func.func @main(%x: tensor<8x4xf32>, %t: tensor<8xi64>,
                %g: tensor<4xf32> {zb.param}, %b: tensor<4xf32> {zb.param},
                %w: tensor<4x4xf32> {zb.param},
                %bias: tensor<4xf32> {zb.param}) -> tensor<f32> {
  %n = zb.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %y = zb.matmul %n, %w {transpose_rhs} : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %bb = zb.broadcast_in_dim %bias dims [1] : tensor<4xf32> -> tensor<8x4xf32>
  %yb = zb.add %y, %bb : tensor<8x4xf32>
  %c = zb.constant dense<0.5> : tensor<8x4xf32>
  %h = zb.mul %yb, %c : tensor<8x4xf32>
  %a = zb.tanh %h : tensor<8x4xf32>
  %r = zb.add %x, %a : tensor<8x4xf32>
  %l = zb.cross_entropy %r, %t : (tensor<8x4xf32>, tensor<8xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Attention scores: both batch_matmul operands in bfloat16; the softmax in
// float32; its output cast again for the second batch_matmul; one cast per
// value and type (%v is cast once for its use). A reduction is float32.
// CHECK-LABEL: func.func @main
// CHECK: %[[QB:.*]] = zb.cast %arg0 : tensor<2x3x4xf32> -> tensor<2x3x4xbf16>
// CHECK: %[[KB:.*]] = zb.cast %arg1 : tensor<2x3x4xf32> -> tensor<2x3x4xbf16>
// CHECK: %[[S:.*]] = zb.batch_matmul %[[QB]], %[[KB]] {transpose_rhs} : (tensor<2x3x4xbf16>, tensor<2x3x4xbf16>) -> tensor<2x3x3xbf16>
// CHECK: %[[SF:.*]] = zb.cast %[[S]] : tensor<2x3x3xbf16> -> tensor<2x3x3xf32>
// CHECK: %[[P:.*]] = zb.softmax %[[SF]] axis 2 : tensor<2x3x3xf32>
// CHECK: %[[PB:.*]] = zb.cast %[[P]] : tensor<2x3x3xf32> -> tensor<2x3x3xbf16>
// CHECK: %[[O:.*]] = zb.batch_matmul %[[PB]], %[[KB]] : (tensor<2x3x3xbf16>, tensor<2x3x4xbf16>) -> tensor<2x3x4xbf16>
// CHECK: %[[OF:.*]] = zb.cast %[[O]] : tensor<2x3x4xbf16> -> tensor<2x3x4xf32>
// CHECK: zb.reduce_sum %[[OF]] axes [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
func.func @main(%q: tensor<2x3x4xf32> {zb.param}, %k: tensor<2x3x4xf32> {zb.param}) -> tensor<f32> {
  %s = zb.batch_matmul %q, %k {transpose_rhs} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x3xf32>
  %p = zb.softmax %s axis 2 : tensor<2x3x3xf32>
  %o = zb.batch_matmul %p, %k : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %l = zb.reduce_sum %o axes [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
