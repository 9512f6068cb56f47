// RUN: zb-opt %s --split-input-file --zb-gpu-attention-calls | FileCheck %s --check-prefix=CALLS
// RUN: zb-opt %s --split-input-file --zb-gpu-attention-calls=token-major=false | FileCheck %s --check-prefix=COPY
// RUN: zb-opt %s --split-input-file --zb-gpu-attention-calls --one-shot-bufferize="bufferize-function-boundaries" --gpu-kernel-outlining --zb-gpu-attention-kernels | FileCheck %s --check-prefix=KERNEL

// zb-gpu-attention-calls with token-major (default): q, k and v that are
// head views of one projection (zb/Transforms/HeadViews.h) are read from
// the projection's [B T, W] buffer itself (zb.layout: the heads' first
// column), and the result that is transposed and reshaped back is written
// into a [B T, H D] buffer that replaces the reshape: no copy of any of
// them. B = 2, T = 40, H = 2, D = 16.

// make_model.py's heads: slices of one [B T, 3 H D] projection.
func.func @forward_slices(%qkv: tensor<80x96xbf16>) -> (tensor<80x32xbf16>, tensor<2x2x40xf32>) {
  %qs = zb.slice %qkv [0, 0] to [80, 32] strides [1, 1] : tensor<80x96xbf16> -> tensor<80x32xbf16>
  %qr = zb.reshape %qs : tensor<80x32xbf16> -> tensor<2x40x2x16xbf16>
  %q = zb.transpose %qr permutation [0, 2, 1, 3] : tensor<2x40x2x16xbf16> -> tensor<2x2x40x16xbf16>
  %ks = zb.slice %qkv [0, 32] to [80, 64] strides [1, 1] : tensor<80x96xbf16> -> tensor<80x32xbf16>
  %kr = zb.reshape %ks : tensor<80x32xbf16> -> tensor<2x40x2x16xbf16>
  %k = zb.transpose %kr permutation [0, 2, 1, 3] : tensor<2x40x2x16xbf16> -> tensor<2x2x40x16xbf16>
  %vs = zb.slice %qkv [0, 64] to [80, 96] strides [1, 1] : tensor<80x96xbf16> -> tensor<80x32xbf16>
  %vr = zb.reshape %vs : tensor<80x32xbf16> -> tensor<2x40x2x16xbf16>
  %v = zb.transpose %vr permutation [0, 2, 1, 3] : tensor<2x40x2x16xbf16> -> tensor<2x2x40x16xbf16>
  %o, %lse = zb.attention %q, %k, %v {causal, scale = 0.25 : f64} : (tensor<2x2x40x16xbf16>, tensor<2x2x40x16xbf16>, tensor<2x2x40x16xbf16>) -> (tensor<2x2x40x16xbf16>, tensor<2x2x40xf32>)
  %ot = zb.transpose %o permutation [0, 2, 1, 3] : tensor<2x2x40x16xbf16> -> tensor<2x40x2x16xbf16>
  %y = zb.reshape %ot : tensor<2x40x2x16xbf16> -> tensor<80x32xbf16>
  return %y, %lse : tensor<80x32xbf16>, tensor<2x2x40xf32>
}


// CALLS-LABEL: func.func private @__zb_gpu_attention_forward_0(memref<80x96xbf16>, memref<80x96xbf16>, memref<80x96xbf16>, memref<80x32xbf16>, memref<4x40xf32>)
// CALLS-LABEL: func.func @forward_slices(
// CALLS-SAME: %[[QKV:.*]]: tensor<80x96xbf16>
// CALLS-NOT: zb.
// CALLS: %[[Q:.*]] = bufferization.to_buffer %[[QKV]] read_only : tensor<80x96xbf16> to memref<80x96xbf16>
// CALLS: %[[O:.*]] = memref.alloc() : memref<80x32xbf16>
// CALLS: call @__zb_gpu_attention_forward_0(%[[Q]], %{{.*}}, %{{.*}}, %[[O]], %{{.*}}) {zb.causal, zb.layout = array<i64: 0, 32, 64, 0>, zb.scale = 2.500000e-01 : f64, zb.shape = array<i64: 2, 2, 40, 40, 16, 16>}
// CALLS: %[[Y:.*]] = bufferization.to_tensor %[[O]] restrict writable : memref<80x32xbf16> to tensor<80x32xbf16>
// CALLS-NOT: zb.
// CALLS: return %[[Y]]

