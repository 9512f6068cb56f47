// RUN: zb-opt %s --split-input-file --zb-gpu-merge-kernel-modules -verify-diagnostics -o /dev/null

// Two different globals of one name cannot share the merged module.
module attributes {gpu.container_module} {
  gpu.module @a {
    gpu.func @a(%o: memref<4xi64>) kernel {
      gpu.return
    }
    memref.global "private" constant @ids : memref<4xi64> = dense<[0, 1, 2, 3]>
  }
  gpu.module @b {
    gpu.func @b(%o: memref<4xi64>) kernel {
      gpu.return
    }
    // expected-error @below {{zb-gpu-merge-kernel-modules: two different globals named 'ids'}}
    memref.global "private" constant @ids : memref<4xi64> = dense<[3, 2, 1, 0]>
  }
}
