// RUN: zb-opt %s -split-input-file -zb-memref-copy-to-linalg | FileCheck %s
// RUN: zb-opt %s -split-input-file -zb-memref-copy-to-linalg -convert-linalg-to-loops -expand-strided-metadata -finalize-memref-to-llvm | FileCheck %s --check-prefix=LLVM

// A contiguous copy becomes linalg.copy with the same operands.
// CHECK-LABEL: func.func @contiguous
//  CHECK-SAME: (%[[A:.*]]: memref<4x8xf32>, %[[B:.*]]: memref<4x8xf32>)
//  CHECK-NEXT:   linalg.copy ins(%[[A]] : memref<4x8xf32>) outs(%[[B]] : memref<4x8xf32>)
//  CHECK-NEXT:   return
// LLVM-LABEL: func.func @contiguous
//   LLVM-NOT: memrefCopy
func.func @contiguous(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
  memref.copy %a, %b : memref<4x8xf32> to memref<4x8xf32>
  return
}

// -----

// A strided (non-contiguous) copy: without the pass, finalize-memref-to-llvm
// would call MLIR's runner-utility memrefCopy; with it, it is loops.
// CHECK-LABEL: func.func @strided
//  CHECK-NEXT:   %[[V:.*]] = memref.subview
//  CHECK-NEXT:   linalg.copy ins(%[[V]] : memref<4x2xf32, strided<[8, 1], offset: 2>>) outs(%{{.*}} : memref<4x2xf32>)
//   CHECK-NOT:   memref.copy
// LLVM-LABEL: func.func @strided
//   LLVM-NOT: memrefCopy
//       LLVM: scf.for
func.func @strided(%a: memref<4x8xf32>, %b: memref<4x2xf32>) {
  %v = memref.subview %a[0, 2] [4, 2] [1, 1] : memref<4x8xf32> to memref<4x2xf32, strided<[8, 1], offset: 2>>
  memref.copy %v, %b : memref<4x2xf32, strided<[8, 1], offset: 2>> to memref<4x2xf32>
  return
}

// -----

// Integer element types are copied the same way.
// CHECK-LABEL: func.func @int64
//  CHECK-NEXT:   linalg.copy ins(%{{.*}} : memref<3xi64>) outs(%{{.*}} : memref<3xi64>)
func.func @int64(%a: memref<3xi64>, %b: memref<3xi64>) {
  memref.copy %a, %b : memref<3xi64> to memref<3xi64>
  return
}
