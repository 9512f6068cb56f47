// RUN: zb-opt %s --zb-gpu-wrap-scalar-ops | FileCheck %s
// RUN: zb-opt %s --pass-pipeline='builtin.module(func.func(zb-gpu-wrap-scalar-ops,convert-linalg-to-parallel-loops,scf-parallel-loop-tiling{parallel-loop-tile-sizes=256 no-min-max-bounds=true},gpu-map-parallel-loops,convert-parallel-loops-to-gpu),gpu-kernel-outlining)' | FileCheck %s --check-prefix=KERNEL

// The loss of a rank: the microbatches' rank-0 losses summed and scaled,
// then copied to the output. Each loop-free linalg op goes into a
// one-iteration scf.parallel; a linalg op with loops stays as it is.
// CHECK-LABEL: func.func @loss(
// CHECK:         scf.parallel (%{{.*}}) = (%c0{{.*}}) to (%c1{{.*}}) step (%c1{{.*}}) {
// CHECK-NEXT:      linalg.fill
// CHECK:         scf.parallel (%{{.*}}) = (%c0{{.*}}) to (%c1{{.*}}) step (%c1{{.*}}) {
// CHECK-NEXT:      linalg.generic
// CHECK:         scf.parallel (%{{.*}}) = (%c0{{.*}}) to (%c1{{.*}}) step (%c1{{.*}}) {
// CHECK-NEXT:      linalg.copy
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel"]
// CHECK-NOT:     scf.parallel
// CHECK:         return

// After the GPU mapping no load or store of element data is left in the
// host function: each scalar op is a (one-thread) kernel.
// KERNEL-LABEL: func.func @loss(
// KERNEL-NOT:     memref.load
// KERNEL-NOT:     memref.store
// KERNEL:         gpu.launch_func
// KERNEL:         return
// KERNEL:       gpu.module
#id = affine_map<() -> ()>
#v = affine_map<(d0) -> (d0)>
func.func @loss(%l0: memref<f32>, %l1: memref<f32>, %out: memref<f32>,
                %x: memref<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %acc = memref.alloc() : memref<f32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<f32>)
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = []}
      ins(%l0, %l1 : memref<f32>, memref<f32>) outs(%acc : memref<f32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %s = arith.addf %a, %b : f32
    %m = arith.mulf %s, %half : f32
    linalg.yield %m : f32
  }
  linalg.copy ins(%acc : memref<f32>) outs(%out : memref<f32>)
  linalg.generic {indexing_maps = [#v], iterator_types = ["parallel"]}
      outs(%x : memref<8xf32>) {
  ^bb0(%c: f32):
    linalg.yield %zero : f32
  }
  memref.dealloc %acc : memref<f32>
  return
}
