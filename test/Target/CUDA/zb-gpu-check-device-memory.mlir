// RUN: zb-opt %s --split-input-file --zb-gpu-check-device-memory -verify-diagnostics | FileCheck %s

// zb-gpu-check-device-memory: every buffer a kernel or a zbrt_* runtime call
// reads must be device memory. Host memory (a global of the rank library,
// the host's stack) is refused where it reaches one, through views and
// calls of the module's own functions, naming the kernel or function and
// the operand.

// Step arguments and allocations are device memory; a constant sunk into
// the kernel is read there: nothing to report.
// CHECK-LABEL: func.func @device_only
module attributes {gpu.container_module} {
  gpu.module @k {
    memref.global "private" constant @ids : memref<4xi64> = dense<1>
    gpu.func @k(%a: memref<4xf32>, %b: memref<4xf32>) kernel {
      %g = memref.get_global @ids : memref<4xi64>
      gpu.return
    }
  }
  func.func @device_only(%arg: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    %buf = memref.alloc() : memref<4xf32>
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%arg : memref<4xf32>, %buf : memref<4xf32>)
    return
  }
}

// -----

// A constant global handed to a kernel (what a missing
// zb-gpu-sink-constants leaves; the GPU faults on it).
module attributes {gpu.container_module} {
  memref.global "private" constant @ids : memref<1x4xi64> = dense<1>
  gpu.module @k {
    gpu.func @k(%a: memref<4xf32>, %b: memref<4xi64>) kernel {
      gpu.return
    }
  }
  func.func @constant_to_kernel(%arg: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    // expected-note @below {{the host buffer comes from here}}
    %g = memref.get_global @ids : memref<1x4xi64>
    %v = memref.collapse_shape %g [[0, 1]] : memref<1x4xi64> into memref<4xi64>
    // expected-error @below {{zb: kernel @k::@k would read host memory through operand #1: memref.get_global @ids (a global of the rank library, host memory)}}
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%arg : memref<4xf32>, %v : memref<4xi64>)
    return
  }
}

// -----

// Through a call of the module's own function (zb-outline-step-loops makes
// those), and into a runtime GEMM: both refused.
module attributes {gpu.container_module} {
  memref.global "private" constant @table : memref<4x4xf32> = dense<1.0>
  gpu.module @k {
    gpu.func @k(%a: memref<4x4xf32>) kernel {
      gpu.return
    }
  }
  func.func private @zbrt_sgemm_memref(memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, i32, i32)
  func.func private @helper(%t: memref<4x4xf32>) {
    %c1 = arith.constant 1 : index
    // expected-error @below {{zb: kernel @k::@k would read host memory through operand #0: memref.get_global @table}}
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%t : memref<4x4xf32>)
    return
  }
  func.func @step(%w: memref<4x4xf32>, %out: memref<4x4xf32>) {
    %c0 = arith.constant 0 : i32
    // expected-note @below {{the host buffer comes from here}}
    %g = memref.get_global @table : memref<4x4xf32>
    func.call @helper(%g) : (memref<4x4xf32>) -> ()
    // expected-note @below {{the host buffer comes from here}}
    %h = memref.get_global @table : memref<4x4xf32>
    %a = memref.cast %h : memref<4x4xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
    %b = memref.cast %w : memref<4x4xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
    %c = memref.cast %out : memref<4x4xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
    // expected-error @below {{zb: runtime call @zbrt_sgemm_memref would read host memory through operand #0: memref.get_global @table (a global of the rank library, host memory); cuBLAS and NCCL need device memory}}
    func.call @zbrt_sgemm_memref(%a, %b, %c, %c0, %c0) : (memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, i32, i32) -> ()
    return
  }
}

// -----

// The host's stack.
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @k(%a: memref<4xf32>) kernel {
      gpu.return
    }
  }
  func.func @stack() {
    %c1 = arith.constant 1 : index
    // expected-note @below {{the host buffer comes from here}}
    %s = memref.alloca() : memref<4xf32>
    // expected-error @below {{zb: kernel @k::@k would read host memory through operand #0: memref.alloca (the host's stack)}}
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%s : memref<4xf32>)
    return
  }
}
