// RUN: zb-opt %S/Inputs/w-reversed.mlir -zb-lower-pipeline | FileCheck %s
// RUN: not zb-opt %S/Inputs/broken-order.mlir -zb-lower-pipeline 2>&1 | FileCheck %s --check-prefix=BROKEN
// RUN: zb-opt %s -zb-autodiff -zb-split-backward -zb-partition-stages=num-stages=1 -zb-schedule="algorithm=1f1b microbatches=2" -zb-lower-pipeline | FileCheck %s --check-prefix=ONE

// Rank 0 runs stage 0: forward of both microbatches (sending activations to
// rank 1), B of both (receiving gradients), then W in reverse order.
// CHECK-LABEL: func.func @zb_rank0_step(
// CHECK-SAME: %[[P:.*]]: memref<3x5xf32>, %[[G:.*]]: memref<3x5xf32>, %[[X:.*]]: memref<2x4x3xf32>)
// CHECK-SAME: zb.rank = 0 : i64, zb.rank_args = [#zb.rank_arg<param, 1>, #zb.rank_arg<grad, 1>, #zb.rank_arg<input, 0>]
// CHECK: %[[PT:.*]] = bufferization.to_tensor %[[P]] restrict
// CHECK: %[[XT:.*]] = bufferization.to_tensor %[[X]] restrict
// CHECK: %[[X0:.*]] = tensor.extract_slice %[[XT]][0, 0, 0] [1, 4, 3] [1, 1, 1]
// CHECK: call @zbrt_action_begin
// CHECK: %[[F0:.*]]:2 = call @stage0_forward(%[[PT]], %[[X0]])
// CHECK: zb.send %[[F0]]#0 to 1 tag 0
// CHECK: %[[X1:.*]] = tensor.extract_slice %[[XT]][1, 0, 0]
// CHECK: %[[F1:.*]]:2 = call @stage0_forward(%[[PT]], %[[X1]])
// CHECK: zb.send %[[F1]]#0 to 1 tag 2048
// CHECK: %[[D0:.*]] = zb.recv from 1 tag 3
// CHECK: %[[B0:.*]] = call @stage0_backward_input(%[[F0]]#1, %[[D0]])
// CHECK: %[[D1:.*]] = zb.recv from 1 tag 2051
// CHECK: %[[B1:.*]] = call @stage0_backward_input(%[[F1]]#1, %[[D1]])
// CHECK: %[[W1:.*]] = call @stage0_backward_weight(%[[X1]], %[[B1]])
// CHECK: %[[W0:.*]] = call @stage0_backward_weight(%[[X0]], %[[B0]])
// Weight gradients summed in microbatch order (mb 0 + mb 1), whatever the W order.
// CHECK: %[[SUM:.*]] = zb.add %[[W0]], %[[W1]]
// CHECK: bufferization.materialize_in_destination %[[SUM]] in restrict writable %[[G]]
// The gradient is final: announced for the data-parallel all-reduce.
// CHECK-NEXT: %[[K:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[N:.*]] = arith.constant 1 : i32
// CHECK-NEXT: call @zbrt_gradients_ready(%[[K]], %[[N]]) : (i32, i32) -> ()

// Rank 1 runs the last stage: it receives activations, sums the losses in
// microbatch order and sends gradients back.
// CHECK-LABEL: func.func @zb_rank1_step(
// CHECK-SAME: zb.rank_args = [#zb.rank_arg<param, 2>, #zb.rank_arg<grad, 2>, #zb.rank_arg<loss>]
// CHECK: zb.recv from 0 tag 0
// CHECK: %[[L0:.*]]:2 = call @stage1_forward
// CHECK: zb.send %{{.*}}#0 to 0 tag 3
// CHECK: zb.recv from 0 tag 2048
// CHECK: %[[L1:.*]]:2 = call @stage1_forward
// CHECK: %[[LOSS:.*]] = zb.add %[[L0]]#0, %[[L1]]#0 : tensor<f32>
// CHECK: zb.send %{{.*}}#0 to 0 tag 2051
// CHECK: bufferization.materialize_in_destination %[[LOSS]] in restrict writable

// BROKEN: error: zb-lower-pipeline: communication check failed: deadlock: rank 0 waits forever in 'B0.1 gradient' (recv from rank 1)

