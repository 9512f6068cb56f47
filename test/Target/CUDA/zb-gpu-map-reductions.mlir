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

// A column sum (a bias gradient): the innermost loop is parallel, so a
// block is 32 consecutive columns (consecutive threads, consecutive
// columns) x 8 threads striding over the 16 rows; the 8 partials of a
// column meet in workgroup memory by a tree of 3 levels with a barrier
// after each, and row 0 adds the total to the output.
// CHECK-LABEL: func.func @column_sum(
// CHECK-SAME:      %[[X:.*]]: memref<16x64xf32>, %[[Y:.*]]: memref<64xf32>)
// CHECK:         gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c2, %{{.*}} = %c1, %{{.*}} = %c1) threads(%[[T:.*]], %[[TY:.*]], %{{.*}}) in (%{{.*}} = %c32, %{{.*}} = %c8, %{{.*}} = %c1) workgroup(%[[SH:.*]] : memref<8x32xf32, #gpu.address_space<workgroup>>)
// CHECK:           %[[BASE:.*]] = arith.muli %[[B]], %c32
// CHECK:           %[[COL:.*]] = arith.addi %[[BASE]], %[[T]]
// CHECK:           %[[ZERO:.*]] = arith.constant -0.000000e+00 : f32
// CHECK:           %[[IN:.*]] = arith.cmpi ult, %[[COL]], %c64
// CHECK:           %[[PART:.*]] = scf.if %[[IN]] -> (f32) {
// CHECK:             %[[SUM:.*]] = scf.for %[[R:.*]] = %[[TY]] to %c16 step %c8{{.*}} iter_args(%[[ACC:.*]] = %[[ZERO]])
// CHECK:               %[[V:.*]] = memref.load %[[X]][%[[R]], %[[COL]]]
// CHECK:               arith.addf %[[V]], %[[ACC]]
// CHECK:             scf.yield %[[SUM]]
// CHECK:           } else {
// CHECK:             scf.yield %[[ZERO]]
// CHECK:           memref.store %[[PART]], %[[SH]][%[[TY]], %[[T]]]
// CHECK-NEXT:      gpu.barrier
// CHECK:           arith.cmpi ult, %[[TY]], %c4
// CHECK:             memref.load %[[SH]]
// CHECK:             memref.load %[[SH]]
// CHECK:             arith.addf
// CHECK:             memref.store
// CHECK:           gpu.barrier
// CHECK:           arith.cmpi ult, %[[TY]], %c2
// CHECK:           gpu.barrier
// CHECK:           arith.cmpi ult, %[[TY]], %c1
// CHECK:           gpu.barrier
// CHECK:           %[[ROW0:.*]] = arith.cmpi eq, %[[TY]], %c0
// CHECK:           %[[LAST:.*]] = arith.andi %[[ROW0]],
// CHECK:           scf.if %[[LAST]] {
// CHECK:             %[[OLD:.*]] = memref.load %[[Y]][%[[COL]]]
// CHECK:             %[[TOT:.*]] = memref.load %[[SH]][%c0{{.*}}, %[[T]]]
// CHECK:             %[[NEW:.*]] = arith.addf %[[TOT]], %[[OLD]]
// CHECK:             memref.store %[[NEW]], %[[Y]][%[[COL]]]
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
// SERIAL-LABEL: func.func @column_sum(
// SERIAL-NOT:     workgroup
// SERIAL:         scf.for %{{.*}} = %c0 to %c16 step %c1
// SERIAL-NOT:     gpu.barrier
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

