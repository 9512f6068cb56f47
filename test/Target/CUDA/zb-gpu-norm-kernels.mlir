// RUN: zb-opt %s --split-input-file --zb-gpu-norm-calls | FileCheck %s --check-prefix=CALLS
// RUN: zb-opt %s --split-input-file --zb-gpu-norm-calls --one-shot-bufferize="bufferize-function-boundaries" --gpu-kernel-outlining --zb-gpu-norm-kernels | FileCheck %s --check-prefix=KERNEL
// RUN: zb-opt %s --split-input-file --zb-gpu-norm-calls --one-shot-bufferize="bufferize-function-boundaries" --gpu-kernel-outlining --zb-gpu-norm-kernels --zb-gpu-emulate | FileCheck %s --check-prefix=EMU

// zb-gpu-norm-calls: a float32 layer norm over [2, 5, 40] whose one user is
// autocast's bfloat16 cast becomes a call writing bfloat16 rows [10, 40]
// (the cast gone); an RMS norm [3, 16] without such a cast writes float32.
// zb-gpu-norm-kernels: one kernel per call, a warp per row: grid
// ceil(10 / 4) = 3 and ceil(3 / 4) = 1, 128 threads; D = 40 is two
// columns per lane (the second only for lanes 0..7), reduced with five
// xor shuffles per sum.
// CALLS-LABEL: func.func @norms
// CALLS: %[[X:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<10x40xf32> to memref<10x40xf32>
// CALLS: %[[Y:.*]] = memref.alloc() : memref<10x40xbf16>
// CALLS: call @__zb_gpu_norm_{{[0-9]+}}(%[[X]], %{{.*}}, %{{.*}}, %[[Y]]) {zb.epsilon = 1.000000e-05 : f64, zb.norm = "layer"} : (memref<10x40xf32>, memref<40xf32>, memref<40xf32>, memref<10x40xbf16>) -> ()
// CALLS-NOT: zb.cast
// CALLS: tensor.expand_shape {{.*}} output_shape [2, 5, 40] : tensor<10x40xbf16> into tensor<2x5x40xbf16>
// CALLS: call @__zb_gpu_norm_{{[0-9]+}}(%{{.*}}, %{{.*}}, %{{.*}}) {zb.epsilon = 9.9999999999999995E-7 : f64, zb.norm = "rms"} : (memref<3x16xf32>, memref<16xf32>, memref<3x16xf32>) -> ()
// CALLS-NOT: zb.layer_norm
// CALLS-NOT: zb.rms_norm

// KERNEL-LABEL: func.func @norms
// KERNEL: gpu.launch_func @norms_norm_0::@norms_norm_0 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in
// KERNEL: gpu.launch_func @norms_norm_1::@norms_norm_1
// KERNEL-NOT: call @__zb_gpu_norm
// KERNEL: gpu.func @norms_norm_0({{.*}}: memref<10x40xf32>, {{.*}}: memref<40xf32>, {{.*}}: memref<40xf32>, {{.*}}: memref<10x40xbf16>) kernel attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 3, 1, 1>, zb.kernel_kind = "row-norm"}
// KERNEL: scf.for
// KERNEL: arith.select
// KERNEL: scf.yield
// KERNEL-COUNT-5: gpu.shuffle xor
// KERNEL: scf.for
// KERNEL: arith.subf
// KERNEL: scf.yield
// KERNEL-COUNT-5: gpu.shuffle xor
// KERNEL: math.sqrt
// KERNEL: scf.for
// KERNEL: arith.truncf %{{.*}} : f32 to bf16
// KERNEL: memref.store %{{.*}} : memref<10x40xbf16>
// KERNEL: gpu.func @norms_norm_1({{.*}}: memref<3x16xf32>, {{.*}}: memref<16xf32>, {{.*}}: memref<3x16xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 1, 1>, zb.kernel_kind = "row-norm"}
// KERNEL-COUNT-5: gpu.shuffle xor
// KERNEL-NOT: gpu.shuffle
// KERNEL: math.sqrt

// The shuffles make the emulation run the kernels in lock-step.
// EMU-LABEL: func.func @norms
// EMU: call @__zb_emu_norms_norm_0_norms_norm_0(
// EMU: call @__zb_emu_norms_norm_1_norms_norm_1(
// EMU-NOT: gpu.module
func.func @norms(%x: tensor<2x5x40xf32>, %w: tensor<40xf32>, %b: tensor<40xf32>, %r: tensor<3x16xf32>, %rw: tensor<16xf32>) -> (tensor<2x5x40xbf16>, tensor<3x16xf32>) {
  %y = zb.layer_norm %x, %w, %b {epsilon = 1.0e-05 : f64} : (tensor<2x5x40xf32>, tensor<40xf32>, tensor<40xf32>) -> tensor<2x5x40xf32>
  %yb = zb.cast %y : tensor<2x5x40xf32> -> tensor<2x5x40xbf16>
  %z = zb.rms_norm %r, %rw {epsilon = 1.0e-06 : f64} : (tensor<3x16xf32>, tensor<16xf32>) -> tensor<3x16xf32>
  return %yb, %z : tensor<2x5x40xbf16>, tensor<3x16xf32>
}
