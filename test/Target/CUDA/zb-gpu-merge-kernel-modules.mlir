// RUN: zb-opt %s --split-input-file --zb-gpu-merge-kernel-modules | FileCheck %s
// RUN: zb-opt %s --split-input-file --zb-gpu-merge-kernel-modules | zb-opt --split-input-file | FileCheck %s

// zb-gpu-merge-kernel-modules: the outliner's one-kernel modules become one
// gpu.module (zb_kernels, renamed on a clash) where each kernel takes its
// old module's name; a module with two kernels prefixes them; every
// gpu.launch_func follows. A module holding anything but kernels stays.

// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK:         gpu.module @zb_kernels_0 {
// CHECK-NEXT:      gpu.func @fwd_kernel(%{{.*}}: memref<4xf32>) kernel
// CHECK:           gpu.func @fwd_kernel_0(%{{.*}}: memref<4xf32>) kernel
// CHECK:           gpu.func @two__first(%{{.*}}: memref<4xf32>) kernel
// CHECK:           gpu.func @two__second(%{{.*}}: memref<4xf32>) kernel
// CHECK-NOT:     gpu.module @fwd_kernel
// CHECK:         gpu.module @with_helper
// CHECK:         func.func @zb_kernels()
// CHECK:         func.func @host(
// CHECK:           gpu.launch_func @zb_kernels_0::@fwd_kernel blocks
// CHECK:           gpu.launch_func @zb_kernels_0::@fwd_kernel_0 blocks
// CHECK:           gpu.launch_func @zb_kernels_0::@two__second blocks
// CHECK:           gpu.launch_func @zb_kernels_0::@two__first blocks
// CHECK:           gpu.launch_func @with_helper::@k blocks
module attributes {gpu.container_module} {
  gpu.module @fwd_kernel {
    gpu.func @fwd_kernel(%a: memref<4xf32>) kernel {
      gpu.return
    }
  }
  gpu.module @fwd_kernel_0 {
    gpu.func @fwd_kernel(%a: memref<4xf32>) kernel {
      gpu.return
    }
  }
  gpu.module @two {
    gpu.func @first(%a: memref<4xf32>) kernel {
      gpu.return
    }
    gpu.func @second(%a: memref<4xf32>) kernel {
      gpu.return
    }
  }
  gpu.module @with_helper {
    gpu.func @k(%a: memref<4xf32>) kernel {
      gpu.return
    }
    func.func @helper() {
      return
    }
  }
  // A host symbol with the merged module's default name.
  func.func @zb_kernels() {
    return
  }
  func.func @host(%a: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @fwd_kernel::@fwd_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>)
    gpu.launch_func @fwd_kernel_0::@fwd_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>)
    gpu.launch_func @two::@second blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>)
    gpu.launch_func @two::@first blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>)
    gpu.launch_func @with_helper::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>)
    return
  }
}

// -----

// The constant globals kernels read (zb-gpu-sink-constants; the outliner
// copied @ids into both modules) are merged into one copy.

// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK:         gpu.module @zb_kernels {
// CHECK-NEXT:      memref.global "private" constant @ids : memref<4xi64> = dense<[0, 1, 2, 3]>
// CHECK-NOT:       memref.global
// CHECK:           gpu.func @a(
// CHECK:           gpu.func @b(
module attributes {gpu.container_module} {
  memref.global "private" constant @ids : memref<4xi64> = dense<[0, 1, 2, 3]>
  gpu.module @a {
    gpu.func @a(%o: memref<4xi64>) kernel {
      %g = memref.get_global @ids : memref<4xi64>
      gpu.return
    }
    memref.global "private" constant @ids : memref<4xi64> = dense<[0, 1, 2, 3]>
  }
  gpu.module @b {
    gpu.func @b(%o: memref<4xi64>) kernel {
      %g = memref.get_global @ids : memref<4xi64>
      gpu.return
    }
    memref.global "private" constant @ids : memref<4xi64> = dense<[0, 1, 2, 3]>
  }
}

