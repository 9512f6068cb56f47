// RUN: zb-opt %s -zb-autodiff -zb-split-backward=recompute=false | FileCheck %s
// RUN: zb-opt %s -zb-autodiff -zb-split-backward="report=true recompute=false" -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: zb-opt %s -zb-autodiff -zb-split-backward | FileCheck %s --check-prefix=RECOMPUTE
// RUN: zb-opt %s -zb-autodiff -zb-split-backward=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=RREPORT
// RUN: zb-opt %s -zb-autodiff=function=sq -zb-split-backward=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=SQ
// RUN: zb-opt %s -zb-autodiff -zb-split-backward=recompute=false -zb-partition-stages=num-stages=2 -zb-report -o /dev/null 2>&1 | FileCheck %s --check-prefix=STAGES-KEEP
// RUN: zb-opt %s -zb-autodiff -zb-split-backward -zb-partition-stages=num-stages=2 -zb-report -o /dev/null 2>&1 | FileCheck %s --check-prefix=STAGES-RECOMPUTE

// Two linear layers. B is the activation-gradient chain (what the previous
// stage waits for); W only produces parameter gradients.
// CHECK-LABEL: func.func @main
// RECOMPUTE-LABEL: func.func @main
func.func @main(%x: tensor<4x3xf32>, %w1: tensor<3x5xf32> {zb.param},
                %w2: tensor<5x2xf32> {zb.param}) -> tensor<f32> {
  %h = zb.matmul %x, %w1 : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %a = zb.tanh %h : tensor<4x5xf32>
  %y = zb.matmul %a, %w2 : (tensor<4x5xf32>, tensor<5x2xf32>) -> tensor<4x2xf32>
  %l = zb.reduce_sum %y axes [0, 1] : tensor<4x2xf32> -> tensor<f32>
  // CHECK: %[[SEED:.*]] = zb.constant dense<1.000000e+00> : tensor<f32> {zb.origin = 3 : i64, zb.phase = #zb.phase<B>}
  // CHECK: %[[DY:.*]] = zb.broadcast_in_dim %[[SEED]] {{.*}}zb.phase = #zb.phase<B>
  // dA = dY W2^T is B (layer input gradient), dW2 = A^T dY is W.
  // CHECK: zb.matmul %[[DY]], %arg2 {transpose_rhs, zb.act_grad, zb.origin = 2 : i64, zb.phase = #zb.phase<B>}
  // CHECK: zb.matmul %{{.*}}, %[[DY]] {transpose_lhs, zb.origin = 2 : i64, zb.phase = #zb.phase<W>}
  // CHECK: zb.mul {{.*}}zb.phase = #zb.phase<B>
  // CHECK: %[[DH:.*]] = zb.mul {{.*}}zb.act_grad, zb.origin = 1 : i64, zb.phase = #zb.phase<B>
  // The first layer's weight gradient is W and consumes the residual dH.
  // CHECK: zb.matmul %arg0, %[[DH]] {transpose_lhs, zb.origin = 0 : i64, zb.phase = #zb.phase<W>}
  return %l : tensor<f32>
}

// Residuals crossing from B to W: dY (4x2) and dH (4x5) in f32,
// 4*2*4 + 4*5*4 = 32 + 80 = 112 bytes.
// REPORT: zb-split-backward: @main: {{[0-9]+}} B ops, 2 W ops, 2 residuals (112 bytes) cross from B to W

// Recompute in W (default): dY = broadcast(d loss/d loss = 1) needs nothing
// from B, so W rebuilds it from the constant instead of keeping 32 bytes; dH
// depends on the gradient chain and stays. 112 - 32 = 80 bytes cross.
// RECOMPUTE: zb.matmul %{{.*}}, %{{.*}} {transpose_rhs, zb.act_grad, zb.origin = 2 : i64, zb.phase = #zb.phase<B>}
// RECOMPUTE: %[[C:.*]] = zb.constant dense<1.000000e+00> : tensor<f32> {zb.origin = 2 : i64, zb.phase = #zb.phase<W>}
// RECOMPUTE: %[[DYW:.*]] = zb.broadcast_in_dim %[[C]] dims [] {zb.origin = 2 : i64, zb.phase = #zb.phase<W>}
// RECOMPUTE: zb.matmul %{{.*}}, %[[DYW]] {transpose_lhs, zb.origin = 2 : i64, zb.phase = #zb.phase<W>}
// RREPORT: zb-split-backward: @main: {{[0-9]+}} B ops, 4 W ops, 1 residuals (80 bytes) cross from B to W; recompute in W: 1 residuals rebuilt, 112 bytes before
// Per stage (zb-report M_W): the cut puts dH in stage 0 (80 bytes) and dY in
// stage 1 (32 bytes, 0 with recompute).
// STAGES-KEEP: stage  0: {{.*}} M_W=80 bytes
// STAGES-KEEP: stage  1: {{.*}} M_W=32 bytes
// STAGES-RECOMPUTE: stage  0: {{.*}} M_W=80 bytes
// STAGES-RECOMPUTE: stage  1: {{.*}} M_W=0 bytes

// A squared-error loss: dY = 2 * (Y - T) * 1 needs the forward value
// D = Y - T (4x2, 32 bytes) that W does not read otherwise; rebuilding dY
// (32 bytes) in W would keep as many bytes, so it stays a residual.
// SQ: zb-split-backward: @sq: {{[0-9]+}} B ops, 1 W ops, 1 residuals (32 bytes) cross from B to W; recompute in W: 0 residuals rebuilt, 32 bytes before
func.func @sq(%a: tensor<4x5xf32>, %t: tensor<4x2xf32>,
              %w2: tensor<5x2xf32> {zb.param}) -> tensor<f32> {
  %y = zb.matmul %a, %w2 : (tensor<4x5xf32>, tensor<5x2xf32>) -> tensor<4x2xf32>
  %d = zb.sub %y, %t : tensor<4x2xf32>
  %q = zb.mul %d, %d : tensor<4x2xf32>
  %l = zb.reduce_sum %q axes [0, 1] : tensor<4x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// A value computed from a parameter alone (Gemma's RMSNorm scale `1 + w`):
// its gradient is read only by the parameter's, so it is W, not an
// activation gradient (zb.add passes the gradient through unchanged: the
// parameter's gradient is that very op).
// RUN: zb-opt %s -zb-autodiff=function=shifted -zb-split-backward=recompute=false | FileCheck %s --check-prefix=SHIFT
// SHIFT-LABEL: func.func @shifted
// SHIFT: zb.mul %{{.*}}, %arg0 {zb.origin = 3 : i64, zb.phase = #zb.phase<W>}
// SHIFT-NEXT: zb.reduce_sum %{{.*}} axes [0] {zb.origin = 2 : i64, zb.phase = #zb.phase<W>}
// SHIFT-NEXT: return
func.func @shifted(%x: tensor<4x3xf32>, %w: tensor<3xf32> {zb.param}) -> tensor<f32> {
  %one = zb.constant dense<1.0> : tensor<3xf32>
  %s = zb.add %w, %one : tensor<3xf32>
  %b = zb.broadcast_in_dim %s dims [1] : tensor<3xf32> -> tensor<4x3xf32>
  %y = zb.mul %x, %b : tensor<4x3xf32>
  %l = zb.reduce_sum %y axes [0, 1] : tensor<4x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}
