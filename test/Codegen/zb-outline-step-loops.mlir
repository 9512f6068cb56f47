// RUN: zb-opt %s --zb-outline-step-loops | FileCheck %s

// A step function's loop nests become calls of private functions; the two
// identical gradient sums share one, the two microbatch slices (static
// offsets 0 and 4) share another through a cast to a dynamic offset. A
// function without zb.rank is left alone.

#id = affine_map<(d0) -> (d0)>

// CHECK-LABEL: func.func private @zb_rank0_step_loops_0(
// CHECK-SAME:    %{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32>)
// CHECK:         linalg.generic
// CHECK:           arith.addf
// CHECK:         return
// CHECK-LABEL: func.func private @zb_rank0_step_loops_1(
// CHECK-SAME:    %{{.*}}: memref<4xf32, strided<[1], offset: ?>>, %{{.*}}: memref<4xf32>)
// CHECK:         linalg.copy
// CHECK-NOT:   func.func private @zb_rank0_step_loops_2

// CHECK-LABEL: func.func @zb_rank0_step(
func.func @zb_rank0_step(%g0: memref<4xf32>, %g1: memref<4xf32>, %in: memref<8xf32>, %out: memref<4xf32>, %acc: memref<4xf32>) attributes {zb.rank = 0 : i64} {
  // CHECK: call @zb_rank0_step_loops_0(%arg0, %arg1, %arg4)
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%g0, %g1 : memref<4xf32>, memref<4xf32>) outs(%acc : memref<4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  }
  // CHECK: call @zb_rank0_step_loops_0(%arg4, %arg1, %arg3)
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%acc, %g1 : memref<4xf32>, memref<4xf32>) outs(%out : memref<4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  }
  // CHECK: %[[S0:.*]] = memref.subview %arg2[0] [4] [1]
  // CHECK: %[[C0:.*]] = memref.cast %[[S0]] : memref<4xf32, strided<[1]>> to memref<4xf32, strided<[1], offset: ?>>
  // CHECK: call @zb_rank0_step_loops_1(%[[C0]], %arg3)
  %s0 = memref.subview %in[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  linalg.copy ins(%s0 : memref<4xf32, strided<[1]>>) outs(%out : memref<4xf32>)
  // CHECK: %[[S1:.*]] = memref.subview %arg2[4] [4] [1]
  // CHECK: %[[C1:.*]] = memref.cast %[[S1]]
  // CHECK: call @zb_rank0_step_loops_1(%[[C1]], %arg3)
  %s1 = memref.subview %in[4] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 4>>
  linalg.copy ins(%s1 : memref<4xf32, strided<[1], offset: 4>>) outs(%out : memref<4xf32>)
  // CHECK-NOT: linalg.
  // CHECK: return
  return
}

// CHECK-LABEL: func.func @stage0_forward(
// CHECK:         linalg.copy
func.func @stage0_forward(%x: memref<4xf32>, %y: memref<4xf32>) {
  linalg.copy ins(%x : memref<4xf32>) outs(%y : memref<4xf32>)
  return
}
