// RUN: zb-opt %s -zb-autodiff -zb-split-backward -zb-partition-stages=num-stages=2 | FileCheck %s --check-prefix=PART
// RUN: zb-opt %s -zb-autodiff -zb-split-backward -zb-partition-stages=num-stages=2 -zb-schedule="algorithm=1f1b microbatches=2" -zb-lower-pipeline | FileCheck %s --check-prefix=LOWER
// RUN: zb-opt %s -zb-autodiff -zb-split-backward -zb-partition-stages=num-stages=3 -zb-schedule="algorithm=1f1b microbatches=2" -zb-lower-pipeline | FileCheck %s --check-prefix=THREE

// A weight tied between the first and the last layer (GPT-2's token
// embedding and LM head): %w is used by stage 0 and, transposed, by the last
// stage. Each of those stages holds a copy (zb.pipeline params: stages), and
// each stage's backward_weight returns its own part of d loss / d w (the
// zb-autodiff sum of the two contributions is cut apart).
// PART: params = [#zb.value<"w", index = 1, type = tensor<6x5xf32>, stages = [0, 1]>, #zb.value<"v", index = 2, type = tensor<5x5xf32>, stages = [0]>]
// PART-LABEL: func.func @stage0_backward_weight(
// PART-SAME: -> (tensor<6x5xf32> {zb.index = 1 : i64, zb.role = #zb.role<param_grad>}, tensor<5x5xf32> {zb.index = 2 : i64, zb.role = #zb.role<param_grad>})
// PART: %[[G0:.*]] = zb.matmul %arg0, %{{.*}} {transpose_lhs
// PART: return %[[G0]],
// PART-LABEL: func.func @stage1_forward(
// PART-SAME: %arg0: tensor<6x5xf32> {zb.index = 1 : i64, zb.role = #zb.role<param>}
// PART-LABEL: func.func @stage1_backward_weight(
// PART-SAME: -> (tensor<6x5xf32> {zb.index = 1 : i64, zb.role = #zb.role<param_grad>})
// PART-NOT: zb.add
// PART: return

// After the last W of the step, each rank sends the sum over microbatches of
// its part to the other and adds both parts in stage order (stage 0 first),
// so both copies get the same gradient. The tag is zbrt_tag(0, stage,
// microbatches + parameter index) = ((2 + 1) * 1024 + stage) * 2.
// LOWER-LABEL: func.func @zb_rank0_step(
// LOWER-SAME: zb.rank_args = [#zb.rank_arg<param, 1>, #zb.rank_arg<param, 2>, #zb.rank_arg<grad, 1>, #zb.rank_arg<grad, 2>, #zb.rank_arg<input, 0>]
// LOWER: %[[W0:.*]]:2 = call @stage0_backward_weight
// LOWER: %[[W1:.*]]:2 = call @stage0_backward_weight
// LOWER: %[[P0:.*]] = zb.add %[[W0]]#0, %[[W1]]#0
// LOWER: zb.send %[[P0]] to 1 tag 6144 : tensor<6x5xf32>
// LOWER: %[[R1:.*]] = zb.recv from 1 tag 6146 : tensor<6x5xf32>
// LOWER: %[[G:.*]] = zb.add %[[P0]], %[[R1]]
// LOWER: bufferization.materialize_in_destination %[[G]] in restrict writable %arg2
// LOWER-LABEL: func.func @zb_rank1_step(
// LOWER-SAME: zb.rank_args = [#zb.rank_arg<param, 1>, #zb.rank_arg<grad, 1>, #zb.rank_arg<input, 0>, #zb.rank_arg<loss>]
// LOWER: %[[V0:.*]] = call @stage1_backward_weight
// LOWER: %[[V1:.*]] = call @stage1_backward_weight
// LOWER: %[[P1:.*]] = zb.add %[[V0]], %[[V1]]
// LOWER: zb.send %[[P1]] to 0 tag 6146 : tensor<6x5xf32>
// LOWER: %[[R0:.*]] = zb.recv from 0 tag 6144 : tensor<6x5xf32>
// LOWER: %[[H:.*]] = zb.add %[[R0]], %[[P1]]
// LOWER: bufferization.materialize_in_destination %[[H]] in restrict writable %arg1

// Three stages: the cost-balanced cut puts the LM-head matmul in stage 1 and
// only the loss in stage 2, whose rank holds no copy and takes no part.
// THREE: params = [#zb.value<"w", index = 1, type = tensor<6x5xf32>, stages = [0, 1]>
// THREE-LABEL: func.func @zb_rank0_step(
// THREE: zb.send %{{.*}} to 1 tag 6144 : tensor<6x5xf32>
// THREE: zb.recv from 1 tag 6146 : tensor<6x5xf32>
// THREE-LABEL: func.func @zb_rank1_step(
// THREE: zb.send %{{.*}} to 0 tag 6146 : tensor<6x5xf32>
// THREE: zb.recv from 0 tag 6144 : tensor<6x5xf32>
// THREE-LABEL: func.func @zb_rank2_step(
// THREE-NOT: tensor<6x5xf32>
func.func @main(%x: tensor<4x6xf32> {zb.name = "x"},
                %w: tensor<6x5xf32> {zb.param, zb.name = "w"},
                %v: tensor<5x5xf32> {zb.param, zb.name = "v"}) -> tensor<f32> {
  %h = zb.matmul %x, %w : (tensor<4x6xf32>, tensor<6x5xf32>) -> tensor<4x5xf32>
  %a = zb.tanh %h : tensor<4x5xf32>
  %m = zb.matmul %a, %v : (tensor<4x5xf32>, tensor<5x5xf32>) -> tensor<4x5xf32>
  %b = zb.tanh %m : tensor<4x5xf32>
  %y = zb.matmul %b, %w {transpose_rhs} : (tensor<4x5xf32>, tensor<6x5xf32>) -> tensor<4x6xf32>
  %d = zb.sub %y, %x : tensor<4x6xf32>
  %q = zb.mul %d, %d : tensor<4x6xf32>
  %l = zb.reduce_sum %q axes [0, 1] : tensor<4x6xf32> -> tensor<f32>
  return %l : tensor<f32>
}
