// RUN: zb-opt %s --split-input-file --zb-gpu-check-host-loops -verify-diagnostics | FileCheck %s

// zb-gpu-check-host-loops: after the kernels are outlined, the host code of
// a CUDA rank program only allocates, launches and calls the runtime. A
// parallel loop left in host code, or a load or store of an element outside
// a gpu.module, would compute on device memory from the host: refused.

// Loops and element accesses inside the kernels, and the deallocation
// helper's index/i1 host lists: accepted, IR unchanged.
// CHECK-LABEL: func.func @kernels_only
// CHECK: gpu.launch_func @k::@k
// CHECK: memref.load %{{.*}} : memref<2xindex>
// CHECK: memref.store %{{.*}} : memref<2xi1>
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @k(%a: memref<4xf32>) kernel {
      %c0 = arith.constant 0 : index
      %c4 = arith.constant 4 : index
      %c1 = arith.constant 1 : index
      scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
        %x = memref.load %a[%i] : memref<4xf32>
        memref.store %x, %a[%i] : memref<4xf32>
        scf.reduce
      }
      gpu.return
    }
  }
  func.func @kernels_only(%arg: memref<4xf32>, %list: memref<2xindex>,
                          %flags: memref<2xi1>) -> index {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %true = arith.constant true
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%arg : memref<4xf32>)
    %n = memref.load %list[%c0] : memref<2xindex>
    memref.store %true, %flags[%c0] : memref<2xi1>
    return %n : index
  }
}

// -----

// A parallel loop that convert-parallel-loops-to-gpu did not map.
func.func @host_loop(%a: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %f = arith.constant 1.0 : f32
  // expected-error @+1 {{zb: a parallel loop was not mapped to a GPU kernel (convert-parallel-loops-to-gpu left it in host code)}}
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    memref.store %f, %a[%i] : memref<4xf32>
    scf.reduce
  }
  return
}

// -----

// The host reading an element of a device buffer (a scalar op not wrapped
// into a kernel).
func.func @host_read(%a: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{zb: host code reads device memory outside a GPU kernel (memref.load)}}
  %x = memref.load %a[%c0] : memref<4xf32>
  return %x : f32
}

// -----

// The host writing an element (an integer buffer is device memory too).
func.func @host_write(%a: memref<4xi32>) {
  %c0 = arith.constant 0 : index
  %v = arith.constant 7 : i32
  // expected-error @+1 {{zb: host code writes device memory outside a GPU kernel (memref.store)}}
  memref.store %v, %a[%c0] : memref<4xi32>
  return
}
