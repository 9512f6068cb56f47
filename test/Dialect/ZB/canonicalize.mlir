// RUN: zb-opt %s -canonicalize -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @neg_neg
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @neg_neg(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = zb.neg %x : tensor<4xf32>
  %1 = zb.neg %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @transpose_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = zb.transpose %x permutation [0, 1] : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_transpose
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[T:.*]] = zb.transpose %[[X]] permutation [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
// CHECK-NEXT: return %[[T]]
func.func @transpose_transpose(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %0 = zb.transpose %x permutation [1, 2, 0] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %1 = zb.transpose %0 permutation [1, 2, 0] : tensor<3x4x2xf32> -> tensor<4x2x3xf32>
  return %1 : tensor<4x2x3xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_inverse
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @transpose_inverse(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = zb.transpose %x permutation [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  %1 = zb.transpose %0 permutation [1, 0] : tensor<3x2xf32> -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @slice_full
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @slice_full(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = zb.slice %x [0, 0] to [2, 3] strides [1, 1] : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A slice that keeps the shape but not the elements is kept.
// CHECK-LABEL: func.func @slice_not_full
// CHECK: zb.slice
func.func @slice_not_full(%x: tensor<2x3xf32>) -> tensor<1x3xf32> {
  %0 = zb.slice %x [1, 0] to [2, 3] strides [1, 1] : tensor<2x3xf32> -> tensor<1x3xf32>
  return %0 : tensor<1x3xf32>
}

// -----

// CHECK-LABEL: func.func @pad_zero
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @pad_zero(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = zb.pad %x low [0, 0] high [0, 0] interior [0, 0] : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @concat_single
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @concat_single(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = zb.concat %x axis 1 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @cast_same
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @cast_same(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = zb.cast %x : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_same
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @reshape_same(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = zb.reshape %x : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_constant
// CHECK-NEXT: %[[C:.*]] = zb.constant dense<{{\[}}[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
// CHECK-NEXT: return %[[C]]
func.func @reshape_constant() -> tensor<2x3xi64> {
  %c = zb.constant dense<[1, 2, 3, 4, 5, 6]> : tensor<6xi64>
  %0 = zb.reshape %c : tensor<6xi64> -> tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}

// -----

// CHECK-LABEL: func.func @dead_ops
// CHECK-NEXT: return
func.func @dead_ops(%x: tensor<2x3xf32>, %w: tensor<3xf32>) {
  %0 = zb.layer_norm %x, %w, %w : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = zb.softmax %0 axis 1 : tensor<2x3xf32>
  return
}
