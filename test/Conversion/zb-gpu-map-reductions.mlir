// RUN: zb-opt %s --pass-pipeline='builtin.module(func.func(zb-gpu-map-reductions))' | FileCheck %s
// RUN: not zb-opt %s --pass-pipeline='builtin.module(func.func(zb-gpu-map-reductions{max-threads=48}))' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: zb-gpu-map-reductions: max-threads must be 0 or a power of two in 32 .. 1024, got 48
// RUN: zb-opt %s --pass-pipeline='builtin.module(func.func(zb-gpu-map-reductions{max-threads=0}))' | FileCheck %s --check-prefix=SERIAL

// zb-gpu-map-reductions: a linalg reduction on buffers whose innermost loop
// is a reduction becomes one block per output element; the threads stride
// over the reduction (consecutive threads, consecutive elements), keep a
// partial from the combiner's identity, and one uniform gpu.all_reduce
// combines them; thread 0 combines the total with the output's value.

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#all = affine_map<(d0, d1) -> ()>

// Softmax's row sum: 8 rows of 100 elements, 128 threads per block.
// CHECK-LABEL: func.func @row_sum_exp(
// CHECK-SAME:      %[[X:.*]]: memref<8x100xf32>, %[[Y:.*]]: memref<8xf32>)
// CHECK-DAG:     %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG:     %[[C128:.*]] = arith.constant 128 : index
// CHECK:         gpu.launch blocks(%[[ROW:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C8]], %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads(%[[TID:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C128]],
// CHECK:           %[[ZERO:.*]] = arith.constant -0.000000e+00 : f32
// CHECK:           %[[PART:.*]] = scf.for %[[R:.*]] = %[[TID]] to %c100 step %{{.*}} iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (f32) {
// CHECK:             %[[V:.*]] = memref.load %[[X]][%[[ROW]], %[[R]]]
// CHECK:             %[[E:.*]] = math.exp %[[V]]
// CHECK:             %[[S:.*]] = arith.addf %[[E]], %[[ACC]]
// CHECK:             scf.yield %[[S]]
// CHECK:           %[[TOT:.*]] = gpu.all_reduce add %[[PART]] uniform
// CHECK:           %[[FIRST:.*]] = arith.cmpi eq, %[[TID]], %c0
// CHECK:           scf.if %[[FIRST]] {
// CHECK:             %[[OLD:.*]] = memref.load %[[Y]][%[[ROW]]]
// CHECK:             %[[NEW:.*]] = arith.addf %[[TOT]], %[[OLD]]
// CHECK:             memref.store %[[NEW]], %[[Y]][%[[ROW]]]
// CHECK:           gpu.terminator
// CHECK-NOT:     linalg.generic
func.func @row_sum_exp(%x: memref<8x100xf32>, %y: memref<8xf32>) {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x100xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    %s = arith.addf %e, %out : f32
    linalg.yield %s : f32
  }
  return
}

// Row maximum over 4096 elements: at most 256 threads; the 2 x 3 rows are
// the block index, row-major; the identity is -inf.
// CHECK-LABEL: func.func @row_max(
// CHECK:         gpu.launch blocks(%[[ROW:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c6, {{.*}} threads(%[[TID:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256,
// CHECK:           %[[D1:.*]] = arith.remui %[[ROW]], %c3
// CHECK:           %[[D0:.*]] = arith.divui %[[ROW]], %c3
// CHECK:           arith.constant 0xFF800000 : f32
// CHECK:           scf.for %[[R:.*]] = %[[TID]] to %c4096 step
// CHECK:             memref.load %{{.*}}[%[[D0]], %[[D1]], %[[R]]]
// CHECK:             arith.maximumf
// CHECK:           gpu.all_reduce maximumf %{{.*}} uniform
// CHECK:             arith.maximumf
// CHECK:             memref.store %{{.*}}, %{{.*}}[%[[D0]], %[[D1]]]
func.func @row_max(%x: memref<2x3x4096xf32>, %y: memref<2x3xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x : memref<2x3x4096xf32>) outs(%y : memref<2x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %out, %in : f32
    linalg.yield %m : f32
  }
  return
}

