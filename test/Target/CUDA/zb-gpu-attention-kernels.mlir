// RUN: zb-opt %s --split-input-file --zb-gpu-attention-calls | FileCheck %s --check-prefix=CALLS
// RUN: zb-opt %s --split-input-file --zb-gpu-attention-calls --one-shot-bufferize="bufferize-function-boundaries" --gpu-kernel-outlining --zb-gpu-attention-kernels | FileCheck %s --check-prefix=KERNEL
// RUN: zb-opt %s --split-input-file --zb-gpu-attention-calls --one-shot-bufferize="bufferize-function-boundaries" --gpu-kernel-outlining --zb-gpu-attention-kernels --zb-gpu-emulate | FileCheck %s --check-prefix=EMU

// zb-gpu-attention-calls: a bfloat16 zb.attention without a mask, head
// dims multiples of 16 up to 128, becomes a call on buffers (batch dims
// collapsed); zb-gpu-attention-kernels: the call becomes the launch of the
// FlashAttention-2 forward kernel, one gpu.module per call: grid
// (ceil(Tq / 64), batch * heads), 128 threads, mma.sync on tensor cores.
// Here Tq = Tk = 40, D = Dv = 16: per key block 8 mma for S (8 key tiles x
// 1 step of 16) and 8 for P V (4 steps of 16 keys x 2 tiles of 8 columns).
// FLOPs: 2 * 6 * (40 * 41 / 2 causal pairs) * (16 + 16) = 314880.

// CALLS-LABEL: func.func private @__zb_gpu_attention_forward_0(memref<6x40x16xbf16>, memref<6x40x16xbf16>, memref<6x40x16xbf16>, memref<6x40x16xbf16>, memref<6x40xf32>)
// CALLS-LABEL: func.func @causal
// CALLS: tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2], [3]] : tensor<2x3x40x16xbf16> into tensor<6x40x16xbf16>
// CALLS: bufferization.to_buffer %{{.*}} read_only : tensor<6x40x16xbf16> to memref<6x40x16xbf16>
// CALLS: %[[O:.*]] = memref.alloc() : memref<6x40x16xbf16>
// CALLS: %[[LSE:.*]] = memref.alloc() : memref<6x40xf32>
// CALLS: call @__zb_gpu_attention_forward_0(%{{.*}}, %{{.*}}, %{{.*}}, %[[O]], %[[LSE]]) {zb.causal, zb.scale = 2.500000e-01 : f64}
// CALLS: bufferization.to_tensor %[[O]] restrict writable
// CALLS: tensor.expand_shape {{.*}} output_shape [2, 3, 40, 16]
// CALLS: bufferization.to_tensor %[[LSE]] restrict writable
// CALLS: tensor.expand_shape {{.*}} output_shape [2, 3, 40]
// CALLS-NOT: zb.attention

// KERNEL-LABEL: func.func @causal
// KERNEL: gpu.launch_func @causal_attention_0::@causal_attention_0 blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%{{.*}}, %{{.*}}, %{{.*}}) args({{.*}} : memref<6x40x16xbf16>, {{.*}} : memref<6x40x16xbf16>, {{.*}} : memref<6x40x16xbf16>, {{.*}} : memref<6x40x16xbf16>, {{.*}} : memref<6x40xf32>)
// KERNEL-NOT: call @__zb_gpu_attention_forward
// KERNEL: gpu.module @causal_attention_0
// KERNEL: gpu.func @causal_attention_0({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 6, 1>, zb.flops = 3.148800e+05 : f64, zb.kernel_kind = "attention"}
// KERNEL: scf.for
// KERNEL-COUNT-8: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// KERNEL: gpu.shuffle xor
// KERNEL: math.exp
// KERNEL-COUNT-8: nvvm.mma.sync
// KERNEL: scf.yield
// KERNEL: gpu.shuffle xor
// KERNEL: math.log
// KERNEL: vector.store %{{.*}} : memref<6x40x16xbf16>, vector<2xbf16>
// KERNEL-NOT: func.func private @__zb_gpu_attention_forward

// The emulation runs the kernel in lock-step (one lane array per value);
// mma.sync is a call of the fragment-level emulation.
// EMU-LABEL: func.func @causal
// EMU: call @__zb_emu_causal_attention_0_causal_attention_0(
// EMU: func.func private @__zb_emu_causal_attention_0_causal_attention_0(
// EMU: call @__zb_emu_mma_m16n8k16_bf16(
// EMU: func.func private @__zb_emu_mma_m16n8k16_bf16(
// EMU-NOT: nvvm.mma.sync
// EMU-NOT: gpu.module
func.func @causal(%q: tensor<2x3x40x16xbf16>, %k: tensor<2x3x40x16xbf16>, %v: tensor<2x3x40x16xbf16>) -> (tensor<2x3x40x16xbf16>, tensor<2x3x40xf32>) {
  %o, %lse = zb.attention %q, %k, %v {causal, scale = 0.25 : f64} : (tensor<2x3x40x16xbf16>, tensor<2x3x40x16xbf16>, tensor<2x3x40x16xbf16>) -> (tensor<2x3x40x16xbf16>, tensor<2x3x40xf32>)
  return %o, %lse : tensor<2x3x40x16xbf16>, tensor<2x3x40xf32>
}