// Without token-major every view is a tensor of its own (a copy).
// COPY-LABEL: func.func private @__zb_gpu_attention_forward_0(memref<4x40x16xbf16>, memref<4x40x16xbf16>, memref<4x40x16xbf16>, memref<4x40x16xbf16>, memref<4x40xf32>)
// COPY-COUNT-3: zb.transpose
// COPY-NOT: zb.layout
// COPY: zb.transpose
// COPY: zb.reshape

// The kernel reads element (b, h, t, d) of q at row b T + t and column
// h D + d (+ 32 for k, + 64 for v): 16-byte loads of K and V blocks,
// 32-bit pairs of Q; the report counts each operand's heads (2 B H T D =
// 5120 bytes), not the whole buffer.
// KERNEL-LABEL: func.func @forward_slices
// KERNEL: gpu.launch_func @forward_slices_attention_0::@forward_slices_attention_0 {{.*}} args({{.*}} : memref<80x96xbf16>, {{.*}} : memref<80x96xbf16>, {{.*}} : memref<80x96xbf16>, {{.*}} : memref<80x32xbf16>, {{.*}} : memref<4x40xf32>)
// KERNEL: gpu.func @forward_slices_attention_0(%[[Q:.*]]: memref<80x96xbf16> {zb.bytes = 5.120000e+03 : f64}, %[[K:.*]]: memref<80x96xbf16> {zb.bytes = 5.120000e+03 : f64}, %[[V:.*]]: memref<80x96xbf16> {zb.bytes = 5.120000e+03 : f64}, %[[O:.*]]: memref<80x32xbf16> {zb.bytes = 5.120000e+03 : f64}, %{{.*}}: memref<4x40xf32>)
// KERNEL: %[[B:.*]] = arith.divui %block_id_y, %{{.*}} : index
// KERNEL: %[[H:.*]] = arith.remui %block_id_y, %{{.*}} : index
// KERNEL: arith.muli %[[B]], %c40{{.*}} : index
// KERNEL: arith.muli %[[H]], %c16{{.*}} : index
// KERNEL: arith.muli %[[B]], %c40{{.*}} : index
// KERNEL: %[[KH:.*]] = arith.muli %[[H]], %c16{{.*}} : index
// KERNEL: arith.addi %[[KH]], %c32{{.*}} : index
// KERNEL: vector.load %[[Q]][%{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<80x96xbf16>, vector<2xbf16>
// KERNEL: scf.for
// KERNEL: gpu.barrier
// KERNEL: vector.load %[[K]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<80x96xbf16>, vector<8xbf16>
// KERNEL: vector.load %[[V]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<80x96xbf16>, vector<8xbf16>
// KERNEL: scf.yield
// KERNEL: vector.store %{{.*}}, %[[O]][%{{.*}}, %{{.*}}] : memref<80x32xbf16>, vector<2xbf16>

// -----

