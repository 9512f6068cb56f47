// RUN: zb-opt %s -split-input-file -zb-cluster-weight-gradients -verify-diagnostics | FileCheck %s
// RUN: zb-opt %s -split-input-file -zb-cluster-weight-gradients -verify-diagnostics | zb-opt -split-input-file | FileCheck %s --check-prefix=ROUND
// RUN: zb-opt %S/Inputs/mlp-bias.mlir -zb-autodiff -zb-split-backward -zb-partition-stages=num-stages=1 -zb-schedule="algorithm=zb-h1 microbatches=2" -zb-cluster-weight-gradients -zb-lower-pipeline | FileCheck %s --check-prefix=LOWER
// RUN: zb-opt %S/Inputs/mlp-bias.mlir -zb-autodiff -zb-split-backward -zb-partition-stages=num-stages=1 -zb-cluster-weight-gradients=bucket-bytes=64 | FileCheck %s --check-prefix=BUCKET
// RUN: not zb-opt %s -split-input-file -zb-cluster-weight-gradients=bucket-bytes=-1 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: zb-opt %S/Inputs/mlp-bias.mlir -zb-autodiff -zb-split-backward -zb-partition-stages=num-stages=1 -zb-schedule="algorithm=zb-h1 microbatches=2" -zb-lower-pipeline | FileCheck %s --check-prefix=WHOLE

// A hand-written W function of one stage with five gradients:
//  - #0 (param 1) and #1 (param 2) read the same argument but share no op:
//    two groups;
//  - #2 and #3 (params 3 and 4) both use %s = %arg1 * %arg1, an op that
//    reads an argument: one group;
//  - #4 (param 3 again, another part) joins #2's group, as parts of one
//    parameter must be final together;
//  - the splat %one is computed from a constant alone: #0's and #1's groups
//    each get a copy instead of being joined.
// The groups' functions are ordered by their first result, take only the
// arguments they read and keep the results' attributes; W calls them in
// that order and returns the same values as before.

