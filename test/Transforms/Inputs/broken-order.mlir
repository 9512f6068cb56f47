// Two stages after zb-partition-stages (from zb-partition-stages.mlir), with a
// hand-written schedule that deadlocks: rank 0 runs microbatch 1 first and
// waits in B0.1 for its gradient, while rank 1 runs microbatch 0 first and
// waits in F1.0 for an activation rank 0 sends only after B0.1. (Receiving
// in another order than sent is fine by itself: zbrt_recv matches by tag.)
module attributes {zb.pipeline = #zb.pipeline<num_stages = 2, num_ranks = 2, num_chunks = 1, target = "cpu", stages = [#zb.stage<stage = 0, forward = @stage0_forward, backward_input = @stage0_backward_input, backward_weight = @stage0_backward_weight, t_f = 4.350000e-05, t_b = 9.000000e-05, t_w = 2.350000e-05, t_comm = 5.020000e-03, m_b = 80, m_w = 80>, #zb.stage<stage = 1, forward = @stage1_forward, backward_input = @stage1_backward_input, backward_weight = @stage1_backward_weight, t_f = 2.3500000000000002E-5, t_b = 2.3500000000000002E-5, t_w = 1.900000e-05, t_comm = 5.020000e-03, m_b = 80, m_w = 32>], params = [#zb.value<"w1", index = 1, type = tensor<3x5xf32>, stages = [0]>, #zb.value<"w2", index = 2, type = tensor<5x2xf32>, stages = [1]>], inputs = [#zb.value<"x", index = 0, type = tensor<4x3xf32>, stages = [0]>]>, zb.schedule = #zb.schedule<name = "broken", microbatches = 2, bubble_rate = 0.0, makespan_ms = 0.0, peak_memory = [0.0, 0.0], stage_to_rank = [0, 1], ranks = [[#zb.action<F, stage 0, mb 1>, #zb.action<B, stage 0, mb 1>, #zb.action<W, stage 0, mb 1>, #zb.action<F, stage 0, mb 0>, #zb.action<B, stage 0, mb 0>, #zb.action<W, stage 0, mb 0>], [#zb.action<F, stage 1, mb 0>, #zb.action<B, stage 1, mb 0>, #zb.action<W, stage 1, mb 0>, #zb.action<F, stage 1, mb 1>, #zb.action<B, stage 1, mb 1>, #zb.action<W, stage 1, mb 1>]]>} {
  func.func @stage0_forward(%arg0: tensor<3x5xf32> {zb.index = 1 : i64, zb.role = #zb.role<param>}, %arg1: tensor<4x3xf32> {zb.index = 0 : i64, zb.role = #zb.role<batch>}) -> (tensor<4x5xf32> {zb.role = #zb.role<act>, zb.value = 0 : i64}, tensor<4x5xf32> {zb.role = #zb.role<saved>, zb.value = 0 : i64}) attributes {zb.kind = #zb.kind<forward>, zb.stage = 0 : i64} {
    %0 = zb.matmul %arg1, %arg0 {zb.id = 0 : i64} : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
    %1 = zb.tanh %0 {zb.id = 1 : i64} : tensor<4x5xf32>
    return %1, %1 : tensor<4x5xf32>, tensor<4x5xf32>
  }
  func.func @stage0_backward_input(%arg0: tensor<4x5xf32> {zb.role = #zb.role<saved>, zb.value = 0 : i64}, %arg1: tensor<4x5xf32> {zb.role = #zb.role<grad>, zb.value = 1 : i64}) -> (tensor<4x5xf32> {zb.role = #zb.role<residual>, zb.value = 2 : i64}) attributes {zb.kind = #zb.kind<backward_input>, zb.stage = 0 : i64} {
    %0 = zb.constant dense<1.000000e+00> : tensor<4x5xf32> {zb.origin = 1 : i64, zb.phase = #zb.phase<B>}
    %1 = zb.mul %arg0, %arg0 {zb.origin = 1 : i64, zb.phase = #zb.phase<B>} : tensor<4x5xf32>
    %2 = zb.sub %0, %1 {zb.origin = 1 : i64, zb.phase = #zb.phase<B>} : tensor<4x5xf32>
    %3 = zb.mul %arg1, %2 {zb.act_grad, zb.origin = 1 : i64, zb.phase = #zb.phase<B>} : tensor<4x5xf32>
    return %3 : tensor<4x5xf32>
  }
  func.func @stage0_backward_weight(%arg0: tensor<4x3xf32> {zb.index = 0 : i64, zb.role = #zb.role<batch>}, %arg1: tensor<4x5xf32> {zb.role = #zb.role<residual>, zb.value = 2 : i64}) -> (tensor<3x5xf32> {zb.index = 1 : i64, zb.role = #zb.role<param_grad>}) attributes {zb.kind = #zb.kind<backward_weight>, zb.stage = 0 : i64} {
    %0 = zb.matmul %arg0, %arg1 {transpose_lhs, zb.origin = 0 : i64, zb.phase = #zb.phase<W>} : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
    return %0 : tensor<3x5xf32>
  }
  func.func @stage1_forward(%arg0: tensor<5x2xf32> {zb.index = 2 : i64, zb.role = #zb.role<param>}, %arg1: tensor<4x5xf32> {zb.role = #zb.role<act>, zb.value = 0 : i64}) -> (tensor<f32> {zb.role = #zb.role<loss>}, tensor<4x5xf32> {zb.role = #zb.role<saved>, zb.value = 0 : i64}) attributes {zb.kind = #zb.kind<forward>, zb.stage = 1 : i64} {
    %0 = zb.matmul %arg1, %arg0 {zb.id = 2 : i64} : (tensor<4x5xf32>, tensor<5x2xf32>) -> tensor<4x2xf32>
    %1 = zb.reduce_sum %0 axes [0, 1] {zb.id = 3 : i64} : tensor<4x2xf32> -> tensor<f32>
    return %1, %arg1 : tensor<f32>, tensor<4x5xf32>
  }
  func.func @stage1_backward_input(%arg0: tensor<5x2xf32> {zb.index = 2 : i64, zb.role = #zb.role<param>}) -> (tensor<4x5xf32> {zb.role = #zb.role<grad>, zb.value = 1 : i64}, tensor<4x2xf32> {zb.role = #zb.role<residual>, zb.value = 3 : i64}) attributes {zb.kind = #zb.kind<backward_input>, zb.stage = 1 : i64} {
    %0 = zb.constant dense<1.000000e+00> : tensor<f32> {zb.origin = 3 : i64, zb.phase = #zb.phase<B>}
    %1 = zb.broadcast_in_dim %0 dims [] {zb.act_grad, zb.origin = 3 : i64, zb.phase = #zb.phase<B>} : tensor<f32> -> tensor<4x2xf32>
    %2 = zb.matmul %1, %arg0 {transpose_rhs, zb.act_grad, zb.origin = 2 : i64, zb.phase = #zb.phase<B>} : (tensor<4x2xf32>, tensor<5x2xf32>) -> tensor<4x5xf32>
    return %2, %1 : tensor<4x5xf32>, tensor<4x2xf32>
  }
  func.func @stage1_backward_weight(%arg0: tensor<4x5xf32> {zb.role = #zb.role<saved>, zb.value = 0 : i64}, %arg1: tensor<4x2xf32> {zb.role = #zb.role<residual>, zb.value = 3 : i64}) -> (tensor<5x2xf32> {zb.index = 2 : i64, zb.role = #zb.role<param_grad>}) attributes {zb.kind = #zb.kind<backward_weight>, zb.stage = 1 : i64} {
    %0 = zb.matmul %arg0, %arg1 {transpose_lhs, zb.origin = 2 : i64, zb.phase = #zb.phase<W>} : (tensor<4x5xf32>, tensor<4x2xf32>) -> tensor<5x2xf32>
    return %0 : tensor<5x2xf32>
  }
}

