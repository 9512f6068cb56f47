// RUN: zb-opt %s --split-input-file --zb-gpu-norm-calls | FileCheck %s --check-prefix=CALLS
// RUN: zb-opt %s --split-input-file --verify-diagnostics --zb-gpu-norm-kernels

// The norms zb-gpu-norm-calls leaves to the decomposition, and a call that
// it did not make (zb-gpu-norm-kernels.mlir has the kernels).

// Left to the decomposition: a bfloat16 norm (its decomposition rounds
// every step to bfloat16) and a norm of one row of rank 1. A float32 norm
// read by a cast and by another op keeps its float32 result (the cast
// stays).
// CALLS-LABEL: func.func @left
// CALLS: zb.layer_norm {{.*}} -> tensor<4x32xbf16>
// CALLS: zb.rms_norm {{.*}} -> tensor<32xf32>
// CALLS: call @__zb_gpu_norm_{{[0-9]+}}({{.*}}) {zb.epsilon = 1.000000e-05 : f64, zb.norm = "layer"} : (memref<4x32xf32>, memref<32xf32>, memref<32xf32>, memref<4x32xf32>) -> ()
// CALLS: zb.cast %{{.*}} : tensor<4x32xf32> -> tensor<4x32xbf16>
func.func @left(%xb: tensor<4x32xbf16>, %wb: tensor<32xbf16>, %x: tensor<4x32xf32>, %w: tensor<32xf32>) -> (tensor<4x32xbf16>, tensor<4x32xbf16>, tensor<4x32xf32>) {
  %a = zb.layer_norm %xb, %wb, %wb {epsilon = 1.0e-05 : f64} : (tensor<4x32xbf16>, tensor<32xbf16>, tensor<32xbf16>) -> tensor<4x32xbf16>
  %r = zb.rms_norm %w, %w {epsilon = 1.0e-06 : f64} : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
  %y = zb.layer_norm %x, %w, %w {epsilon = 1.0e-05 : f64} : (tensor<4x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %yb = zb.cast %y : tensor<4x32xf32> -> tensor<4x32xbf16>
  %s = zb.add %y, %y : tensor<4x32xf32>
  %rb = zb.broadcast_in_dim %r dims [1] : tensor<32xf32> -> tensor<4x32xf32>
  %t = zb.add %s, %rb : tensor<4x32xf32>
  return %a, %yb, %t : tensor<4x32xbf16>, tensor<4x32xbf16>, tensor<4x32xf32>
}

// -----

// A call of the kernel's name that zb-gpu-norm-calls did not make.
func.func private @__zb_gpu_norm_0(memref<4x32xf32>, memref<16xf32>, memref<4x32xf32>)
func.func @malformed(%x: memref<4x32xf32>, %w: memref<16xf32>) {
  // expected-error @below {{zb-gpu-norm-kernels: expected a call of zb-gpu-norm-calls (zb.norm "layer" with x [R, D], weight [D], bias [D], y [R, D], or "rms" without bias; float32 static memrefs; zb.epsilon)}}
  call @__zb_gpu_norm_0(%x, %w, %x) {zb.norm = "rms", zb.epsilon = 1.0e-06 : f64} : (memref<4x32xf32>, memref<16xf32>, memref<4x32xf32>) -> ()
  return
}
