// RUN: zb-opt %s | zb-opt | FileCheck %s
// Round trip of every zb op through the custom assembly format.

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: zb.constant dense<1.000000e+00> : tensor<4x8xf32>
  %c = zb.constant dense<1.0> : tensor<4x8xf32>
  // CHECK: zb.add %{{.*}}, %{{.*}} : tensor<4x8xf32>
  %0 = zb.add %x, %y : tensor<4x8xf32>
  // CHECK: zb.sub
  %1 = zb.sub %0, %c : tensor<4x8xf32>
  // CHECK: zb.mul
  %2 = zb.mul %1, %y : tensor<4x8xf32>
  // CHECK: zb.div
  %3 = zb.div %2, %c : tensor<4x8xf32>
  // CHECK: zb.pow %{{.*}}, %{{.*}} : tensor<4x8xf32>
  %4 = zb.pow %3, %c : tensor<4x8xf32>
  // CHECK: zb.max %{{.*}}, %{{.*}} : tensor<4x8xf32>
  %5 = zb.max %4, %x : tensor<4x8xf32>
  // CHECK: zb.neg
  %6 = zb.neg %5 : tensor<4x8xf32>
  // CHECK: zb.relu
  %7 = zb.relu %6 : tensor<4x8xf32>
  // CHECK: zb.exp
  %8 = zb.exp %7 : tensor<4x8xf32>
  // CHECK: zb.log
  %9 = zb.log %8 : tensor<4x8xf32>
  // CHECK: zb.tanh
  %10 = zb.tanh %9 : tensor<4x8xf32>
  // CHECK: zb.sqrt %{{.*}} : tensor<4x8xf32>
  %11 = zb.sqrt %10 : tensor<4x8xf32>
  // CHECK: zb.rsqrt %{{.*}} : tensor<4x8xf32>
  %12 = zb.rsqrt %11 : tensor<4x8xf32>
  // CHECK: zb.erf %{{.*}} : tensor<4x8xf32>
  %13 = zb.erf %12 : tensor<4x8xf32>
  // CHECK: zb.sigmoid %{{.*}} : tensor<4x8xf32>
  %14 = zb.sigmoid %13 : tensor<4x8xf32>
  // CHECK: zb.silu %{{.*}} : tensor<4x8xf32>
  %15 = zb.silu %14 : tensor<4x8xf32>
  // CHECK: zb.gelu %{{.*}} : tensor<4x8xf32>
  %16 = zb.gelu %15 : tensor<4x8xf32>
  // CHECK: zb.gelu %{{.*}} {approximate = "tanh"} : tensor<4x8xf32>
  %17 = zb.gelu %16 {approximate = "tanh"} : tensor<4x8xf32>
  // CHECK: zb.compare "gt", %{{.*}}, %{{.*}} : tensor<4x8xf32> -> tensor<4x8xi1>
  %m = zb.compare "gt", %17, %x : tensor<4x8xf32> -> tensor<4x8xi1>
  // CHECK: zb.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x8xi1>, tensor<4x8xf32>
  %18 = zb.select %m, %17, %x : tensor<4x8xi1>, tensor<4x8xf32>
  return %18 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @casts
func.func @casts(%x: tensor<4xf32>, %i: tensor<4xi64>, %m: tensor<4xi1>) -> (tensor<4xf64>, tensor<4xf32>, tensor<4xf16>, tensor<4xf32>) {
  // CHECK: zb.cast %{{.*}} : tensor<4xf32> -> tensor<4xf64>
  %0 = zb.cast %x : tensor<4xf32> -> tensor<4xf64>
  // CHECK: zb.cast %{{.*}} : tensor<4xi64> -> tensor<4xf32>
  %1 = zb.cast %i : tensor<4xi64> -> tensor<4xf32>
  // CHECK: zb.cast %{{.*}} : tensor<4xf32> -> tensor<4xf16>
  %2 = zb.cast %x : tensor<4xf32> -> tensor<4xf16>
  // CHECK: zb.cast %{{.*}} : tensor<4xi1> -> tensor<4xf32>
  %3 = zb.cast %m : tensor<4xi1> -> tensor<4xf32>
  return %0, %1, %2, %3 : tensor<4xf64>, tensor<4xf32>, tensor<4xf16>, tensor<4xf32>
}