// -----

// Not causal, Tk != Tq, D = 32 and Dv = 64, rank 3: grid (2, 4), all
// 2 * 4 * 100 * 72 * (32 + 64) = 5529600 FLOPs; the kernel is named after
// its function.
// CALLS-LABEL: func.func @cross
// CALLS: call @__zb_gpu_attention_forward_0(%{{.*}}) {zb.scale = 1.250000e-01 : f64}
// KERNEL-LABEL: func.func @cross
// KERNEL: gpu.launch_func @cross_attention_0::@cross_attention_0
// Per key block, the 64 rows of K and of V are staged in workgroup memory
// (rows padded to D + 8 and Dv + 8, 16-byte aligned) between two barriers:
// 32 x 64 / 8 = 256 vectors of 8 for K, 2 per thread; 4 per thread for V;
// each a 16-byte global load and workgroup store. The fragments then come
// from the staged rows (32-bit loads of pairs).
// KERNEL: gpu.func @cross_attention_0(%{{.*}}: memref<4x100x32xbf16>, %{{.*}}: memref<4x72x32xbf16>, %[[V:.*]]: memref<4x72x64xbf16>, %{{.*}}: memref<4x100x64xbf16>, %{{.*}}: memref<4x100xf32>) workgroup(%[[KS:.*]] : memref<64x40xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %[[VS:.*]] : memref<64x72xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 2, 4, 1>, zb.flops = 5.529600e+06 : f64
// KERNEL: scf.for
// KERNEL: arith.muli
// KERNEL-NEXT: gpu.barrier
// KERNEL-COUNT-2: vector.store %{{.*}}, %[[KS]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<64x40xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// KERNEL: vector.load %[[V]][%{{.*}}, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<4x72x64xbf16>, vector<8xbf16>
// KERNEL-COUNT-4: vector.store %{{.*}}, %[[VS]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<64x72xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// KERNEL-NEXT: gpu.barrier
// KERNEL: vector.load %[[KS]][%{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<64x40xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
func.func @cross(%q: tensor<4x100x32xbf16>, %k: tensor<4x72x32xbf16>, %v: tensor<4x72x64xbf16>) -> (tensor<4x100x64xbf16>, tensor<4x100xf32>) {
  %o, %lse = zb.attention %q, %k, %v {scale = 0.125 : f64} : (tensor<4x100x32xbf16>, tensor<4x72x32xbf16>, tensor<4x72x64xbf16>) -> (tensor<4x100x64xbf16>, tensor<4x100xf32>)
  return %o, %lse : tensor<4x100x64xbf16>, tensor<4x100xf32>
}


// -----

// The backward (zb.attention_grad, here with the lse's gradient): a call
// with the Di scratch buffer, then two kernels launched in order, dQ (which
// writes Di) and dK/dV (which reads it). bh = 2, Tq = Tk = 32, causal:
// 528 pairs; dQ 2 * 2 * 528 * (2 * 16 + 16) = 101376 FLOPs, dK/dV
// 2 * 2 * 528 * (2 * 16 + 2 * 16) = 135168.
// CALLS-LABEL: func.func @grad
// CALLS: %[[DI:.*]] = memref.alloc() : memref<2x32xf32>
// CALLS: call @__zb_gpu_attention_backward_0({{.*}}, %[[DI]]) {zb.causal, zb.lse_grad, zb.scale = 2.500000e-01 : f64} : (memref<2x32x16xbf16>, memref<2x32x16xbf16>, memref<2x32x16xbf16>, memref<2x32x16xbf16>, memref<2x32xf32>, memref<2x32x16xbf16>, memref<2x32xf32>, memref<2x32x16xbf16>, memref<2x32x16xbf16>, memref<2x32x16xbf16>, memref<2x32xf32>) -> ()
// CALLS-NOT: zb.attention_grad
// KERNEL-LABEL: func.func @grad
// KERNEL: gpu.launch_func @grad_attention_grad_query_0::@grad_attention_grad_query_0
// KERNEL: gpu.launch_func @grad_attention_grad_key_1::@grad_attention_grad_key_1
// KERNEL: gpu.func @grad_attention_grad_query_0({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 2, 1>, zb.flops = 1.013760e+05 : f64, zb.kernel_kind = "attention"}
// KERNEL: gpu.shuffle xor
// KERNEL: memref.store %{{.*}}, %arg10[
// KERNEL: scf.for
// KERNEL-COUNT-4: nvvm.mma.sync
// KERNEL: gpu.func @grad_attention_grad_key_1({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 1, 2, 1>, zb.flops = 1.351680e+05 : f64, zb.kernel_kind = "attention"}
// KERNEL: scf.for %{{.*}} = %block_id_x to
// KERNEL: memref.load %arg10[
// EMU-LABEL: func.func @grad
// EMU: call @__zb_emu_grad_attention_grad_query_0_grad_attention_grad_query_0(
// EMU: call @__zb_emu_grad_attention_grad_key_1_grad_attention_grad_key_1(
func.func @grad(%q: tensor<2x32x16xbf16>, %o: tensor<2x32x16xbf16>, %lse: tensor<2x32xf32>, %do: tensor<2x32x16xbf16>, %dlse: tensor<2x32xf32>) -> (tensor<2x32x16xbf16>, tensor<2x32x16xbf16>, tensor<2x32x16xbf16>) {
  %dq, %dk, %dv = zb.attention_grad %q, %q, %q, %o, %lse, %do lse_grad(%dlse : tensor<2x32xf32>) {causal, scale = 0.25 : f64} : (tensor<2x32x16xbf16>, tensor<2x32x16xbf16>, tensor<2x32x16xbf16>, tensor<2x32x16xbf16>, tensor<2x32xf32>, tensor<2x32x16xbf16>) -> (tensor<2x32x16xbf16>, tensor<2x32x16xbf16>, tensor<2x32x16xbf16>)
  return %dq, %dk, %dv : tensor<2x32x16xbf16>, tensor<2x32x16xbf16>, tensor<2x32x16xbf16>
}