// Its backward as zb-split-backward rebuild-attention-views leaves it: q, k
// and v rebuilt from the saved projection, the result from the merged
// result, dO from the output projection's input gradient; the gradients of
// the slices are zero-padded pieces summed (autodiff).
func.func @backward_slices(%qkv: tensor<80x96xbf16>, %y: tensor<80x32xbf16>, %lse: tensor<2x2x40xf32>, %dy: tensor<80x32xbf16>) -> tensor<80x96xbf16> {
  %qs = zb.slice %qkv [0, 0] to [80, 32] strides [1, 1] : tensor<80x96xbf16> -> tensor<80x32xbf16>
  %qr = zb.reshape %qs : tensor<80x32xbf16> -> tensor<2x40x2x16xbf16>
  %q = zb.transpose %qr permutation [0, 2, 1, 3] : tensor<2x40x2x16xbf16> -> tensor<2x2x40x16xbf16>
  %ks = zb.slice %qkv [0, 32] to [80, 64] strides [1, 1] : tensor<80x96xbf16> -> tensor<80x32xbf16>
  %kr = zb.reshape %ks : tensor<80x32xbf16> -> tensor<2x40x2x16xbf16>
  %k = zb.transpose %kr permutation [0, 2, 1, 3] : tensor<2x40x2x16xbf16> -> tensor<2x2x40x16xbf16>
  %vs = zb.slice %qkv [0, 64] to [80, 96] strides [1, 1] : tensor<80x96xbf16> -> tensor<80x32xbf16>
  %vr = zb.reshape %vs : tensor<80x32xbf16> -> tensor<2x40x2x16xbf16>
  %v = zb.transpose %vr permutation [0, 2, 1, 3] : tensor<2x40x2x16xbf16> -> tensor<2x2x40x16xbf16>
  %or = zb.reshape %y : tensor<80x32xbf16> -> tensor<2x40x2x16xbf16>
  %o = zb.transpose %or permutation [0, 2, 1, 3] : tensor<2x40x2x16xbf16> -> tensor<2x2x40x16xbf16>
  %dr = zb.reshape %dy : tensor<80x32xbf16> -> tensor<2x40x2x16xbf16>
  %do = zb.transpose %dr permutation [0, 2, 1, 3] : tensor<2x40x2x16xbf16> -> tensor<2x2x40x16xbf16>
  %dq, %dk, %dv = zb.attention_grad %q, %k, %v, %o, %lse, %do {causal, scale = 0.25 : f64} : (tensor<2x2x40x16xbf16>, tensor<2x2x40x16xbf16>, tensor<2x2x40x16xbf16>, tensor<2x2x40x16xbf16>, tensor<2x2x40xf32>, tensor<2x2x40x16xbf16>) -> (tensor<2x2x40x16xbf16>, tensor<2x2x40x16xbf16>, tensor<2x2x40x16xbf16>)
  %dvt = zb.transpose %dv permutation [0, 2, 1, 3] : tensor<2x2x40x16xbf16> -> tensor<2x40x2x16xbf16>
  %dvm = zb.reshape %dvt : tensor<2x40x2x16xbf16> -> tensor<80x32xbf16>
  %dvp = zb.pad %dvm low [0, 64] high [0, 0] interior [0, 0] : tensor<80x32xbf16> -> tensor<80x96xbf16>
  %dkt = zb.transpose %dk permutation [0, 2, 1, 3] : tensor<2x2x40x16xbf16> -> tensor<2x40x2x16xbf16>
  %dkm = zb.reshape %dkt : tensor<2x40x2x16xbf16> -> tensor<80x32xbf16>
  %dkp = zb.pad %dkm low [0, 32] high [0, 32] interior [0, 0] : tensor<80x32xbf16> -> tensor<80x96xbf16>
  %dqt = zb.transpose %dq permutation [0, 2, 1, 3] : tensor<2x2x40x16xbf16> -> tensor<2x40x2x16xbf16>
  %dqm = zb.reshape %dqt : tensor<2x40x2x16xbf16> -> tensor<80x32xbf16>
  %dqp = zb.pad %dqm low [0, 0] high [0, 64] interior [0, 0] : tensor<80x32xbf16> -> tensor<80x96xbf16>
  %s0 = zb.add %dvp, %dkp : tensor<80x96xbf16>
  %s1 = zb.add %s0, %dqp : tensor<80x96xbf16>
  return %s1 : tensor<80x96xbf16>
}