// A column sum over many rows (a bias gradient over 1024 tokens): its 2
// column blocks alone would leave the GPU idle, so the 1024 rows are split
// over 32 blocks (columnSplits: blocks x splits toward 264, each thread at
// least 4 rows): block (b, s) sums rows [32 s, 32 s + 32) of its columns,
// row 0 of its tile stores the total into partials[s][column], and a
// second kernel, one thread per column, adds the 32 partials in order and
// then the output's value.
// With max-threads=0: one thread per column, no second kernel.
// SERIAL-LABEL: func.func @column_sum_split(
// SERIAL-NOT:     memref.alloc
// SERIAL:         scf.for %{{.*}} = %c0 to %c1024 step %c1
// SERIAL-NOT:     gpu.launch
// CHECK-LABEL: func.func @column_sum_split(
// CHECK-SAME:      %[[X:.*]]: memref<1024x64xf32>, %[[Y:.*]]: memref<64xf32>)
// CHECK:         %[[P:.*]] = memref.alloc() : memref<32x64xf32>
// CHECK:         gpu.launch blocks(%[[B:.*]], %[[S:.*]], %{{.*}}) in (%{{.*}} = %c2, %{{.*}} = %c32{{.*}}, %{{.*}} = %c1) threads(%[[T:.*]], %[[TY:.*]], %{{.*}}) in (%{{.*}} = %c32, %{{.*}} = %c8, %{{.*}} = %c1)
// CHECK:           %[[COL:.*]] = arith.addi
// CHECK:           %[[FIRST:.*]] = arith.muli %[[S]], %c32
// CHECK:           %[[LO:.*]] = arith.addi %[[FIRST]], %[[TY]]
// CHECK:           %[[END:.*]] = arith.addi %[[FIRST]], %c32
// CHECK:           %[[HI:.*]] = arith.minui %[[END]], %c1024
// CHECK:           scf.for %{{.*}} = %[[LO]] to %[[HI]] step %c8
// CHECK:           gpu.barrier
// CHECK:           memref.store %{{.*}}, %[[P]][%[[S]], %[[COL]]] : memref<32x64xf32>
// CHECK:           gpu.terminator
// CHECK:         gpu.launch blocks(%[[B2:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) threads(%[[T2:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}})
// CHECK:           %[[P0:.*]] = memref.load %[[P]][%c0, %[[C2:.*]]] : memref<32x64xf32>
// CHECK:           %[[SUM:.*]] = scf.for %[[K:.*]] = %c1{{.*}} to %c32{{.*}} step %c1{{.*}} iter_args(%[[ACC:.*]] = %[[P0]])
// CHECK:             %[[PK:.*]] = memref.load %[[P]][%[[K]], %[[C2]]]
// CHECK:             arith.addf %[[PK]], %[[ACC]]
// CHECK:           %[[OLD:.*]] = memref.load %[[Y]][%[[C2]]]
// CHECK:           %[[NEW:.*]] = arith.addf %[[SUM]], %[[OLD]]
// CHECK:           memref.store %[[NEW]], %[[Y]][%[[C2]]]
// CHECK:         memref.dealloc %[[P]] : memref<32x64xf32>
func.func @column_sum_split(%x: memref<1024x64xf32>, %y: memref<64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>], iterator_types = ["reduction", "parallel"]} ins(%x : memref<1024x64xf32>) outs(%y : memref<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  }
  return
}

// Layer norm's gamma and beta gradients in one op: two outputs summed over
// the (2, 3) leading dimensions of a 2x3x5 input; 5 columns -> a tile of 8
// (3 idle threads per row), 6 reduced -> 8 rows (the reduction indices
// flattened, innermost fastest); one workgroup buffer per output.
// CHECK-LABEL: func.func @two_column_sums(
// CHECK:         gpu.launch blocks({{.*}}) in (%{{.*}} = %c1{{.*}}) threads(%[[T:.*]], %[[TY:.*]], %{{.*}}) in (%{{.*}} = %c8{{.*}}, %{{.*}} = %c8{{.*}}, %{{.*}} = %c1{{.*}}) workgroup(%[[S0:.*]] : memref<8x8xf32, #gpu.address_space<workgroup>>, %[[S1:.*]] : memref<8x8xf32, #gpu.address_space<workgroup>>)
// CHECK:           scf.for %[[R:.*]] = %[[TY]] to %c6 step %c8
// CHECK:             %[[J:.*]] = arith.remui %[[R]], %c3
// CHECK:             %[[I:.*]] = arith.divui %[[R]], %c3
// CHECK:             memref.load %{{.*}}[%[[I]], %[[J]], %{{.*}}] : memref<2x3x5xf32>
// CHECK:             arith.mulf
// CHECK:             arith.addf
// CHECK:             arith.addf
// CHECK-COUNT-3:   gpu.barrier
// CHECK:           gpu.barrier
// CHECK-NOT:       gpu.barrier
// CHECK:           gpu.terminator
// SERIAL-LABEL: func.func @two_column_sums(
// SERIAL-NOT:     workgroup
func.func @two_column_sums(%x: memref<2x3x5xf32>, %g: memref<2x3x5xf32>, %dgamma: memref<5xf32>, %dbeta: memref<5xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d2)>], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%x, %g : memref<2x3x5xf32>, memref<2x3x5xf32>) outs(%dgamma, %dbeta : memref<5xf32>, memref<5xf32>) {
  ^bb0(%a: f32, %b: f32, %o0: f32, %o1: f32):
    %p = arith.mulf %a, %b : f32
    %s0 = arith.addf %p, %o0 : f32
    %s1 = arith.addf %b, %o1 : f32
    linalg.yield %s0, %s1 : f32, f32
  }
  return
}

