// RUN: zb-opt %s -zb-autodiff -split-input-file -verify-diagnostics | FileCheck %s

// A linear layer with an MSE-style loss: every operand's gradient is built
// separately; activation gradients are marked zb.act_grad; the parameter
// gradients become extra results in argument order.
// CHECK-LABEL: func.func @main
// CHECK-SAME: -> (tensor<f32>, tensor<3x2xf32> {zb.grad_of = 1 : i64})
func.func @main(%x: tensor<4x3xf32>, %w: tensor<3x2xf32> {zb.param}) -> tensor<f32> {
  // CHECK: %[[Y:.*]] = zb.matmul %arg0, %arg1 {zb.id = 0 : i64}
  %y = zb.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  // CHECK: %[[R:.*]] = zb.relu %[[Y]] {zb.id = 1 : i64}
  %r = zb.relu %y : tensor<4x2xf32>
  // CHECK: %[[L:.*]] = zb.reduce_sum %[[R]] axes [0, 1] {zb.id = 2 : i64}
  %l = zb.reduce_sum %r axes [0, 1] : tensor<4x2xf32> -> tensor<f32>
  // Seed dL/dL = 1, then the rules in reverse order, each tagged with its origin.
  // CHECK: %[[SEED:.*]] = zb.constant dense<1.000000e+00> : tensor<f32> {zb.origin = 2 : i64}
  // CHECK: %[[DR:.*]] = zb.broadcast_in_dim %[[SEED]] dims [] {zb.act_grad, zb.origin = 2 : i64}
  // CHECK: %[[ZERO:.*]] = zb.constant dense<0.000000e+00> : tensor<4x2xf32> {zb.origin = 1 : i64}
  // CHECK: %[[POS:.*]] = zb.compare "gt", %[[Y]], %[[ZERO]] {zb.origin = 1 : i64}
  // CHECK: %[[DY:.*]] = zb.select %[[POS]], %[[DR]], %[[ZERO]] {zb.act_grad, zb.origin = 1 : i64}
  // The weight gradient X^T dY; no gradient for the input x (not a parameter).
  // CHECK: %[[DW:.*]] = zb.matmul %arg0, %[[DY]] {transpose_lhs, zb.origin = 0 : i64}
  // CHECK-NOT: zb.matmul
  // CHECK: return %[[L]], %[[DW]]
  return %l : tensor<f32>
}

// -----

// A parameter used twice: its gradient contributions are summed.
// CHECK-LABEL: func.func @main
func.func @main(%w: tensor<2xf32> {zb.param}) -> tensor<f32> {
  %sq = zb.mul %w, %w : tensor<2xf32>
  %l = zb.reduce_sum %sq axes [0] : tensor<2xf32> -> tensor<f32>
  // CHECK: %[[A:.*]] = zb.mul %{{.*}}, %arg0 {zb.origin = 0 : i64}
  // CHECK: %[[B:.*]] = zb.mul %{{.*}}, %arg0 {zb.origin = 0 : i64}
  // CHECK: %[[G:.*]] = zb.add %[[A]], %[[B]] {zb.origin = 0 : i64}
  // CHECK: return %{{.*}}, %[[G]]
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{the loss must be a 0-d float tensor}}
func.func @main(%w: tensor<2xf32> {zb.param}) -> tensor<2xf32> {
  %y = zb.relu %w : tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

// expected-error @+1 {{no argument is marked zb.param}}
func.func @main(%x: tensor<2xf32>) -> tensor<f32> {
  %l = zb.reduce_sum %x axes [0] : tensor<2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{the loss does not depend on any parameter}}
func.func @main(%x: tensor<2xf32>, %w: tensor<2xf32> {zb.param}) -> tensor<f32> {
  %l = zb.reduce_sum %x axes [0] : tensor<2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @main(%w: tensor<2xf32> {zb.param}) -> tensor<f32> {
  // expected-error @+1 {{has no gradient rule}}
  %c = arith.addf %w, %w : tensor<2xf32>
  %l = zb.reduce_sum %c axes [0] : tensor<2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Several results (MultiResultGradientOpInterface): only the first part of
// the split reaches the loss; the other part's gradient is zero.
// CHECK-LABEL: func.func @main
func.func @main(%w: tensor<2x6xf32> {zb.param}) -> tensor<f32> {
  // CHECK: %[[S:.*]]:2 = zb.split %arg0 axis 1 {zb.id = 0 : i64}
  %a, %b = zb.split %w axis 1 : tensor<2x6xf32> -> tensor<2x2xf32>, tensor<2x4xf32>
  %l = zb.reduce_sum %a axes [0, 1] : tensor<2x2xf32> -> tensor<f32>
  // CHECK: %[[G:.*]] = {{.*}}zb.origin = 0 : i64{{.*}} -> tensor<2x6xf32>
  // CHECK: return %{{.*}}, %[[G]]
  return %l : tensor<f32>
}
