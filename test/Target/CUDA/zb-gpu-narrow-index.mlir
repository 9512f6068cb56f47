// RUN: zb-opt %s --split-input-file --zb-gpu-narrow-index | FileCheck %s

// A bias add over 16x64 elements flattened by zb-gpu-flatten-parallel-loops,
// as gpu-kernel-outlining leaves it: the block size, the element count and
// the row length arrive as kernel arguments, and the row and column come
// from a 64-bit signed division and remainder by the run-time row length.
// Every launch passes constants: they become constants in the kernel; the
// thread and block ids (< 256, < 4 from known_block_size/known_grid_size)
// bound the flat index below 1024, so the bounds check folds away and the
// division and remainder become i32 ones by the constant 64. The float
// scalar argument becomes a constant too.

// CHECK-LABEL: gpu.func @bias(
// CHECK-DAG:     %[[C64:.+]] = arith.constant 64 : i32
// CHECK-DAG:     %[[C256:.+]] = arith.constant 256 : i32
// CHECK-DAG:     %[[HALF:.+]] = arith.constant 5.000000e-01 : f32
// CHECK:         %[[BID:.+]] = gpu.block_id x
// CHECK:         %[[TID:.+]] = gpu.thread_id x
// CHECK-NOT:     scf.if
// CHECK:         %[[B32:.+]] = arith.index_castui %[[BID]] : index to i32
// CHECK:         %[[OFF:.+]] = arith.muli %[[B32]], %[[C256]] : i32
// CHECK:         %[[T32:.+]] = arith.index_castui %[[TID]] : index to i32
// CHECK:         %[[FLAT:.+]] = arith.addi %[[T32]], %[[OFF]] : i32
// CHECK:         %[[COL32:.+]] = arith.remsi %[[FLAT]], %[[C64]] : i32
// CHECK:         %[[COL:.+]] = arith.index_castui %[[COL32]] : i32 to index
// CHECK:         %[[ROW32:.+]] = arith.divsi %[[FLAT]], %[[C64]] : i32
// CHECK:         %[[ROW:.+]] = arith.index_castui %[[ROW32]] : i32 to index
// CHECK:         memref.load %{{.+}}[%[[ROW]], %[[COL]]]
// CHECK:         arith.mulf %{{.+}}, %[[HALF]] : f32
// CHECK:         memref.store %{{.+}}, %{{.+}}[%[[ROW]], %[[COL]]]
module attributes {gpu.container_module} {
  func.func @step(%a: memref<16x64xf32>, %b: memref<64xf32>, %o: memref<16x64xf32>) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %c256 = arith.constant 256 : index
    %c1024 = arith.constant 1024 : index
    %half = arith.constant 5.000000e-01 : f32
    gpu.launch_func @bias::@bias blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1) args(%c256 : index, %c1024 : index, %c64 : index, %a : memref<16x64xf32>, %b : memref<64xf32>, %half : f32, %o : memref<16x64xf32>)
    return
  }
  gpu.module @bias {
    gpu.func @bias(%arg0: index, %arg1: index, %arg2: index, %arg3: memref<16x64xf32>, %arg4: memref<64xf32>, %arg5: f32, %arg6: memref<16x64xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 4, 1, 1>} {
      %block_id_x = gpu.block_id  x
      %thread_id_x = gpu.thread_id  x
      %0 = arith.muli %block_id_x, %arg0 overflow<nsw> : index
      %1 = arith.addi %thread_id_x, %0 : index
      %2 = arith.cmpi ult, %1, %arg1 : index
      scf.if %2 {
        %3 = arith.remsi %1, %arg2 : index
        %4 = arith.divsi %1, %arg2 : index
        %5 = memref.load %arg3[%4, %3] : memref<16x64xf32>
        %6 = memref.load %arg4[%3] : memref<64xf32>
        %7 = arith.addf %5, %6 : f32
        %8 = arith.mulf %7, %arg5 : f32
        memref.store %8, %arg6[%4, %3] : memref<16x64xf32>
      }
      gpu.return
    }
  }
}

// -----

// Two launches that pass different values (one not a constant): the
// argument stays, and so does the 64-bit division by it.

// CHECK-LABEL: gpu.func @two(
// CHECK-SAME:    %[[N:[a-z0-9]+]]: index
// CHECK:         arith.remui %{{.+}}, %[[N]] : index
// CHECK:         arith.divui %{{.+}}, %[[N]] : index
module attributes {gpu.container_module} {
  func.func @step(%a: memref<16x64xf32>, %n: index) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %c256 = arith.constant 256 : index
    gpu.launch_func @two::@two blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1) args(%c64 : index, %a : memref<16x64xf32>)
    gpu.launch_func @two::@two blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1) args(%n : index, %a : memref<16x64xf32>)
    return
  }
  gpu.module @two {
    gpu.func @two(%arg0: index, %arg1: memref<16x64xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 4, 1, 1>} {
      %thread_id_x = gpu.thread_id  x
      %0 = arith.remui %thread_id_x, %arg0 : index
      %1 = arith.divui %thread_id_x, %arg0 : index
      %cst = arith.constant 0.000000e+00 : f32
      memref.store %cst, %arg1[%1, %0] : memref<16x64xf32>
      gpu.return
    }
  }
}

// -----

// 2^33 elements (2^25 blocks of 256 threads): the flat index does not fit
// in 32 bits, the arithmetic stays on index (its nsw flag dropped: the
// pass drops them on all index arithmetic of a kernel, so that none stays
// on an op narrowed to 32 bits).

// CHECK-LABEL: gpu.func @large(
// CHECK-DAG:     %[[C256:.+]] = arith.constant 256 : index
// CHECK-DAG:     %[[C65536:.+]] = arith.constant 65536 : index
// CHECK:         %[[OFF:.+]] = arith.muli %{{.+}}, %[[C256]] : index
// CHECK:         %[[FLAT:.+]] = arith.addi %{{.+}}, %[[OFF]] : index
// CHECK:         arith.remsi %[[FLAT]], %[[C65536]] : index
// CHECK:         arith.divsi %[[FLAT]], %[[C65536]] : index
// CHECK-NOT:     i32
module attributes {gpu.container_module} {
  func.func @step(%a: memref<131072x65536xf32>) {
    %c1 = arith.constant 1 : index
    %cg = arith.constant 33554432 : index
    %c256 = arith.constant 256 : index
    %c65536 = arith.constant 65536 : index
    gpu.launch_func @large::@large blocks in (%cg, %c1, %c1) threads in (%c256, %c1, %c1) args(%c256 : index, %c65536 : index, %a : memref<131072x65536xf32>)
    return
  }
  gpu.module @large {
    gpu.func @large(%arg0: index, %arg1: index, %arg2: memref<131072x65536xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>, known_grid_size = array<i32: 33554432, 1, 1>} {
      %block_id_x = gpu.block_id  x
      %thread_id_x = gpu.thread_id  x
      %0 = arith.muli %block_id_x, %arg0 overflow<nsw> : index
      %1 = arith.addi %thread_id_x, %0 : index
      %2 = arith.remsi %1, %arg1 : index
      %3 = arith.divsi %1, %arg1 : index
      %cst = arith.constant 0.000000e+00 : f32
      memref.store %cst, %arg2[%3, %2] : memref<131072x65536xf32>
      gpu.return
    }
  }
}
