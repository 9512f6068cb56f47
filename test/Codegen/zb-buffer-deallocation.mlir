// RUN: zb-opt %s --zb-buffer-deallocation --split-input-file | FileCheck %s
// RUN: zb-opt %s --zb-buffer-deallocation --bufferization-lower-deallocations --split-input-file | FileCheck %s --check-prefix=LOWERED

// A step function frees every buffer it owns right after its last use (or
// a view's last use), not at the end of the step: F's saved buffer after W,
// the sent buffer after the send. A callee that returns one buffer twice (a
// value both sent and saved) has it freed once.

func.func private @use(memref<4xf32>)
func.func private @send(memref<?xf32, strided<[?], offset: ?>>)

func.func private @forward(%x: memref<4xf32>) -> (memref<4xf32>, memref<4xf32>, memref<4xf32>) {
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<4xf32>
  return %a, %a, %b : memref<4xf32>, memref<4xf32>, memref<4xf32>
}

// CHECK-LABEL: func.func @zb_rank0_step
func.func @zb_rank0_step(%x: memref<4xf32>) attributes {zb.rank = 0 : i64} {
  // CHECK:      %[[F0:.*]]:3 = call @forward
  %f0:3 = call @forward(%x) : (memref<4xf32>) -> (memref<4xf32>, memref<4xf32>, memref<4xf32>)
  // CHECK-NEXT: %[[CAST:.*]] = memref.cast %[[F0]]#0
  // CHECK-NEXT: call @send(%[[CAST]])
  %c = memref.cast %f0#0 : memref<4xf32> to memref<?xf32, strided<[?], offset: ?>>
  call @send(%c) : (memref<?xf32, strided<[?], offset: ?>>) -> ()
  // The second call's #0/#1 buffer has no use: freed right after it.
  // CHECK-NEXT: %[[F1:.*]]:3 = call @forward
  // CHECK-NEXT: memref.dealloc %[[F1]]#0
  %f1:3 = call @forward(%x) : (memref<4xf32>) -> (memref<4xf32>, memref<4xf32>, memref<4xf32>)
  // Results #1 and #2 of the first call die here; #1 is #0's buffer.
  // CHECK-NEXT: call @use(%[[F0]]#1)
  // CHECK-NEXT: memref.dealloc %[[F0]]#0
  call @use(%f0#1) : (memref<4xf32>) -> ()
  // CHECK-NEXT: call @use(%[[F0]]#2)
  // CHECK-NEXT: memref.dealloc %[[F0]]#2
  call @use(%f0#2) : (memref<4xf32>) -> ()
  // An unused result is freed right away; the argument never.
  // CHECK-NEXT: %[[ALLOC:.*]] = memref.alloc
  // CHECK-NEXT: memref.dealloc %[[ALLOC]]
  %unused = memref.alloc() : memref<8xf32>
  // CHECK-NEXT: call @use(%[[F1]]#2)
  // CHECK-NEXT: memref.dealloc %[[F1]]#2
  call @use(%f1#2) : (memref<4xf32>) -> ()
  // CHECK-NEXT: return
  return
}

// LOWERED-LABEL: func.func @zb_rank0_step
// LOWERED-NOT:   dealloc_helper
// LOWERED-NOT:   scf.if
// LOWERED:       return

// -----

// Other functions keep ownership-based deallocation (bufferization.dealloc
// at the end of the block, here lowered to memref.dealloc).
// CHECK-LABEL: func.func @stage
// CHECK:       %[[A:.*]] = memref.alloc
// CHECK:       bufferization.dealloc (%[[A]]
func.func @stage(%x: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %a = memref.alloc() : memref<4xf32>
  memref.copy %x, %a : memref<4xf32> to memref<4xf32>
  %v = memref.load %a[%c0] : memref<4xf32>
  return %v : f32
}

// -----

// A step function with more than one block falls back to ownership-based
// deallocation.
// CHECK-LABEL: func.func @zb_rank1_step
// CHECK:       bufferization.dealloc
func.func @zb_rank1_step(%x: memref<4xf32>, %c: i1) attributes {zb.rank = 1 : i64} {
  %a = memref.alloc() : memref<4xf32>
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  memref.copy %x, %a : memref<4xf32> to memref<4xf32>
  cf.br ^bb2
^bb2:
  return
}
