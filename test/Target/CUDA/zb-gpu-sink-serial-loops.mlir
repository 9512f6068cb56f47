// RUN: zb-opt %s -split-input-file --zb-gpu-sink-serial-loops | FileCheck %s

// The scatter-add of an embedding gradient (acc[ids[n], :] += upd[n, :]):
// the parallel loop over a row's elements goes outside, the serial loop over
// tokens inside every thread, in the same order (each element gets its
// additions in the original order), and the id load and the row views move
// with it.
// CHECK-LABEL: func.func @scatter(
// CHECK:         scf.parallel (%[[A:.*]], %[[B:.*]]) = (%c0, %c0) to (%c1, %c4) step (%c1, %c1) {
// CHECK-NEXT:      scf.for %[[N:.*]] = %c0 to %c8 step %c1 {
// CHECK-NEXT:        %[[ID:.*]] = memref.load %arg0[%[[N]]] : memref<8xi64>
// CHECK-NEXT:        %[[I:.*]] = arith.index_cast %[[ID]] : i64 to index
// CHECK-NEXT:        %[[SV:.*]] = memref.subview %{{.*}}[%[[I]], 0] [1, 4] [1, 1]
// CHECK-NEXT:        %[[SU:.*]] = memref.subview %arg1[%[[N]], 0] [1, 4] [1, 1]
// CHECK-NEXT:        %[[X:.*]] = memref.load %[[SU]][%[[A]], %[[B]]]
// CHECK-NEXT:        %[[Y:.*]] = memref.load %[[SV]][%[[A]], %[[B]]]
// CHECK-NEXT:        %[[Z:.*]] = arith.addf %[[Y]], %[[X]] : f32
// CHECK-NEXT:        memref.store %[[Z]], %[[SV]][%[[A]], %[[B]]]
// CHECK-NEXT:      }
// CHECK-NEXT:      scf.reduce
func.func @scatter(%ids: memref<8xi64>, %upd: memref<8x4xf32>) -> memref<16x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %acc = memref.alloc() : memref<16x4xf32>
  scf.for %n = %c0 to %c8 step %c1 {
    %id = memref.load %ids[%n] : memref<8xi64>
    %i = arith.index_cast %id : i64 to index
    %sv = memref.subview %acc[%i, 0] [1, 4] [1, 1] : memref<16x4xf32> to memref<1x4xf32, strided<[4, 1], offset: ?>>
    %su = memref.subview %upd[%n, 0] [1, 4] [1, 1] : memref<8x4xf32> to memref<1x4xf32, strided<[4, 1], offset: ?>>
    scf.parallel (%a, %b) = (%c0, %c0) to (%c1, %c4) step (%c1, %c1) {
      %x = memref.load %su[%a, %b] : memref<1x4xf32, strided<[4, 1], offset: ?>>
      %y = memref.load %sv[%a, %b] : memref<1x4xf32, strided<[4, 1], offset: ?>>
      %z = arith.addf %y, %x : f32
      memref.store %z, %sv[%a, %b] : memref<1x4xf32, strided<[4, 1], offset: ?>>
      scf.reduce
    }
  }
  return %acc : memref<16x4xf32>
}

// -----

// Not interchanged: the view's column offset varies with the serial loop
// (threads of different serial iterations could meet on one element).
// CHECK-LABEL: func.func @shifted(
// CHECK:         scf.for
// CHECK:           scf.parallel
func.func @shifted(%upd: memref<8x4xf32>) -> memref<16x12xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %acc = memref.alloc() : memref<16x12xf32>
  scf.for %n = %c0 to %c8 step %c1 {
    %sv = memref.subview %acc[0, %n] [1, 4] [1, 1] : memref<16x12xf32> to memref<1x4xf32, strided<[12, 1], offset: ?>>
    %su = memref.subview %upd[%n, 0] [1, 4] [1, 1] : memref<8x4xf32> to memref<1x4xf32, strided<[4, 1], offset: ?>>
    scf.parallel (%a, %b) = (%c0, %c0) to (%c1, %c4) step (%c1, %c1) {
      %x = memref.load %su[%a, %b] : memref<1x4xf32, strided<[4, 1], offset: ?>>
      %y = memref.load %sv[%a, %b] : memref<1x4xf32, strided<[12, 1], offset: ?>>
      %z = arith.addf %y, %x : f32
      memref.store %z, %sv[%a, %b] : memref<1x4xf32, strided<[12, 1], offset: ?>>
      scf.reduce
    }
  }
  return %acc : memref<16x12xf32>
}

// -----

// Not interchanged: the written buffer is a function argument (it may alias
// the update), and a loop with two parallel loops.
// CHECK-LABEL: func.func @argument(
// CHECK:         scf.for
// CHECK:           scf.parallel
// CHECK-LABEL: func.func @two(
// CHECK:         scf.for
// CHECK:           scf.parallel
// CHECK:           scf.parallel
func.func @argument(%ids: memref<8xi64>, %upd: memref<8x4xf32>, %acc: memref<16x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  scf.for %n = %c0 to %c8 step %c1 {
    %id = memref.load %ids[%n] : memref<8xi64>
    %i = arith.index_cast %id : i64 to index
    %sv = memref.subview %acc[%i, 0] [1, 4] [1, 1] : memref<16x4xf32> to memref<1x4xf32, strided<[4, 1], offset: ?>>
    scf.parallel (%a, %b) = (%c0, %c0) to (%c1, %c4) step (%c1, %c1) {
      %y = memref.load %sv[%a, %b] : memref<1x4xf32, strided<[4, 1], offset: ?>>
      %z = arith.addf %y, %y : f32
      memref.store %z, %sv[%a, %b] : memref<1x4xf32, strided<[4, 1], offset: ?>>
      scf.reduce
    }
  }
  return
}
func.func @two(%ids: memref<8xi64>) -> memref<16x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 1.0 : f32
  %acc = memref.alloc() : memref<16x4xf32>
  scf.for %n = %c0 to %c8 step %c1 {
    %id = memref.load %ids[%n] : memref<8xi64>
    %i = arith.index_cast %id : i64 to index
    %sv = memref.subview %acc[%i, 0] [1, 4] [1, 1] : memref<16x4xf32> to memref<1x4xf32, strided<[4, 1], offset: ?>>
    scf.parallel (%a, %b) = (%c0, %c0) to (%c1, %c4) step (%c1, %c1) {
      memref.store %f, %sv[%a, %b] : memref<1x4xf32, strided<[4, 1], offset: ?>>
      scf.reduce
    }
    scf.parallel (%a, %b) = (%c0, %c0) to (%c1, %c4) step (%c1, %c1) {
      memref.store %f, %sv[%a, %b] : memref<1x4xf32, strided<[4, 1], offset: ?>>
      scf.reduce
    }
  }
  return %acc : memref<16x4xf32>
}
