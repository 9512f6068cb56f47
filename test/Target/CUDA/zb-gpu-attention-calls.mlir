// RUN: zb-opt %s --split-input-file --zb-gpu-attention-calls | FileCheck %s --check-prefix=CALLS
// RUN: zb-opt %s --split-input-file --verify-diagnostics --zb-gpu-attention-kernels

// The zb.attention ops the fused kernel of zb-gpu-attention-kernels cannot
// run, and a call that zb-gpu-attention-calls did not make
// (zb-gpu-attention-kernels.mlir has the kernels).

// Left to zb-decompose-attention: float32, a float64 mask, head dims 8
// and 144.
// CALLS-LABEL: func.func @left
// CALLS-NOT: call
// CALLS-COUNT-4: zb.attention
// CALLS-NOT: call
// CALLS: return
func.func @left(%q32: tensor<2x16x16xf32>, %q: tensor<2x16x16xbf16>, %m: tensor<2x16x16xf64>, %q8: tensor<2x16x8xbf16>, %q144: tensor<2x16x144xbf16>) -> (tensor<2x16x16xf32>, tensor<2x16x16xbf16>, tensor<2x16x8xbf16>, tensor<2x16x144xbf16>) {
  %a, %la = zb.attention %q32, %q32, %q32 {scale = 0.25 : f64} : (tensor<2x16x16xf32>, tensor<2x16x16xf32>, tensor<2x16x16xf32>) -> (tensor<2x16x16xf32>, tensor<2x16xf32>)
  %b, %lb = zb.attention %q, %q, %q mask %m {scale = 0.25 : f64} : (tensor<2x16x16xbf16>, tensor<2x16x16xbf16>, tensor<2x16x16xbf16>, tensor<2x16x16xf64>) -> (tensor<2x16x16xbf16>, tensor<2x16xf32>)
  %c, %lc = zb.attention %q8, %q8, %q8 {scale = 0.25 : f64} : (tensor<2x16x8xbf16>, tensor<2x16x8xbf16>, tensor<2x16x8xbf16>) -> (tensor<2x16x8xbf16>, tensor<2x16xf32>)
  %d, %ld = zb.attention %q144, %q144, %q144 {scale = 0.25 : f64} : (tensor<2x16x144xbf16>, tensor<2x16x144xbf16>, tensor<2x16x144xbf16>) -> (tensor<2x16x144xbf16>, tensor<2x16xf32>)
  return %a, %b, %c, %d : tensor<2x16x16xf32>, tensor<2x16x16xbf16>, tensor<2x16x8xbf16>, tensor<2x16x144xbf16>
}

// -----

// The backward with a float64 mask is left too.
// CALLS-LABEL: func.func @left_grad
// CALLS-NOT: call
// CALLS: zb.attention_grad
func.func @left_grad(%q: tensor<2x16x16xbf16>, %m: tensor<2x16x16xf64>, %lse: tensor<2x16xf32>) -> tensor<2x16x16xbf16> {
  %dq, %dk, %dv = zb.attention_grad %q, %q, %q, %q, %lse, %q mask(%m : tensor<2x16x16xf64>) {scale = 0.25 : f64} : (tensor<2x16x16xbf16>, tensor<2x16x16xbf16>, tensor<2x16x16xbf16>, tensor<2x16x16xbf16>, tensor<2x16xf32>, tensor<2x16x16xbf16>) -> (tensor<2x16x16xbf16>, tensor<2x16x16xbf16>, tensor<2x16x16xbf16>)
  return %dq : tensor<2x16x16xbf16>
}

// -----

// A call of the kernel's name without the shapes and scale the kernel
// needs.
func.func private @__zb_gpu_attention_forward_0(memref<?x?x16xbf16>)
func.func @malformed(%q: memref<?x?x16xbf16>) {
  // expected-error @below {{zb-gpu-attention-kernels: expected a call of zb-gpu-attention-calls (5 static memrefs, zb.scale)}}
  call @__zb_gpu_attention_forward_0(%q) : (memref<?x?x16xbf16>) -> ()
  return
}

// -----

// A backward call with the wrong number of operands.
func.func private @__zb_gpu_attention_backward_0(memref<2x8x16xbf16>)
func.func @malformed_grad(%q: memref<2x8x16xbf16>) {
  // expected-error @below {{zb-gpu-attention-kernels: expected a call of zb-gpu-attention-calls (10 static memrefs, zb.scale)}}
  call @__zb_gpu_attention_backward_0(%q) {zb.scale = 0.25 : f64} : (memref<2x8x16xbf16>) -> ()
  return
}

// -----

// A masked call whose zb.batch_dims do not give the kernels' (batch x head)
// extent (3 x 1 != 2).
func.func private @__zb_gpu_attention_forward_0(memref<2x8x16xbf16>, memref<2x8x16xbf16>, memref<2x8x16xbf16>, memref<2x8x16xbf16>, memref<2x8xf32>, memref<3x1x8xf32>)
func.func @malformed_mask(%q: memref<2x8x16xbf16>, %lse: memref<2x8xf32>, %m: memref<3x1x8xf32>) {
  // expected-error @below {{zb-gpu-attention-kernels: expected a call of zb-gpu-attention-calls (6 static memrefs, zb.scale, zb.batch_dims matching the mask)}}
  call @__zb_gpu_attention_forward_0(%q, %q, %q, %q, %lse, %m) {zb.scale = 0.25 : f64, zb.mask, zb.batch_dims = array<i64: 3>} : (memref<2x8x16xbf16>, memref<2x8x16xbf16>, memref<2x8x16xbf16>, memref<2x8x16xbf16>, memref<2x8xf32>, memref<3x1x8xf32>) -> ()
  return
}