// The backward: the zero-padded gradient pieces summed become one concat
// (foldPadSums), whose [80, 96] buffer the two kernels write dQ, dK and dV
// into at columns 0, 32 and 64; o and dO are read from the merged result
// and the output projection's input gradient.
// CALLS-LABEL: func.func private @__zb_gpu_attention_backward_0(memref<80x96xbf16>, memref<80x96xbf16>, memref<80x96xbf16>, memref<80x32xbf16>, memref<4x40xf32>, memref<80x32xbf16>, memref<80x96xbf16>, memref<80x96xbf16>, memref<80x96xbf16>, memref<4x40xf32>)
// CALLS-LABEL: func.func @backward_slices(
// CALLS-NOT: zb.
// CALLS: %[[G:.*]] = memref.alloc() : memref<80x96xbf16>
// CALLS: call @__zb_gpu_attention_backward_0(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[G]], %[[G]], %[[G]], %{{.*}}) {zb.causal, zb.layout = array<i64: 0, 32, 64, 0, 0, 0, 32, 64>, zb.scale = 2.500000e-01 : f64, zb.shape = array<i64: 2, 2, 40, 40, 16, 16>}
// CALLS: %[[DQKV:.*]] = bufferization.to_tensor %[[G]] restrict writable : memref<80x96xbf16> to tensor<80x96xbf16>
// CALLS-NOT: zb.
// CALLS: return %[[DQKV]]

// COPY-LABEL: func.func @backward_slices(
// COPY: zb.pad
// COPY: zb.add
// COPY: zb.add

// KERNEL-LABEL: func.func @backward_slices
// KERNEL: gpu.func @backward_slices_attention_grad_query_0(
// KERNEL: vector.store %{{.*}} : memref<80x96xbf16>, vector<2xbf16>
// KERNEL: gpu.func @backward_slices_attention_grad_key_1(
// KERNEL: vector.store %{{.*}} : memref<80x96xbf16>, vector<2xbf16>

// -----

// GPT-2 from transformers splits a [B, T, 3 H D] projection: q and k are
// read from it (rows B T, the leading dims collapsed); v, not a view, is
// read as [B H, T, D], and so is the result written, whose use is no
// reshape back.
func.func @forward_split(%qkv: tensor<2x40x96xbf16>, %v: tensor<2x2x40x16xbf16>) -> (tensor<2x2x40x16xbf16>, tensor<2x2x40xf32>) {
  %p:3 = zb.split %qkv axis 2 : tensor<2x40x96xbf16> -> tensor<2x40x32xbf16>, tensor<2x40x32xbf16>, tensor<2x40x32xbf16>
  %qr = zb.reshape %p#0 : tensor<2x40x32xbf16> -> tensor<2x40x2x16xbf16>
  %q = zb.transpose %qr permutation [0, 2, 1, 3] : tensor<2x40x2x16xbf16> -> tensor<2x2x40x16xbf16>
  %kr = zb.reshape %p#1 : tensor<2x40x32xbf16> -> tensor<2x40x2x16xbf16>
  %k = zb.transpose %kr permutation [0, 2, 1, 3] : tensor<2x40x2x16xbf16> -> tensor<2x2x40x16xbf16>
  %o, %lse = zb.attention %q, %k, %v {causal, scale = 0.25 : f64} : (tensor<2x2x40x16xbf16>, tensor<2x2x40x16xbf16>, tensor<2x2x40x16xbf16>) -> (tensor<2x2x40x16xbf16>, tensor<2x2x40xf32>)
  return %o, %lse : tensor<2x2x40x16xbf16>, tensor<2x2x40xf32>
}

// CALLS-LABEL: func.func private @__zb_gpu_attention_forward_0(memref<80x96xbf16>, memref<80x96xbf16>, memref<4x40x16xbf16>, memref<4x40x16xbf16>, memref<4x40xf32>)
// CALLS-LABEL: func.func @forward_split(
// CALLS-NOT: zb.
// CALLS: tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2]] : tensor<2x40x96xbf16> into tensor<80x96xbf16>
// CALLS: call @__zb_gpu_attention_forward_0({{.*}}) {zb.causal, zb.layout = array<i64: 0, 32, -1, -1>, zb.scale = 2.500000e-01 : f64, zb.shape = array<i64: 2, 2, 40, 40, 16, 16>}
// CALLS-NOT: zb.

// KERNEL-LABEL: func.func @forward_split
// KERNEL: gpu.func @forward_split_attention_0(%{{.*}}: memref<80x96xbf16> {zb.bytes = 5.120000e+03 : f64}, %{{.*}}: memref<80x96xbf16> {zb.bytes = 5.120000e+03 : f64}, %{{.*}}: memref<4x40x16xbf16>, %{{.*}}: memref<4x40x16xbf16>, %{{.*}}: memref<4x40xf32>)