// -----

// A padding mask as the exporters write it for an encoder (an additive
// [batch, 1, Tq, Tk] float32 tensor, broadcast over the heads): the calls
// pass it last, as it is, with zb.mask and the scores' leading dimensions;
// each kernel finds its batch index as (batch x head) / 3 and adds
// mask[b, 0, query, key] to the scaled scores (the key clamped to Tk - 1
// for the keys past the end).
// CALLS-LABEL: func.func @masked
// CALLS: call @__zb_gpu_attention_forward_{{[0-9]+}}({{.*}}) {zb.batch_dims = array<i64: 2, 3>, zb.mask, zb.scale = 2.500000e-01 : f64} : ({{.*}}, memref<6x20xf32>, memref<2x1x20x20xf32>) -> ()
// CALLS: call @__zb_gpu_attention_backward_{{[0-9]+}}({{.*}}) {zb.batch_dims = array<i64: 2, 3>, zb.mask, zb.scale = 2.500000e-01 : f64} : ({{.*}}, memref<6x20xf32>, memref<2x1x20x20xf32>) -> ()
// KERNEL-LABEL: func.func @masked
// KERNEL: gpu.launch_func @masked_attention_{{[0-9]+}}::
// KERNEL: gpu.launch_func @masked_attention_grad_query_{{[0-9]+}}::
// KERNEL: gpu.launch_func @masked_attention_grad_key_{{[0-9]+}}::
// KERNEL: gpu.func @masked_attention_{{[0-9]+}}({{.*}}, %[[M:.*]]: memref<2x1x20x20xf32>)
// KERNEL: %[[B:.*]] = arith.remui %{{.*}}, %c2
// KERNEL: scf.for
// KERNEL: memref.load %[[M]][%[[B]], %c0, %{{.*}}, %{{.*}}] : memref<2x1x20x20xf32>
// KERNEL: gpu.func @masked_attention_grad_query_{{[0-9]+}}({{.*}}, %[[M2:.*]]: memref<2x1x20x20xf32>)
// KERNEL: scf.for
// KERNEL: memref.load %[[M2]]
// KERNEL: gpu.func @masked_attention_grad_key_{{[0-9]+}}({{.*}}, %[[M3:.*]]: memref<2x1x20x20xf32>)
// KERNEL: scf.for
// KERNEL: memref.load %[[M3]]
// EMU-LABEL: func.func @masked
// EMU-NOT: gpu.module
func.func @masked(%q: tensor<2x3x20x16xbf16>, %m: tensor<2x1x20x20xf32>, %do: tensor<2x3x20x16xbf16>) -> (tensor<2x3x20x16xbf16>, tensor<2x3x20x16xbf16>) {
  %o, %lse = zb.attention %q, %q, %q mask %m {scale = 0.25 : f64} : (tensor<2x3x20x16xbf16>, tensor<2x3x20x16xbf16>, tensor<2x3x20x16xbf16>, tensor<2x1x20x20xf32>) -> (tensor<2x3x20x16xbf16>, tensor<2x3x20xf32>)
  %dq, %dk, %dv = zb.attention_grad %q, %q, %q, %o, %lse, %do mask(%m : tensor<2x1x20x20xf32>) {scale = 0.25 : f64} : (tensor<2x3x20x16xbf16>, tensor<2x3x20x16xbf16>, tensor<2x3x20x16xbf16>, tensor<2x3x20x16xbf16>, tensor<2x3x20xf32>, tensor<2x3x20x16xbf16>) -> (tensor<2x3x20x16xbf16>, tensor<2x3x20x16xbf16>, tensor<2x3x20x16xbf16>)
  return %o, %dq : tensor<2x3x20x16xbf16>, tensor<2x3x20x16xbf16>
}
