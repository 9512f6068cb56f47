// RUN: zb-opt %s --zb-gpu-report-kernels | FileCheck %s --check-prefix=STEP
// RUN: zb-opt %s --zb-gpu-report-kernels="every-stage-function=true launch-us=0" | FileCheck %s --check-prefix=STAGES

// zb-gpu-report-kernels: the kernel launches and runtime GEMMs of a rank
// program after gpu-kernel-outlining, with their grid, block, bytes, FLOPs
// and H100 roofline time (zb/Target/CUDA/KernelReport.h); zb-compile takes
// them through a callback (--gpu-report, --gpu-costs), zb-opt prints the
// table. The IR is unchanged (the module follows the table).

// One elementwise kernel over 1024 floats (4 blocks of 256 threads, 1
// multiply each: 1024 FLOPs; reads and writes 4096 bytes) in the forward of
// stage 0, called twice by the step function (two microbatches), and one
// 64x64x64 sgemm in the backward-weight pass (2*64^3 = 524288 FLOPs; reads
// A and B, 32768 bytes, writes C, 16384 bytes). Roofline on the H100
// (3.35 TB/s, 67 TFLOP/s): the kernel 8192 B / 3.35e12 B/s = 0.0024 us, the
// GEMM 49152 B / 3.35e12 B/s = 0.0147 us (its FLOPs take 0.0078 us); each
// launch adds 3 us; the step launches the kernel twice and the GEMM once.
// STEP: rank 0
// STEP: 0     F    stage0_forward_kernel   elementwise   4   256   4096   4096   1.0e+03   3.002
// STEP: 0     W    sgemm                   gemm          -     -  32768  16384   5.2e+05   3.015
// STEP: stage 0 T_F = 0.003002 ms per microbatch (1 kernels, 0 GEMMs, 8192 bytes, 1.02e+03 FLOPs)
// STEP: stage 0 T_W = 0.003015 ms per microbatch (0 kernels, 1 GEMMs, 49152 bytes, 5.24e+05 FLOPs)
// STEP: step: 2 kernel launches, 1 GEMMs, 0.009020 ms of compute
// STEP: func.func @step

// Every stage function once, without the launch overhead.
// STAGES: 0     F    stage0_forward_kernel   elementwise   4   256   4096   4096   1.0e+03   0.002
// STAGES: 0     W    sgemm                   gemm          -     -  32768  16384   5.2e+05   0.015
// STAGES: step: 1 kernel launches, 1 GEMMs, 0.000017 ms of compute
// STAGES: func.func @stage0_backward_weight

module attributes {gpu.container_module} {
  gpu.module @stage0_forward_kernel {
    gpu.func @stage0_forward_kernel(%a: memref<1024xf32>) kernel {
      %b = gpu.block_id x
      %t = gpu.thread_id x
      %c256 = arith.constant 256 : index
      %o = arith.muli %b, %c256 : index
      %i = arith.addi %o, %t : index
      %x = memref.load %a[%i] : memref<1024xf32>
      %y = arith.mulf %x, %x : f32
      memref.store %y, %a[%i] : memref<1024xf32>
      gpu.return
    }
  }
  func.func private @zbrt_sgemm_memref(memref<64x64xf32>, memref<64x64xf32>, memref<64x64xf32>, index, index)
  func.func @stage0_forward(%a: memref<1024xf32>) attributes {zb.stage = 0 : i64, zb.kind = #zb.kind<forward>} {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c256 = arith.constant 256 : index
    gpu.launch_func @stage0_forward_kernel::@stage0_forward_kernel blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1) args(%a : memref<1024xf32>)
    return
  }
  func.func @stage0_backward_weight(%a: memref<64x64xf32>, %b: memref<64x64xf32>, %c: memref<64x64xf32>) attributes {zb.stage = 0 : i64, zb.kind = #zb.kind<backward_weight>} {
    %c0 = arith.constant 0 : index
    call @zbrt_sgemm_memref(%a, %b, %c, %c0, %c0) : (memref<64x64xf32>, memref<64x64xf32>, memref<64x64xf32>, index, index) -> ()
    return
  }
  func.func @step(%a: memref<1024xf32>, %m: memref<64x64xf32>) attributes {zb.rank = 0 : i64} {
    call @stage0_forward(%a) : (memref<1024xf32>) -> ()
    call @stage0_forward(%a) : (memref<1024xf32>) -> ()
    call @stage0_backward_weight(%m, %m, %m) : (memref<64x64xf32>, memref<64x64xf32>, memref<64x64xf32>) -> ()
    return
  }
}