// -----

// A lse of the wrong rank.
func.func private @__zb_gpu_attention_forward_0(memref<2x8x16xbf16>, memref<2x8x16xbf16>, memref<2x8x16xbf16>, memref<2x8x16xbf16>, memref<2x8x16xf32>)
func.func @malformed_lse(%q: memref<2x8x16xbf16>, %lse: memref<2x8x16xf32>) {
  // expected-error @below {{zb-gpu-attention-kernels: expected a call of zb-gpu-attention-calls (5 static memrefs, zb.scale)}}
  call @__zb_gpu_attention_forward_0(%q, %q, %q, %q, %lse) {zb.scale = 0.25 : f64} : (memref<2x8x16xbf16>, memref<2x8x16xbf16>, memref<2x8x16xbf16>, memref<2x8x16xbf16>, memref<2x8x16xf32>) -> ()
  return
}

// -----

// A token-major operand whose heads do not fit its buffer (column 96 +
// 2 x 16 > 96).
func.func private @__zb_gpu_attention_forward_0(memref<80x96xbf16>, memref<80x96xbf16>, memref<80x96xbf16>, memref<80x32xbf16>, memref<4x40xf32>)
func.func @malformed_layout(%qkv: memref<80x96xbf16>, %o: memref<80x32xbf16>, %lse: memref<4x40xf32>) {
  // expected-error @below {{zb-gpu-attention-kernels: expected a call of zb-gpu-attention-calls (5 static memrefs, zb.scale, zb.layout and zb.shape matching them)}}
  call @__zb_gpu_attention_forward_0(%qkv, %qkv, %qkv, %o, %lse) {zb.layout = array<i64: 0, 32, 96, 0>, zb.scale = 2.500000e-01 : f64, zb.shape = array<i64: 2, 2, 40, 40, 16, 16>} : (memref<80x96xbf16>, memref<80x96xbf16>, memref<80x96xbf16>, memref<80x32xbf16>, memref<4x40xf32>) -> ()
  return
}

// -----

// zb.shape's B H (2 x 3 = 6) is not the lse's 4 rows.
func.func private @__zb_gpu_attention_forward_0(memref<80x96xbf16>, memref<80x96xbf16>, memref<80x96xbf16>, memref<80x32xbf16>, memref<4x40xf32>)
func.func @malformed_shape(%qkv: memref<80x96xbf16>, %o: memref<80x32xbf16>, %lse: memref<4x40xf32>) {
  // expected-error @below {{zb-gpu-attention-kernels: expected a call of zb-gpu-attention-calls (5 static memrefs, zb.scale, zb.layout and zb.shape matching them)}}
  call @__zb_gpu_attention_forward_0(%qkv, %qkv, %qkv, %o, %lse) {zb.layout = array<i64: 0, 32, 64, 0>, zb.scale = 2.500000e-01 : f64, zb.shape = array<i64: 2, 3, 40, 40, 16, 16>} : (memref<80x96xbf16>, memref<80x96xbf16>, memref<80x96xbf16>, memref<80x32xbf16>, memref<4x40xf32>) -> ()
  return
}

// -----

// Head views the kernels cannot address stay copies (token-major needs
// 16-byte rows and heads): v sliced at column 4 of a 60-column tensor.
func.func @misaligned_view(%qkv: tensor<80x96xbf16>, %x: tensor<80x60xbf16>) -> (tensor<2x2x40x16xbf16>, tensor<2x2x40xf32>) {
  %qs = zb.slice %qkv [0, 0] to [80, 32] strides [1, 1] : tensor<80x96xbf16> -> tensor<80x32xbf16>
  %qr = zb.reshape %qs : tensor<80x32xbf16> -> tensor<2x40x2x16xbf16>
  %q = zb.transpose %qr permutation [0, 2, 1, 3] : tensor<2x40x2x16xbf16> -> tensor<2x2x40x16xbf16>
  %vs = zb.slice %x [0, 4] to [80, 36] strides [1, 1] : tensor<80x60xbf16> -> tensor<80x32xbf16>
  %vr = zb.reshape %vs : tensor<80x32xbf16> -> tensor<2x40x2x16xbf16>
  %v = zb.transpose %vr permutation [0, 2, 1, 3] : tensor<2x40x2x16xbf16> -> tensor<2x2x40x16xbf16>
  %o, %lse = zb.attention %q, %q, %v {scale = 0.25 : f64} : (tensor<2x2x40x16xbf16>, tensor<2x2x40x16xbf16>, tensor<2x2x40x16xbf16>) -> (tensor<2x2x40x16xbf16>, tensor<2x2x40xf32>)
  return %o, %lse : tensor<2x2x40x16xbf16>, tensor<2x2x40xf32>
}
// CALLS-LABEL: func.func private @__zb_gpu_attention_forward_0(memref<80x96xbf16>, memref<80x96xbf16>, memref<4x40x16xbf16>, memref<4x40x16xbf16>, memref<4x40xf32>)
// CALLS-LABEL: func.func @misaligned_view(
// CALLS: zb.slice %{{.*}} [0, 4] to [80, 36]
// CALLS: zb.transpose
// CALLS: call @__zb_gpu_attention_forward_0({{.*}}) {zb.layout = array<i64: 0, 0, -1, -1>,
