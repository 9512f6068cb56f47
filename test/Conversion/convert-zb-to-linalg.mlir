// RUN: zb-opt %s -convert-zb-to-linalg | FileCheck %s

// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[COL:.*]] = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func @elementwise(
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x5xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ID]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1 : tensor<4x5xf32>, tensor<4x5xf32>) outs(%[[E]] : tensor<4x5xf32>)
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK: arith.cmpf ogt
// CHECK: arith.select
func.func @elementwise(%a: tensor<4x5xf32>, %b: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %s = zb.add %a, %b : tensor<4x5xf32>
  %r = zb.relu %s : tensor<4x5xf32>
  return %r : tensor<4x5xf32>
}

// Bias broadcast along rows, then a reduction over rows.
// CHECK-LABEL: func.func @broadcast_reduce(
// CHECK: linalg.generic {indexing_maps = [#[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<5xf32>)
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[COL]]], iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<4x5xf32>) outs(%[[Z]] : tensor<4xf32>)
// CHECK: arith.addf
func.func @broadcast_reduce(%bias: tensor<5xf32>) -> tensor<4xf32> {
  %b = zb.broadcast_in_dim %bias dims [1] : tensor<5xf32> -> tensor<4x5xf32>
  %s = zb.reduce_sum %b axes [1] : tensor<4x5xf32> -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// CHECK-LABEL: func.func @constant(
// CHECK: arith.constant dense<2.500000e+00> : tensor<3xf32>
func.func @constant() -> tensor<3xf32> {
  %c = zb.constant dense<2.5> : tensor<3xf32>
  return %c : tensor<3xf32>
}
