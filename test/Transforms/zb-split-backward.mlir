// RUN: zb-opt %s -zb-autodiff -zb-split-backward | FileCheck %s
// RUN: zb-opt %s -zb-autodiff -zb-split-backward=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// Two linear layers. B is the activation-gradient chain (what the previous
// stage waits for); W only produces parameter gradients.
// CHECK-LABEL: func.func @main
func.func @main(%x: tensor<4x3xf32>, %w1: tensor<3x5xf32> {zb.param},
                %w2: tensor<5x2xf32> {zb.param}) -> tensor<f32> {
  %h = zb.matmul %x, %w1 : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %a = zb.tanh %h : tensor<4x5xf32>
  %y = zb.matmul %a, %w2 : (tensor<4x5xf32>, tensor<5x2xf32>) -> tensor<4x2xf32>
  %l = zb.reduce_sum %y axes [0, 1] : tensor<4x2xf32> -> tensor<f32>
  // CHECK: %[[SEED:.*]] = zb.constant dense<1.000000e+00> : tensor<f32> {zb.origin = 3 : i64, zb.phase = "B"}
  // CHECK: %[[DY:.*]] = zb.broadcast_in_dim %[[SEED]] {{.*}}zb.phase = "B"
  // dA = dY W2^T is B (layer input gradient), dW2 = A^T dY is W.
  // CHECK: zb.matmul %[[DY]], %arg2 {transpose_rhs, zb.act_grad, zb.origin = 2 : i64, zb.phase = "B"}
  // CHECK: zb.matmul %{{.*}}, %[[DY]] {transpose_lhs, zb.origin = 2 : i64, zb.phase = "W"}
  // CHECK: zb.mul {{.*}}zb.phase = "B"
  // CHECK: %[[DH:.*]] = zb.mul {{.*}}zb.act_grad, zb.origin = 1 : i64, zb.phase = "B"
  // The first layer's weight gradient is W and consumes the residual dH.
  // CHECK: zb.matmul %arg0, %[[DH]] {transpose_lhs, zb.origin = 0 : i64, zb.phase = "W"}
  return %l : tensor<f32>
}

// Residuals crossing from B to W: dY (4x2) and dH (4x5) in f32.
// REPORT: zb-split-backward: @main: {{[0-9]+}} B ops, 2 W ops, 2 residuals (112 bytes) cross from B to W