// CHECK-LABEL: func.func @linalg
func.func @linalg(%a: tensor<16x8xf32>, %w: tensor<32x8xf32>, %q: tensor<2x3x16x8xf32>, %k: tensor<2x3x16x8xf32>) -> (tensor<16x32xf32>, tensor<2x3x16x16xf32>, tensor<2x3x8x8xf32>) {
  // CHECK: zb.matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<16x8xf32>, tensor<32x8xf32>) -> tensor<16x32xf32>
  %0 = zb.matmul %a, %w {transpose_rhs} : (tensor<16x8xf32>, tensor<32x8xf32>) -> tensor<16x32xf32>
  // CHECK: zb.batch_matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<2x3x16x8xf32>, tensor<2x3x16x8xf32>) -> tensor<2x3x16x16xf32>
  %1 = zb.batch_matmul %q, %k {transpose_rhs} : (tensor<2x3x16x8xf32>, tensor<2x3x16x8xf32>) -> tensor<2x3x16x16xf32>
  // CHECK: zb.batch_matmul %{{.*}}, %{{.*}} {transpose_lhs} : (tensor<2x3x16x8xf32>, tensor<2x3x16x8xf32>) -> tensor<2x3x8x8xf32>
  %2 = zb.batch_matmul %q, %k {transpose_lhs} : (tensor<2x3x16x8xf32>, tensor<2x3x16x8xf32>) -> tensor<2x3x8x8xf32>
  return %0, %1, %2 : tensor<16x32xf32>, tensor<2x3x16x16xf32>, tensor<2x3x8x8xf32>
}

// CHECK-LABEL: func.func @shapes
func.func @shapes(%x: tensor<2x16x12xf32>, %b: tensor<12xf32>) -> (tensor<16x12xf32>, tensor<16x12xf32>, tensor<2x12xf32>, tensor<2x16x3x4xf32>, tensor<2x3x16x4xf32>, tensor<2x8x4xf32>, tensor<2x16x30xf32>, tensor<2x16x24xf32>) {
  // CHECK: zb.broadcast_in_dim %{{.*}} dims [2] : tensor<12xf32> -> tensor<2x16x12xf32>
  %0 = zb.broadcast_in_dim %b dims [2] : tensor<12xf32> -> tensor<2x16x12xf32>
  // CHECK: zb.reduce_sum %{{.*}} axes [0] : tensor<2x16x12xf32> -> tensor<16x12xf32>
  %1 = zb.reduce_sum %0 axes [0] : tensor<2x16x12xf32> -> tensor<16x12xf32>
  // CHECK: zb.reduce_mean %{{.*}} axes [0] : tensor<2x16x12xf32> -> tensor<16x12xf32>
  %2 = zb.reduce_mean %x axes [0] : tensor<2x16x12xf32> -> tensor<16x12xf32>
  // CHECK: zb.reduce_max %{{.*}} axes [1] : tensor<2x16x12xf32> -> tensor<2x12xf32>
  %3 = zb.reduce_max %x axes [1] : tensor<2x16x12xf32> -> tensor<2x12xf32>
  // CHECK: zb.reshape %{{.*}} : tensor<2x16x12xf32> -> tensor<2x16x3x4xf32>
  %4 = zb.reshape %x : tensor<2x16x12xf32> -> tensor<2x16x3x4xf32>
  // CHECK: zb.transpose %{{.*}} permutation [0, 2, 1, 3] : tensor<2x16x3x4xf32> -> tensor<2x3x16x4xf32>
  %5 = zb.transpose %4 permutation [0, 2, 1, 3] : tensor<2x16x3x4xf32> -> tensor<2x3x16x4xf32>
  // CHECK: zb.slice %{{.*}} [0, 0, 4] to [2, 16, 12] strides [1, 2, 2] : tensor<2x16x12xf32> -> tensor<2x8x4xf32>
  %6 = zb.slice %x [0, 0, 4] to [2, 16, 12] strides [1, 2, 2] : tensor<2x16x12xf32> -> tensor<2x8x4xf32>
  // CHECK: zb.pad %{{.*}} low [0, 0, 1] high [0, 0, 6] interior [0, 0, 1] : tensor<2x16x12xf32> -> tensor<2x16x30xf32>
  %7 = zb.pad %x low [0, 0, 1] high [0, 0, 6] interior [0, 0, 1] : tensor<2x16x12xf32> -> tensor<2x16x30xf32>
  // CHECK: zb.concat %{{.*}}, %{{.*}} axis 2 : (tensor<2x16x12xf32>, tensor<2x16x12xf32>) -> tensor<2x16x24xf32>
  %8 = zb.concat %x, %0 axis 2 : (tensor<2x16x12xf32>, tensor<2x16x12xf32>) -> tensor<2x16x24xf32>
  // CHECK: %{{.*}}:3 = zb.split %{{.*}} axis 2 : tensor<2x16x24xf32> -> tensor<2x16x4xf32>, tensor<2x16x8xf32>, tensor<2x16x12xf32>
  %9:3 = zb.split %8 axis 2 : tensor<2x16x24xf32> -> tensor<2x16x4xf32>, tensor<2x16x8xf32>, tensor<2x16x12xf32>
  return %1, %2, %3, %4, %5, %6, %7, %8 : tensor<16x12xf32>, tensor<16x12xf32>, tensor<2x12xf32>, tensor<2x16x3x4xf32>, tensor<2x3x16x4xf32>, tensor<2x8x4xf32>, tensor<2x16x30xf32>, tensor<2x16x24xf32>
}

