// RUN: zb-opt %s --zb-gpu-flatten-parallel-loops --canonicalize | FileCheck %s
// RUN: zb-opt %s --zb-gpu-flatten-parallel-loops | FileCheck %s --check-prefix=NEST

// A 2 x 3 x 5 parallel loop becomes one loop over 30 linear indices, the
// last dimension fastest: mapped to threads, consecutive threads touch
// consecutive elements of the innermost dimension.
// CHECK-LABEL: func.func @copy3(
// CHECK-SAME:      %[[A:.*]]: memref<2x3x5xf32>, %[[B:.*]]: memref<2x3x5xf32>)
// CHECK:         scf.parallel (%[[L:.*]]) = (%c0) to (%c30) step (%c1) {
// CHECK:           %[[K:.*]] = arith.remsi %[[L]], %c5
// CHECK:           %[[IJ:.*]] = arith.divsi %[[L]], %c5
// CHECK:           %[[J:.*]] = arith.remsi %[[IJ]], %c3
// CHECK:           %[[I:.*]] = arith.divsi %[[IJ]], %c3
// CHECK:           %[[V:.*]] = memref.load %[[A]][%[[I]], %[[J]], %[[K]]]
// CHECK:           memref.store %[[V]], %[[B]][%[[I]], %[[J]], %[[K]]]
func.func @copy3(%a: memref<2x3x5xf32>, %b: memref<2x3x5xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%c2, %c3, %c5) step (%c1, %c1, %c1) {
    %v = memref.load %a[%i, %j, %k] : memref<2x3x5xf32>
    memref.store %v, %b[%i, %j, %k] : memref<2x3x5xf32>
    scf.reduce
  }
  return
}

// A one-dimensional loop and a nested one (not outermost) stay as they are.
// NEST-LABEL: func.func @one_dim(
// NEST:         scf.parallel (%{{.*}}) = (%c0) to (%c8) step (%c1) {
// NEST:           scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%c2, %c2)
func.func @one_dim(%a: memref<8x2x2xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    scf.parallel (%j, %k) = (%c0, %c0) to (%c2, %c2) step (%c1, %c1) {
      memref.store %f, %a[%i, %j, %k] : memref<8x2x2xf32>
      scf.reduce
    }
    scf.reduce
  }
  return
}
