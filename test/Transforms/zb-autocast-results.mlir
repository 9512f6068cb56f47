// RUN: zb-opt %s -zb-autocast -split-input-file -verify-diagnostics | FileCheck %s

// A function result other than the loss keeps its declared type.
// CHECK-LABEL: func.func @main
// CHECK: %[[Y:.*]] = zb.matmul {{.*}} -> tensor<2x2xbf16>
// CHECK: %[[YF:.*]] = zb.cast %[[Y]] : tensor<2x2xbf16> -> tensor<2x2xf32>
// CHECK: return %{{.*}}, %[[YF]] : tensor<f32>, tensor<2x2xf32>
func.func @main(%w: tensor<2x2xf32> {zb.param}) -> (tensor<f32>, tensor<2x2xf32>) {
  %y = zb.matmul %w, %w : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %l = zb.reduce_mean %y axes [0, 1] : tensor<2x2xf32> -> tensor<f32>
  return %l, %y : tensor<f32>, tensor<2x2xf32>
}

// -----

// A model exported in bfloat16 returns its loss in bfloat16: the loss
// becomes float32 (what the runtime reports and seeds the gradient with),
// the other bfloat16 result too.
// CHECK-LABEL: func.func @main
// CHECK-SAME: -> (tensor<f32>, tensor<2x2xf32>)
// CHECK: %[[YF:.*]] = zb.cast %{{.*}} : tensor<2x2xbf16> -> tensor<2x2xf32>
// CHECK: %[[L:.*]] = zb.reduce_mean %[[YF]] {{.*}} -> tensor<f32>
// CHECK: return %[[L]], %[[YF]] : tensor<f32>, tensor<2x2xf32>
func.func @main(%w: tensor<2x2xbf16> {zb.param}) -> (tensor<bf16>, tensor<2x2xbf16>) {
  %y = zb.matmul %w, %w : (tensor<2x2xbf16>, tensor<2x2xbf16>) -> tensor<2x2xbf16>
  %l = zb.reduce_mean %y axes [0, 1] : tensor<2x2xbf16> -> tensor<bf16>
  return %l, %y : tensor<bf16>, tensor<2x2xbf16>
}

// -----

// expected-error @+1 {{zb-autocast: no function named 'main'}}
module {
  func.func @other(%w: tensor<2xf32> {zb.param}) -> tensor<f32> {
    %l = zb.reduce_sum %w axes [0] : tensor<2xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