// CHECK-LABEL: func.func @embedding
func.func @embedding(%wte: tensor<50x8xf32>, %tok: tensor<2x4xi64>, %tok32: tensor<3xi32>, %g: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<50x8xf32>, tensor<3x50xf32>) {
  // CHECK: zb.gather %{{.*}}, %{{.*}} : (tensor<50x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
  %0 = zb.gather %wte, %tok : (tensor<50x8xf32>, tensor<2x4xi64>) -> tensor<2x4x8xf32>
  // CHECK: zb.scatter_add %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<2x4xi64>) -> tensor<50x8xf32>
  %1 = zb.scatter_add %g, %tok : (tensor<2x4x8xf32>, tensor<2x4xi64>) -> tensor<50x8xf32>
  // CHECK: zb.one_hot %{{.*}} : tensor<3xi32> -> tensor<3x50xf32>
  %2 = zb.one_hot %tok32 : tensor<3xi32> -> tensor<3x50xf32>
  return %0, %1, %2 : tensor<2x4x8xf32>, tensor<50x8xf32>, tensor<3x50xf32>
}

// CHECK-LABEL: func.func @layers
func.func @layers(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>, %s: tensor<2x4x4xf32>, %logits: tensor<6x10xf32>, %t: tensor<6xi64>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<f32>) {
  // CHECK: zb.layer_norm %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %0 = zb.layer_norm %x, %w, %b : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  // CHECK: zb.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-03 : f64}
  %1 = zb.layer_norm %x, %w, %b {epsilon = 1.0e-3 : f64} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  // CHECK: zb.rms_norm %{{.*}}, %{{.*}} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %2 = zb.rms_norm %x, %w : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  // CHECK: zb.causal_mask %{{.*}} : tensor<2x4x4xf32>
  %3 = zb.causal_mask %s : tensor<2x4x4xf32>
  // CHECK: zb.causal_mask %{{.*}} {fill = -1.000000e+04 : f64} : tensor<2x4x4xf32>
  %4 = zb.causal_mask %s {fill = -1.0e4 : f64} : tensor<2x4x4xf32>
  // CHECK: zb.softmax %{{.*}} axis 2 : tensor<2x4x4xf32>
  %5 = zb.softmax %3 axis 2 : tensor<2x4x4xf32>
  // CHECK: zb.cross_entropy %{{.*}}, %{{.*}} : (tensor<6x10xf32>, tensor<6xi64>) -> tensor<f32>
  %6 = zb.cross_entropy %logits, %t : (tensor<6x10xf32>, tensor<6xi64>) -> tensor<f32>
  // With its lse (zb-fuse-cross-entropy), bfloat16 logits and a float32 loss.
  // CHECK: %{{.*}}, %{{.*}} = zb.cross_entropy %{{.*}}, %{{.*}} {ignore_index = -100 : i64} : (tensor<6x10xbf16>, tensor<6xi64>) -> tensor<f32>, tensor<6xf32>
  %l16 = zb.cast %logits : tensor<6x10xf32> -> tensor<6x10xbf16>
  %7, %lse = zb.cross_entropy %l16, %t {ignore_index = -100 : i64} : (tensor<6x10xbf16>, tensor<6xi64>) -> tensor<f32>, tensor<6xf32>
  return %0, %1, %2, %4, %5, %6 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @comm
func.func @comm(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: zb.send %{{.*}} to 1 tag 6 : tensor<4x8xf32>
  zb.send %x to 1 tag 6 : tensor<4x8xf32>
  // CHECK: zb.recv from 1 tag 7 : tensor<4x8xf32>
  %0 = zb.recv from 1 tag 7 : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x6x16xf32>, %v: tensor<2x4x6x32xf32>,
                     %m: tensor<2x1x1x6xf32>, %do: tensor<2x4x8x32xf32>, %dl: tensor<2x4x8xf32>)
    -> (tensor<2x4x8x32xf32>, tensor<2x4x8x16xf32>) {
  // CHECK: %[[O:.*]], %[[L:.*]] = zb.attention %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} {causal, scale = 2.500000e-01 : f64} : (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x32xf32>, tensor<2x1x1x6xf32>) -> (tensor<2x4x8x32xf32>, tensor<2x4x8xf32>)
  %o, %l = zb.attention %q, %k, %v mask %m {causal, scale = 0.25 : f64}
      : (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x32xf32>, tensor<2x1x1x6xf32>) -> (tensor<2x4x8x32xf32>, tensor<2x4x8xf32>)
  // CHECK: zb.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.000000e+00 : f64} : (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x32xf32>) -> (tensor<2x4x8x32xf32>, tensor<2x4x8xf32>)
  %o2, %l2 = zb.attention %q, %k, %v {scale = 1.0 : f64}
      : (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x32xf32>) -> (tensor<2x4x8x32xf32>, tensor<2x4x8xf32>)
  // CHECK: zb.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %[[O]], %[[L]], %{{.*}} mask(%{{.*}} : tensor<2x1x1x6xf32>) lse_grad(%{{.*}} : tensor<2x4x8xf32>) {causal, scale = 2.500000e-01 : f64}
  %dq, %dk, %dv = zb.attention_grad %q, %k, %v, %o, %l, %do mask(%m : tensor<2x1x1x6xf32>) lse_grad(%dl : tensor<2x4x8xf32>) {causal, scale = 0.25 : f64}
      : (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x32xf32>, tensor<2x4x8x32xf32>, tensor<2x4x8xf32>, tensor<2x4x8x32xf32>)
        -> (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x32xf32>)
  // CHECK: zb.attention_grad {{.*}} : (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x32xf32>, tensor<2x4x8x32xf32>, tensor<2x4x8xf32>, tensor<2x4x8x32xf32>) -> (
  %dq2, %dk2, %dv2 = zb.attention_grad %q, %k, %v, %o2, %l2, %do {scale = 1.0 : f64}
      : (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x32xf32>, tensor<2x4x8x32xf32>, tensor<2x4x8xf32>, tensor<2x4x8x32xf32>)
        -> (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x32xf32>)
  return %o, %dq : tensor<2x4x8x32xf32>, tensor<2x4x8x16xf32>
}
