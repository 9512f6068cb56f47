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

// A widening cast (bfloat16 to float32) read by two row reductions is
// recomputed in each: both read the bfloat16 tensor and the float32 copy
// is gone. A producer of two uses that is not a cast stays (nothing else
// is recomputed).
#rows = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @cast_into_reductions
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xbf16>
// CHECK:      linalg.generic {{.*}} ins(%[[X]] : tensor<4x8xbf16>)
// CHECK:        arith.extf
// CHECK:        arith.maximumf
// CHECK:      linalg.generic {{.*}} ins(%[[X]] : tensor<4x8xbf16>)
// CHECK:        arith.extf
// CHECK:        arith.addf
// CHECK-NOT:  linalg.generic
// CHECK:      return
func.func @cast_into_reductions(%x: tensor<4x8xbf16>) -> (tensor<4xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %wide = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xbf16>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: bf16, %o: f32):
    %w = arith.extf %v : bf16 to f32
    linalg.yield %w : f32
  } -> tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %max = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]} ins(%wide : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %m = arith.maximumf %v, %acc : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]} ins(%wide : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %v, %acc : f32
    linalg.yield %a : f32
  } -> tensor<4xf32>
  return %max, %sum : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @shared_not_a_cast
// CHECK-COUNT-3: linalg.generic
func.func @shared_not_a_cast(%x: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %sq = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %w = arith.mulf %v, %v : f32
    linalg.yield %w : f32
  } -> tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %max = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]} ins(%sq : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %m = arith.maximumf %v, %acc : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]} ins(%sq : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %v, %acc : f32
    linalg.yield %a : f32
  } -> tensor<4xf32>
  return %max, %sum : tensor<4xf32>, tensor<4xf32>
}

// BAD: max-fused-ops must be >= 2, got 1
