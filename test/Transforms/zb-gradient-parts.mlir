// RUN: zb-opt %s -zb-autodiff -zb-split-backward -zb-partition-stages=num-stages=1 -zb-schedule="algorithm=1f1b microbatches=2" -zb-lower-pipeline | FileCheck %s --check-prefix=ONE
// RUN: zb-opt %s -zb-autodiff -zb-split-backward -zb-partition-stages=num-stages=2 -zb-schedule="algorithm=1f1b microbatches=2" -zb-lower-pipeline | FileCheck %s --check-prefix=TWO

// A parameter with three uses (%w: two in stage 0, the transposed LM-head
// like one in the last stage) has three gradient parts (zb.part, in
// zb-autodiff's order of the contributions: the last use's first). Every
// part is summed over the microbatches on its own and the part totals are
// added in part order, ((p0 + p1) + p2), on one stage as on two, so the
// gradient is bit-identical whatever the partition. A single-use parameter
// (%v) keeps one gradient without zb.part. On one stage both gradients are
// final after the last W: both are written, then announced together as the
// run of gradient arguments 0 .. 1 (zbrt_gradients_ready(0, 2), one bucket
// of the data-parallel all-reduce); on two stages the tied %w waits for the
// exchange at the end and is not announced.
// ONE-LABEL: func.func @stage0_backward_weight(
// ONE-SAME: -> (tensor<5x5xf32> {zb.index = 1 : i64, zb.part = 0 : i64, zb.role = #zb.role<param_grad>}, tensor<5x5xf32> {zb.index = 1 : i64, zb.part = 1 : i64, zb.role = #zb.role<param_grad>}, tensor<5x5xf32> {zb.index = 1 : i64, zb.part = 2 : i64, zb.role = #zb.role<param_grad>}, tensor<5x5xf32> {zb.index = 2 : i64, zb.role = #zb.role<param_grad>})
// ONE-LABEL: func.func @zb_rank0_step(
// ONE: %[[A:.*]]:4 = call @stage0_backward_weight
// ONE: %[[B:.*]]:4 = call @stage0_backward_weight
// ONE: %[[S0:.*]] = zb.add %[[A]]#0, %[[B]]#0
// ONE-NEXT: %[[S1:.*]] = zb.add %[[A]]#1, %[[B]]#1
// ONE-NEXT: %[[S2:.*]] = zb.add %[[A]]#2, %[[B]]#2
// ONE-NEXT: %[[V:.*]] = zb.add %[[A]]#3, %[[B]]#3
// ONE-NEXT: %[[S01:.*]] = zb.add %[[S0]], %[[S1]]
// ONE-NEXT: %[[G:.*]] = zb.add %[[S01]], %[[S2]]
// ONE-NEXT: bufferization.materialize_in_destination %[[G]] in restrict writable %arg2
// ONE-NEXT: bufferization.materialize_in_destination %[[V]] in restrict writable %arg3
// ONE-NEXT: %[[K:.*]] = arith.constant 0 : i32
// ONE-NEXT: %[[N:.*]] = arith.constant 2 : i32
// ONE-NEXT: call @zbrt_gradients_ready(%[[K]], %[[N]]) : (i32, i32) -> ()

// Two stages: stage 0 holds parts 1 and 2 and sends both (the second with
// tag zbrt_tag(0, 0, microbatches + parameter index + 3 arguments) =
// (6 * 1024) * 2), stage 1 part 0; both ranks add them in part order.
// TWO-LABEL: func.func @stage0_backward_weight(
// TWO-SAME: -> (tensor<5x5xf32> {zb.index = 1 : i64, zb.part = 1 : i64, zb.role = #zb.role<param_grad>}, tensor<5x5xf32> {zb.index = 1 : i64, zb.part = 2 : i64, zb.role = #zb.role<param_grad>})
// TWO-LABEL: func.func @stage1_backward_weight(
// TWO-SAME: -> (tensor<5x5xf32> {zb.index = 1 : i64, zb.part = 0 : i64, zb.role = #zb.role<param_grad>}, tensor<5x5xf32> {zb.index = 2 : i64, zb.role = #zb.role<param_grad>})
// TWO-LABEL: func.func @zb_rank0_step(
// TWO-NOT: zbrt_gradients_ready
// TWO: zb.send %[[P1:.*]] to 1 tag 6144 : tensor<5x5xf32>
// TWO-NEXT: zb.send %[[P2:.*]] to 1 tag 12288 : tensor<5x5xf32>
// TWO-NEXT: %[[P0:.*]] = zb.recv from 1 tag 6146 : tensor<5x5xf32>
// TWO-NEXT: %[[S:.*]] = zb.add %[[P0]], %[[P1]]
// TWO-NEXT: %[[G:.*]] = zb.add %[[S]], %[[P2]]
// TWO-NEXT: bufferization.materialize_in_destination %[[G]]
// TWO-LABEL: func.func @zb_rank1_step(
// TWO: zb.send %[[Q0:.*]] to 0 tag 6146 : tensor<5x5xf32>
// TWO-NEXT: %[[Q1:.*]] = zb.recv from 0 tag 6144 : tensor<5x5xf32>
// TWO-NEXT: %[[T:.*]] = zb.add %[[Q0]], %[[Q1]]
// TWO-NEXT: %[[Q2:.*]] = zb.recv from 0 tag 12288 : tensor<5x5xf32>
// TWO-NEXT: %[[H:.*]] = zb.add %[[T]], %[[Q2]]
// TWO-NEXT: bufferization.materialize_in_destination %[[H]]
func.func @main(%x: tensor<4x5xf32> {zb.name = "x"},
                %w: tensor<5x5xf32> {zb.param, zb.name = "w"},
                %v: tensor<5x5xf32> {zb.param, zb.name = "v"}) -> tensor<f32> {
  %h = zb.matmul %x, %w : (tensor<4x5xf32>, tensor<5x5xf32>) -> tensor<4x5xf32>
  %a = zb.tanh %h : tensor<4x5xf32>
  %m = zb.matmul %a, %w : (tensor<4x5xf32>, tensor<5x5xf32>) -> tensor<4x5xf32>
  %b = zb.tanh %m : tensor<4x5xf32>
  %m2 = zb.matmul %b, %v : (tensor<4x5xf32>, tensor<5x5xf32>) -> tensor<4x5xf32>
  %c = zb.tanh %m2 : tensor<4x5xf32>
  %y = zb.matmul %c, %w {transpose_rhs} : (tensor<4x5xf32>, tensor<5x5xf32>) -> tensor<4x5xf32>
  %d = zb.sub %y, %x : tensor<4x5xf32>
  %q = zb.mul %d, %d : tensor<4x5xf32>
  %l = zb.reduce_sum %q axes [0, 1] : tensor<4x5xf32> -> tensor<f32>
  return %l : tensor<f32>
}
