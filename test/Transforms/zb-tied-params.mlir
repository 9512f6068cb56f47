// RUN: zb-opt %s -zb-autodiff -zb-split-backward -zb-partition-stages=num-stages=2 | FileCheck %s --check-prefix=PART
// RUN: zb-opt %s -zb-autodiff -zb-split-backward -zb-partition-stages=num-stages=2 -zb-schedule="algorithm=1f1b microbatches=2" -zb-lower-pipeline | FileCheck %s --check-prefix=LOWER
// RUN: zb-opt %s -zb-autodiff -zb-split-backward -zb-partition-stages=num-stages=3 -zb-schedule="algorithm=1f1b microbatches=2" -zb-lower-pipeline | FileCheck %s --check-prefix=THREE
// RUN: zb-opt %s -zb-autodiff -zb-split-backward -zb-partition-stages=num-stages=1 -zb-schedule="algorithm=1f1b microbatches=2" -zb-lower-pipeline | FileCheck %s --check-prefix=ONE

// A weight tied between the first and the last layer (GPT-2's token
// embedding and LM head): %w is used by stage 0 and, transposed, by the last
// stage. Each of those stages holds a copy (zb.pipeline params: stages), and
// each stage's backward_weight returns its own part of d loss / d w (the
// zb-autodiff sum of the two contributions is cut apart): part 0 (zb.part,
// zb-autodiff's order of the contributions: the LM head's first) on stage
// 1, part 1 on stage 0.
// PART: params = [#zb.value<"w", index = 1, type = tensor<6x5xf32>, stages = [0, 1]>, #zb.value<"v", index = 2, type = tensor<5x5xf32>, stages = [0]>]
// PART-LABEL: func.func @stage0_backward_weight(
// PART-SAME: -> (tensor<6x5xf32> {zb.index = 1 : i64, zb.part = 1 : i64, zb.role = #zb.role<param_grad>}, tensor<5x5xf32> {zb.index = 2 : i64, zb.role = #zb.role<param_grad>})
// PART: %[[G0:.*]] = zb.matmul %arg0, %{{.*}} {transpose_lhs
// PART: return %[[G0]],
// PART-LABEL: func.func @stage1_forward(
// PART-SAME: %arg0: tensor<6x5xf32> {zb.index = 1 : i64, zb.role = #zb.role<param>}
// PART-LABEL: func.func @stage1_backward_weight(
// PART-SAME: -> (tensor<6x5xf32> {zb.index = 1 : i64, zb.part = 0 : i64, zb.role = #zb.role<param_grad>})
// PART-NOT: zb.add
// PART: return

// After the last W of the step, each rank sends the sum over microbatches of
// its part to the other and adds both parts in part order (part 0, stage
// 1's, first), so both copies get the same gradient, and the same as on
// one stage (ONE below). The tag is zbrt_tag(0, stage,
// microbatches + parameter index) = ((2 + 1) * 1024 + stage) * 2.
// LOWER-LABEL: func.func @zb_rank0_step(
// LOWER-SAME: zb.rank_args = [#zb.rank_arg<param, 1>, #zb.rank_arg<param, 2>, #zb.rank_arg<grad, 1>, #zb.rank_arg<grad, 2>, #zb.rank_arg<input, 0>]
// LOWER: %[[W0:.*]]:2 = call @stage0_backward_weight
// LOWER: %[[W1:.*]]:2 = call @stage0_backward_weight
// LOWER: %[[P0:.*]] = zb.add %[[W0]]#0, %[[W1]]#0
// LOWER: zb.send %[[P0]] to 1 tag 6144 : tensor<6x5xf32>
// LOWER: %[[R1:.*]] = zb.recv from 1 tag 6146 : tensor<6x5xf32>
// LOWER: %[[G:.*]] = zb.add %[[R1]], %[[P0]]
// LOWER: bufferization.materialize_in_destination %[[G]] in restrict writable %arg2
// LOWER-LABEL: func.func @zb_rank1_step(
// LOWER-SAME: zb.rank_args = [#zb.rank_arg<param, 1>, #zb.rank_arg<grad, 1>, #zb.rank_arg<input, 0>, #zb.rank_arg<loss>]
// LOWER: %[[V0:.*]] = call @stage1_backward_weight
// LOWER: %[[V1:.*]] = call @stage1_backward_weight
// LOWER: %[[P1:.*]] = zb.add %[[V0]], %[[V1]]
// LOWER: zb.send %[[P1]] to 0 tag 6146 : tensor<6x5xf32>
// LOWER: %[[R0:.*]] = zb.recv from 0 tag 6144 : tensor<6x5xf32>
// LOWER: %[[H:.*]] = zb.add %[[P1]], %[[R0]]
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
// One stage: its backward_weight returns both contributions (parts 0 and 1)
// instead of their sum; each is summed over the microbatches on its own and
// the totals are added in part order at the end of the step, as on several
// stages (a different order of the same float sum would make the gradient
// depend on the number of stages).
// ONE-LABEL: func.func @stage0_backward_weight(
// ONE-SAME: -> (tensor<6x5xf32> {zb.index = 1 : i64, zb.part = 0 : i64, zb.role = #zb.role<param_grad>}, tensor<6x5xf32> {zb.index = 1 : i64, zb.part = 1 : i64, zb.role = #zb.role<param_grad>}, tensor<5x5xf32> {zb.index = 2 : i64, zb.role = #zb.role<param_grad>})
// ONE-NOT: zb.add {{.*}}tensor<6x5xf32>
// ONE: return
// ONE-LABEL: func.func @zb_rank0_step(
// ONE: %[[A:.*]]:3 = call @stage0_backward_weight
// ONE: %[[B:.*]]:3 = call @stage0_backward_weight
// ONE-DAG: %[[S0:.*]] = zb.add %[[A]]#0, %[[B]]#0
// ONE-DAG: %[[S1:.*]] = zb.add %[[A]]#1, %[[B]]#1
// ONE-DAG: %[[S2:.*]] = zb.add %[[A]]#2, %[[B]]#2
// ONE: %[[G:.*]] = zb.add %[[S0]], %[[S1]]
// ONE-NOT: zb.send
// ONE: bufferization.materialize_in_destination %[[G]] in restrict writable
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