module attributes {zb.pipeline = #zb.pipeline<num_stages = 1, num_ranks = 1, num_chunks = 1, target = "cpu", stages = [#zb.stage<stage = 0, forward = @f, backward_input = @b, backward_weight = @w, t_f = 1.0, t_b = 1.0, t_w = 1.0, t_comm = 0.0, m_b = 0, m_w = 0>], params = [#zb.value<"p1", index = 1, type = tensor<4xf32>, stages = [0]>, #zb.value<"p2", index = 2, type = tensor<4xf32>, stages = [0]>, #zb.value<"p3", index = 3, type = tensor<4xf32>, stages = [0]>, #zb.value<"p4", index = 4, type = tensor<4xf32>, stages = [0]>], inputs = [#zb.value<"x", index = 0, type = tensor<4xf32>, stages = [0]>]>} {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
  func.func @b(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
  func.func @w(%arg0: tensor<4xf32> {zb.role = #zb.role<residual>, zb.value = 1 : i64},
               %arg1: tensor<4xf32> {zb.role = #zb.role<saved>, zb.value = 2 : i64},
               %arg2: tensor<4xf32> {zb.role = #zb.role<saved>, zb.value = 3 : i64})
      -> (tensor<4xf32> {zb.index = 1 : i64, zb.role = #zb.role<param_grad>},
          tensor<4xf32> {zb.index = 2 : i64, zb.role = #zb.role<param_grad>},
          tensor<4xf32> {zb.index = 3 : i64, zb.part = 0 : i64, zb.role = #zb.role<param_grad>},
          tensor<4xf32> {zb.index = 4 : i64, zb.role = #zb.role<param_grad>},
          tensor<4xf32> {zb.index = 3 : i64, zb.part = 1 : i64, zb.role = #zb.role<param_grad>})
      attributes {zb.kind = #zb.kind<backward_weight>, zb.stage = 0 : i64} {
    %c = zb.constant dense<1.0> : tensor<f32>
    %one = zb.broadcast_in_dim %c dims [] : tensor<f32> -> tensor<4xf32>
    %g1 = zb.mul %arg0, %one : tensor<4xf32>
    %g2 = zb.add %arg0, %one : tensor<4xf32>
    %s = zb.mul %arg1, %arg1 : tensor<4xf32>
    %g3 = zb.add %s, %arg0 : tensor<4xf32>
    %g4 = zb.exp %s : tensor<4xf32>
    %g5 = zb.neg %arg2 : tensor<4xf32>
    return %g1, %g2, %g3, %g4, %g5 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}

// CHECK-LABEL: func.func @w(
// CHECK-SAME: zb.weight_clusters = [@w_c0, @w_c1, @w_c2]
// CHECK-NEXT: %[[A:.*]] = call @w_c0(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[B:.*]] = call @w_c1(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[C:.*]]:3 = call @w_c2(%arg0, %arg1, %arg2)
// CHECK-NEXT: return %[[A]], %[[B]], %[[C]]#0, %[[C]]#1, %[[C]]#2
// CHECK-LABEL: func.func private @w_c0(
// CHECK-SAME: %arg0: tensor<4xf32> {zb.role = #zb.role<residual>, zb.value = 1 : i64})
// CHECK-SAME: -> (tensor<4xf32> {zb.index = 1 : i64, zb.role = #zb.role<param_grad>})
// CHECK-SAME: attributes {zb.kind = #zb.kind<backward_weight>, zb.stage = 0 : i64}
// CHECK-NEXT: zb.constant
// CHECK-NEXT: zb.broadcast_in_dim
// CHECK-NEXT: zb.mul
// CHECK-NEXT: return
// CHECK-LABEL: func.func private @w_c1(
// CHECK-SAME: -> (tensor<4xf32> {zb.index = 2 : i64, zb.role = #zb.role<param_grad>})
// CHECK-NEXT: zb.constant
// CHECK-NEXT: zb.broadcast_in_dim
// CHECK-NEXT: zb.add
// CHECK-NEXT: return
// CHECK-LABEL: func.func private @w_c2(
// CHECK-SAME: -> (tensor<4xf32> {zb.index = 3 : i64, zb.part = 0 : i64, zb.role = #zb.role<param_grad>}, tensor<4xf32> {zb.index = 4 : i64, zb.role = #zb.role<param_grad>}, tensor<4xf32> {zb.index = 3 : i64, zb.part = 1 : i64, zb.role = #zb.role<param_grad>})
// CHECK-NEXT: zb.mul %arg1, %arg1
// CHECK-NEXT: zb.add
// CHECK-NEXT: zb.exp
// CHECK-NEXT: zb.neg %arg2
// CHECK-NEXT: return
// ROUND: zb.weight_clusters = [@w_c0, @w_c1, @w_c2]

// -----

// One group (every gradient uses %s): W stays as it is.
module attributes {zb.pipeline = #zb.pipeline<num_stages = 1, num_ranks = 1, num_chunks = 1, target = "cpu", stages = [#zb.stage<stage = 0, forward = @f, backward_input = @b, backward_weight = @w, t_f = 1.0, t_b = 1.0, t_w = 1.0, t_comm = 0.0, m_b = 0, m_w = 0>], params = [#zb.value<"p1", index = 1, type = tensor<4xf32>, stages = [0]>, #zb.value<"p2", index = 2, type = tensor<4xf32>, stages = [0]>], inputs = [#zb.value<"x", index = 0, type = tensor<4xf32>, stages = [0]>]>} {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
  func.func @b(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
  func.func @w(%arg0: tensor<4xf32> {zb.role = #zb.role<residual>, zb.value = 1 : i64})
      -> (tensor<4xf32> {zb.index = 1 : i64, zb.role = #zb.role<param_grad>},
          tensor<4xf32> {zb.index = 2 : i64, zb.role = #zb.role<param_grad>})
      attributes {zb.kind = #zb.kind<backward_weight>, zb.stage = 0 : i64} {
    %s = zb.exp %arg0 : tensor<4xf32>
    %g1 = zb.neg %s : tensor<4xf32>
    %g2 = zb.relu %s : tensor<4xf32>
    return %g1, %g2 : tensor<4xf32>, tensor<4xf32>
  }
}

// CHECK-LABEL: func.func @w(
// CHECK-NOT: zb.weight_clusters
// CHECK-NEXT: zb.exp
// CHECK-NEXT: zb.neg
// CHECK-NEXT: zb.relu
// CHECK-NEXT: return

// -----

// A pipeline naming a W function the module lacks.
// expected-error @+1 {{zb.pipeline names the W function @missing of stage 0, which the module does not define}}
module attributes {zb.pipeline = #zb.pipeline<num_stages = 1, num_ranks = 1, num_chunks = 1, target = "cpu", stages = [#zb.stage<stage = 0, forward = @f, backward_input = @f, backward_weight = @missing, t_f = 1.0, t_b = 1.0, t_w = 1.0, t_comm = 0.0, m_b = 0, m_w = 0>], params = [], inputs = []>} {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// The whole path: a linear layer with a bias and a second linear layer on
// one stage, 2 microbatches. W of microbatch 0 calls W whole; the stage's
// last W (microbatch 1) calls the three groups one by one inside its trace
// event, each followed by its gradient's sum over both microbatches (in
// microbatch order), the write into its gradient argument and
// zbrt_gradients_ready for it alone: the bias gradient (argument 1) is
// announced before the second weight's is computed.
// LOWER-LABEL: func.func @zb_rank0_step(
// LOWER: %[[W0:.*]]:3 = call @stage0_backward_weight(
// LOWER: call @stage0_forward(
// LOWER: call @stage0_backward_input(
// LOWER: call @zbrt_action_end(
// LOWER-NEXT: arith.constant 2 : i32
// LOWER-NEXT: arith.constant 0 : i32
// LOWER-NEXT: arith.constant 1 : i32
// LOWER-NEXT: call @zbrt_action_begin(
// LOWER-NEXT: %[[A:.*]] = call @stage0_backward_weight_c0(
// LOWER-NEXT: %[[SA:.*]] = zb.add %[[W0]]#0, %[[A]]
// LOWER-NEXT: bufferization.materialize_in_destination %[[SA]] in restrict writable %arg3
// LOWER-NEXT: %[[K0:.*]] = arith.constant 0 : i32
// LOWER-NEXT: %[[N0:.*]] = arith.constant 1 : i32
// LOWER-NEXT: call @zbrt_gradients_ready(%[[K0]], %[[N0]])
// LOWER-NEXT: %[[B:.*]] = call @stage0_backward_weight_c1(
// LOWER-NEXT: %[[SB:.*]] = zb.add %[[W0]]#1, %[[B]]
// LOWER-NEXT: bufferization.materialize_in_destination %[[SB]] in restrict writable %arg4
// LOWER-NEXT: %[[K1:.*]] = arith.constant 1 : i32
// LOWER-NEXT: %[[N1:.*]] = arith.constant 1 : i32
// LOWER-NEXT: call @zbrt_gradients_ready(%[[K1]], %[[N1]])
// LOWER-NEXT: %[[C:.*]] = call @stage0_backward_weight_c2(
// LOWER-NEXT: %[[SC:.*]] = zb.add %[[W0]]#2, %[[C]]
// LOWER-NEXT: bufferization.materialize_in_destination %[[SC]] in restrict writable %arg5
// LOWER-NEXT: %[[K2:.*]] = arith.constant 2 : i32
// LOWER-NEXT: %[[N2:.*]] = arith.constant 1 : i32
// LOWER-NEXT: call @zbrt_gradients_ready(%[[K2]], %[[N2]])
// LOWER: call @zbrt_action_end(
// LOWER-NOT: zbrt_gradients_ready
// LOWER: return

// Without the pass: both W passes call W whole and the three gradients are
// announced together after the last one.
// WHOLE-LABEL: func.func @zb_rank0_step(
// WHOLE: call @stage0_backward_weight(
// WHOLE: call @stage0_backward_weight(
// WHOLE: call @zbrt_action_end(
// WHOLE: %[[K:.*]] = arith.constant 0 : i32
// WHOLE-NEXT: %[[N:.*]] = arith.constant 3 : i32
// WHOLE-NEXT: call @zbrt_gradients_ready(%[[K]], %[[N]])
// WHOLE-NOT: zbrt_gradients_ready

// bucket-bytes=64: the first weight's gradient (3x5 floats, 60 bytes) is
// below 64 bytes and takes the bias's (20 bytes) into its bucket; the
// second weight's (40 bytes) is the last bucket, below the size.
// BUCKET: zb.weight_clusters = [@stage0_backward_weight_c0, @stage0_backward_weight_c1]
// BUCKET-LABEL: func.func private @stage0_backward_weight_c0(
// BUCKET-SAME: -> (tensor<3x5xf32> {zb.index = 1 : i64, zb.role = #zb.role<param_grad>}, tensor<5xf32> {zb.index = 2 : i64, zb.role = #zb.role<param_grad>})
// BUCKET-LABEL: func.func private @stage0_backward_weight_c1(
// BUCKET-SAME: -> (tensor<5x2xf32> {zb.index = 3 : i64, zb.role = #zb.role<param_grad>})
// NEGATIVE: zb-cluster-weight-gradients: bucket-bytes must be >= 0, got -1