// A full reduction (a loss): one block of 64 threads over the 16 x 4
// elements flattened (innermost fastest).
// CHECK-LABEL: func.func @full_sum(
// CHECK:         gpu.launch {{.*}} in (%{{.*}} = %c1{{.*}}, {{.*}} threads({{.*}}) in (%{{.*}} = %c64,
// CHECK:           scf.for %[[R:.*]] = %{{.*}} to %c64
// CHECK:             %[[J:.*]] = arith.remui %[[R]], %c4
// CHECK:             %[[I:.*]] = arith.divui %[[R]], %c4
// CHECK:             memref.load %{{.*}}[%[[I]], %[[J]]] : memref<16x4xf32>
// CHECK:           gpu.all_reduce add
// CHECK:             memref.load %{{.*}}[] : memref<f32>
func.func @full_sum(%x: memref<16x4xf32>, %y: memref<f32>) {
  linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction", "reduction"]}
      ins(%x : memref<16x4xf32>) outs(%y : memref<f32>) {
  ^bb0(%in: f32, %out: f32):
    %sq = arith.mulf %in, %in : f32
    %s = arith.addf %sq, %out : f32
    linalg.yield %s : f32
  }
  return
}

// A column sum (a bias gradient): the innermost loop is parallel, so one
// thread per column (consecutive threads, consecutive columns) runs the
// reduction loop in the linalg op's order from the output's value.
// CHECK-LABEL: func.func @column_sum(
// CHECK-SAME:      %[[X:.*]]: memref<16x64xf32>, %[[Y:.*]]: memref<64xf32>)
// CHECK:         gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c1{{.*}}, {{.*}} threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c64,
// CHECK:           %[[BASE:.*]] = arith.muli %[[B]], %c64
// CHECK:           %[[COL:.*]] = arith.addi %[[BASE]], %[[T]]
// CHECK:           %[[IN:.*]] = arith.cmpi ult, %[[COL]], %c64
// CHECK:           scf.if %[[IN]] {
// CHECK:             %[[INIT:.*]] = memref.load %[[Y]][%[[COL]]]
// CHECK:             %[[SUM:.*]] = scf.for %[[R:.*]] = %c0 to %c16 step %c1{{.*}} iter_args(%[[ACC:.*]] = %[[INIT]])
// CHECK:               %[[V:.*]] = memref.load %[[X]][%[[R]], %[[COL]]]
// CHECK:               arith.addf %[[V]], %[[ACC]]
// CHECK:             memref.store %[[SUM]], %[[Y]][%[[COL]]]
// CHECK-NOT:     linalg.generic
func.func @column_sum(%x: memref<16x64xf32>, %y: memref<64xf32>) {
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<16x64xf32>) outs(%y : memref<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  }
  return
}

// The output's value is used twice: no combiner, so one thread per row with
// the serial loop (no gpu.all_reduce).
// CHECK-LABEL: func.func @not_a_combiner(
// CHECK:         gpu.launch
// CHECK-NOT:       gpu.all_reduce
// CHECK:           scf.for %{{.*}} = %c0 to %c100 step
// CHECK:             arith.subf
// CHECK-NOT:     linalg.generic
func.func @not_a_combiner(%x: memref<8x100xf32>, %y: memref<8xf32>) {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x100xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %d = arith.subf %in, %out : f32
    %s = arith.addf %d, %out : f32
    linalg.yield %s : f32
  }
  return
}

// With max-threads=0 every reduction is thread-per-output (the CPU
// backend's arithmetic): no gpu.all_reduce anywhere.
// SERIAL-LABEL: func.func @row_sum_exp(
// SERIAL:         gpu.launch
// SERIAL-NOT:     gpu.all_reduce
// SERIAL:           scf.for %{{.*}} = %c0 to %c100 step %c1
// SERIAL:             math.exp
// SERIAL-LABEL: func.func @on_tensors(
// SERIAL-NOT:     gpu.launch

// Tensors (before bufferization) are left alone.
// CHECK-LABEL: func.func @on_tensors(
// CHECK-NOT:     gpu.launch
func.func @on_tensors(%x: tensor<8x100xf32>, %y: tensor<8xf32>) -> tensor<8xf32> {
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8x100xf32>) outs(%y : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