// One stage: no communication at all.
// ONE-LABEL: func.func @zb_rank0_step(
// ONE-SAME: zb.rank_args = [#zb.rank_arg<param, 1>, #zb.rank_arg<grad, 1>, #zb.rank_arg<input, 0>, #zb.rank_arg<loss>]
// ONE-NOT: zb.send
// ONE-NOT: zb.recv
// ONE: return
func.func @main(%x: tensor<4x3xf32>, %w: tensor<3x5xf32> {zb.param}) -> tensor<f32> {
  %h = zb.matmul %x, %w : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %l = zb.reduce_sum %h axes [0, 1] : tensor<4x5xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// Where the gradient leaves the last stage. 1F1B does not split the backward
// (zb.schedule has fused_backward): the gradient of microbatch 0 is sent
// only after W of that microbatch, as a framework sends it after the whole
// backward. ZB-H1 sends it right after B, before W.
// RUN: zb-opt %S/Inputs/mlp2.mlir -zb-autodiff -zb-split-backward -zb-partition-stages=num-stages=2 -zb-schedule="algorithm=1f1b microbatches=2" -zb-lower-pipeline | FileCheck %s --check-prefix=FUSED
// RUN: zb-opt %S/Inputs/mlp2.mlir -zb-autodiff -zb-split-backward -zb-partition-stages=num-stages=2 -zb-schedule="algorithm=zb-h1 microbatches=2" -zb-lower-pipeline | FileCheck %s --check-prefix=SPLIT
// FUSED: zb.schedule = {{.*}}fused_backward
// FUSED-LABEL: func.func @zb_rank1_step(
// FUSED: call @stage1_backward_input
// FUSED-NOT: zb.send
// FUSED: call @stage1_backward_weight
// FUSED: zb.send %{{.*}} to 0 tag 3
// SPLIT-NOT: fused_backward
// SPLIT-LABEL: func.func @zb_rank1_step(
// SPLIT: call @stage1_backward_input
// SPLIT-NOT: call @stage1_backward_weight
// SPLIT: zb.send %{{.*}} to 0 tag 3
// SPLIT: call @stage1_backward_weight

// DualPipe (zb.schedule directions = 2): the model's 2 stages run once per
// direction, global stage 2+s computing model stage s on rank 1-s. Each
// rank calls both stages' functions, holds the batch input and a loss (the
// end of one route), and sends its copies' weight-gradient sums to the
// other holder, then adds the two in stage order. The attribute prints
// `directions` and reads back (round trip).
// RUN: zb-opt %S/Inputs/mlp2.mlir -zb-autodiff -zb-split-backward -zb-partition-stages=num-stages=2 -zb-schedule="algorithm=dualpipe microbatches=4" -zb-lower-pipeline | FileCheck %s --check-prefix=DUAL
// RUN: zb-opt %S/Inputs/mlp2.mlir -zb-autodiff -zb-split-backward -zb-partition-stages=num-stages=2 -zb-schedule="algorithm=dualpipe microbatches=4" | zb-opt | FileCheck %s --check-prefix=DUAL-ROUND
// DUAL: zb.pipeline = #zb.pipeline<num_stages = 2, num_ranks = 2, num_chunks = 1
// DUAL: zb.schedule = #zb.schedule<name = "dualpipe"{{.*}}stage_to_rank = [0, 1, 1, 0]{{.*}}directions = 2>
// DUAL-LABEL: func.func @zb_rank0_step(
// DUAL-SAME: memref<4x4x3xf32>, %{{.*}}: memref<f32>)
// DUAL: call @stage0_forward
// DUAL: zb.send %{{.*}} to 1 tag 0 :
// DUAL: call @stage1_forward
// DUAL: call @stage0_backward_weight
// DUAL: call @stage1_backward_weight
// DUAL: zb.send %{{.*}} to 1 tag {{[0-9]+}} : tensor<3x5xf32>
// DUAL: zb.send %{{.*}} to 1 tag {{[0-9]+}} : tensor<5x2xf32>
// DUAL: zb.recv from 1 tag {{[0-9]+}} : tensor<3x5xf32>
// DUAL: zb.recv from 1 tag {{[0-9]+}} : tensor<5x2xf32>
// DUAL-LABEL: func.func @zb_rank1_step(
// DUAL-SAME: memref<4x4x3xf32>, %{{.*}}: memref<f32>)
// DUAL-ROUND: directions = 2>
