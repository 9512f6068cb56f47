// RUN: zb-opt %s --zb-fuse-elementwise | FileCheck %s
// RUN: zb-opt %s --zb-fuse-elementwise=max-fused-ops=2 | FileCheck %s --check-prefix=BOUNDED
// RUN: not zb-opt %s --zb-fuse-elementwise=max-fused-ops=1 2>&1 | FileCheck %s --check-prefix=BAD

// A chain of elementwise generics fuses into one in a stage function; in a
// step function (zb.rank) the chain of gradient sums stays one generic per
// add, so every microbatch's gradients can be freed after its own add.

#id = affine_map<(d0) -> (d0)>

// CHECK-LABEL: func.func @stage
// CHECK-COUNT-1: linalg.generic
// CHECK-NOT:     linalg.generic
// CHECK:         return
// BOUNDED-LABEL: func.func @stage
// BOUNDED-COUNT-2: linalg.generic
func.func @stage(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.addf %x, %y : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %t = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%s, %c : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.addf %x, %y : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %t : tensor<4xf32>
}

// CHECK-LABEL: func.func @zb_rank0_step
// CHECK-COUNT-2: linalg.generic
func.func @zb_rank0_step(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>) -> tensor<4xf32> attributes {zb.rank = 0 : i64} {
  %e = tensor.empty() : tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.addf %x, %y : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %t = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%s, %c : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %r = arith.addf %x, %y : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %t : tensor<4xf32>
}

// BAD: max-fused-ops must be >= 2, got 1