// A "reduction" over one element has nothing to share: one thread per
// output.
// CHECK-LABEL: func.func @one_row(
// CHECK-NOT:     workgroup
// CHECK:         scf.for %{{.*}} = %c0{{.*}} to %c1{{.*}} step %c1
func.func @one_row(%x: memref<1x64xf32>, %y: memref<64xf32>) {
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<1x64xf32>) outs(%y : memref<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  }
  return
}

// A reduction into a freshly filled buffer: the fill is folded into the
// kernel (thread 0 adds the total to the fill's value, no load, no fill
// kernel); with max-threads=0 the serial loop starts from it.
// CHECK-LABEL: func.func @filled_row_sum(
// CHECK-NOT:     linalg.fill
// CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         %[[BUF:.*]] = memref.alloc() : memref<8xf32>
// CHECK-NOT:     linalg.fill
// CHECK:         gpu.all_reduce add
// CHECK:         scf.if
// CHECK-NOT:       memref.load %[[BUF]]
// CHECK:           %[[NEW:.*]] = arith.addf %{{.*}}, %[[ZERO]]
// CHECK:           memref.store %[[NEW]], %[[BUF]]
// SERIAL-LABEL: func.func @filled_row_sum(
// SERIAL-NOT:     linalg.fill
// SERIAL:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// SERIAL-NOT:     memref.load %{{.*}} : memref<8xf32>
// SERIAL:         scf.for %{{.*}} = %c0 to %c100 step %c1{{.*}} iter_args(%{{.*}} = %[[ZERO]])
func.func @filled_row_sum(%x: memref<8x100xf32>) -> memref<8xf32> {
  %zero = arith.constant 0.0 : f32
  %y = memref.alloc() : memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%y : memref<8xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x100xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  }
  return %y : memref<8xf32>
}

// Not folded: a view of the filled buffer is taken before the reduction
// (something else may read the filled values through it), and a function
// argument's fill (the caller sees it) stays too.
// CHECK-LABEL: func.func @fill_kept(
// CHECK:         linalg.fill
// CHECK:         memref.subview
// CHECK:         linalg.fill
// CHECK:         gpu.launch
// CHECK:           memref.load
// CHECK:         gpu.launch
// CHECK:           memref.load
func.func @fill_kept(%x: memref<16x64xf32>, %arg: memref<64xf32>) -> memref<2xf32> {
  %zero = arith.constant 0.0 : f32
  %y = memref.alloc() : memref<64xf32>
  linalg.fill ins(%zero : f32) outs(%y : memref<64xf32>)
  %view = memref.subview %y[0] [2] [1] : memref<64xf32> to memref<2xf32, strided<[1]>>
  %copy = memref.alloc() : memref<2xf32>
  linalg.fill ins(%zero : f32) outs(%arg : memref<64xf32>)
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<16x64xf32>) outs(%y : memref<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<16x64xf32>) outs(%arg : memref<64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  }
  memref.copy %view, %copy : memref<2xf32, strided<[1]>> to memref<2xf32>
  return %copy : memref<2xf32>
}
