// RUN: zb-opt %s --zb-gpu-report-kernels="every-stage-function=true launch-us=0" | FileCheck %s

// zb-gpu-report-kernels counts each load or store of a kernel argument as
// its executions (threads x the trips of the scf.for loops around it) x
// its bytes, and the whole buffer at most.

// A gather (the cross-entropy's pick of the target logit, an embedding
// lookup): 1024 threads each read one index (8 bytes) and one float of a
// 1024 x 1000 table at (row, index), and write one float: 8192 + 4096
// bytes read (not the table's 4096000), 4096 written.
// CHECK: 0     F    stage0_forward_kernel   elementwise   4   256   12288   4096

// A loop whose bound the launch passes as a kernel argument (outlining
// leaves constants defined outside the launch as arguments): 256 threads x
// 4 trips x 4 bytes = 4096 of the 1024 x 1000 table, and 1024 additions
// (FLOPs counted by the same trips); with an unknown bound (the second
// launch's %n) the whole table, 4096000 bytes.
// CHECK: 0     F    stage0_forward_loop     serial-reduction   1   256   4096   1024   1.0e+03
// CHECK: 0     F    stage0_forward_loop     serial-reduction   1   256   4096000   1024

module attributes {gpu.container_module} {
  gpu.module @stage0_forward_kernel {
    gpu.func @stage0_forward_kernel(%idx: memref<1024xi64>, %table: memref<1024x1000xf32>, %out: memref<1024xf32>) kernel {
      %b = gpu.block_id x
      %t = gpu.thread_id x
      %c256 = arith.constant 256 : index
      %o = arith.muli %b, %c256 : index
      %i = arith.addi %o, %t : index
      %k = memref.load %idx[%i] : memref<1024xi64>
      %c = arith.index_cast %k : i64 to index
      %x = memref.load %table[%i, %c] : memref<1024x1000xf32>
      memref.store %x, %out[%i] : memref<1024xf32>
      gpu.return
    }
  }
  gpu.module @stage0_forward_loop {
    gpu.func @stage0_forward_loop(%table: memref<1024x1000xf32>, %out: memref<256xf32>, %ub: index) kernel {
      %t = gpu.thread_id x
      %c256 = arith.constant 256 : index
      %zero = arith.constant 0.0 : f32
      %s = scf.for %j = %t to %ub step %c256 iter_args(%acc = %zero) -> (f32) {
        %x = memref.load %table[%t, %j] : memref<1024x1000xf32>
        %a = arith.addf %acc, %x : f32
        scf.yield %a : f32
      }
      memref.store %s, %out[%t] : memref<256xf32>
      gpu.return
    }
  }
  func.func @stage0_forward(%idx: memref<1024xi64>, %table: memref<1024x1000xf32>, %out: memref<1024xf32>, %sums: memref<256xf32>, %n: index) attributes {zb.stage = 0 : i64, zb.kind = #zb.kind<forward>} {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c256 = arith.constant 256 : index
    %c1000 = arith.constant 1000 : index
    gpu.launch_func @stage0_forward_kernel::@stage0_forward_kernel blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1) args(%idx : memref<1024xi64>, %table : memref<1024x1000xf32>, %out : memref<1024xf32>)
    gpu.launch_func @stage0_forward_loop::@stage0_forward_loop blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1) args(%table : memref<1024x1000xf32>, %sums : memref<256xf32>, %c1000 : index)
    gpu.launch_func @stage0_forward_loop::@stage0_forward_loop blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1) args(%table : memref<1024x1000xf32>, %sums : memref<256xf32>, %n : index)
    return
  }
}
