// RUN: zb-opt %s -split-input-file | FileCheck %s
// RUN: zb-opt %s -split-input-file | zb-opt -split-input-file | FileCheck %s

// Every typed pipeline attribute (ZBAttributes.td) prints as it parses and
// parses back to itself (second RUN line).

// CHECK-LABEL: module attributes
// CHECK-SAME: zb.pipeline = #zb.pipeline<num_stages = 2, num_ranks = 1, num_chunks = 2, target = "h100",
// CHECK-SAME: stages = [#zb.stage<stage = 0, forward = @f0, backward_input = @b0, backward_weight = @w0, t_f = 1.500000e+00, t_b = 2.000000e+00, t_w = 2.500000e-01, t_comm = 0.000000e+00, m_b = 64, m_w = 32>,
// CHECK-SAME: #zb.stage<stage = 1, forward = @f1, backward_input = @b1, backward_weight = @w1, t_f = 1.000000e-01, t_b = 2.000000e-01, t_w = 3.000000e-01, t_comm = 1.000000e-02, m_b = 8, m_w = 4, cv_f = 5.000000e-02, cv_b = 0.000000e+00, cv_w = 1.000000e-01, profiled = true>]
// CHECK-SAME: params = [#zb.value<"w", index = 1, type = tensor<3x5xf32>, stages = [0, 1]>]
// CHECK-SAME: inputs = [#zb.value<"x", index = 0, type = tensor<4x3xf32>, stages = [0]>]>
// CHECK-SAME: zb.schedule = #zb.schedule<name = "zb-v", microbatches = 2, bubble_rate = 1.250000e-01, makespan_ms = 1.200000e+01, peak_memory = [1.280000e+02], stage_to_rank = [0, 0], cost_convention = "stage_span",
// CHECK-SAME: ranks = {{\[\[}}#zb.action<F, stage 0, mb 0>, #zb.action<F, stage 1, mb 0>, #zb.action<B, stage 1, mb 0>, #zb.action<W, stage 1, mb 0>]]>
module attributes {
  zb.pipeline = #zb.pipeline<num_stages = 2, num_ranks = 1, num_chunks = 2, target = "h100",
    stages = [#zb.stage<stage = 0, forward = @f0, backward_input = @b0, backward_weight = @w0, t_f = 1.5, t_b = 2.0, t_w = 0.25, t_comm = 0.0, m_b = 64, m_w = 32>,
              #zb.stage<stage = 1, forward = @f1, backward_input = @b1, backward_weight = @w1, t_f = 0.1, t_b = 0.2, t_w = 0.3, t_comm = 0.01, m_b = 8, m_w = 4, cv_f = 0.05, cv_b = 0.0, cv_w = 0.1, profiled = true>],
    params = [#zb.value<"w", index = 1, type = tensor<3x5xf32>, stages = [0, 1]>],
    inputs = [#zb.value<"x", index = 0, type = tensor<4x3xf32>, stages = [0]>]>,
  zb.schedule = #zb.schedule<name = "zb-v", microbatches = 2, bubble_rate = 0.125, makespan_ms = 12.0, peak_memory = [128.0], stage_to_rank = [0, 0], cost_convention = "stage_span",
    ranks = [[#zb.action<F, stage 0, mb 0>, #zb.action<F, stage 1, mb 0>, #zb.action<B, stage 1, mb 0>, #zb.action<W, stage 1, mb 0>]]>
} {
}

// -----

// Defaults are elided: cost_convention "makespan", fused_backward false;
// fused_backward = true is printed.
// CHECK-LABEL: module attributes
// CHECK-SAME: zb.schedule = #zb.schedule<name = "1f1b", microbatches = 1, bubble_rate = 0.000000e+00, makespan_ms = 3.000000e+00, peak_memory = [2.000000e+00], stage_to_rank = [0], fused_backward = true, ranks = {{\[\[}}#zb.action<F, stage 0, mb 0>, #zb.action<B, stage 0, mb 0>, #zb.action<W, stage 0, mb 0>]]>}
module attributes {
  zb.schedule = #zb.schedule<name = "1f1b", microbatches = 1, bubble_rate = 0.0, makespan_ms = 3.0, peak_memory = [2.0], stage_to_rank = [0], fused_backward = true, cost_convention = "makespan",
    ranks = [[#zb.action<F, stage 0, mb 0>, #zb.action<B, stage 0, mb 0>, #zb.action<W, stage 0, mb 0>]]>
} {
}

// -----

// Post-validation: optimizer_sync and validate_before (one action index per
// rank; the rank's action count = after its last action) round-trip.
// CHECK-LABEL: module attributes
// CHECK-SAME: ranks = {{\[\[}}#zb.action<F, stage 0, mb 0>, #zb.action<B, stage 0, mb 0>, #zb.action<W, stage 0, mb 0>]], optimizer_sync = "post-validation", validate_before = [3]>}
module attributes {
  zb.schedule = #zb.schedule<name = "zb-h1", microbatches = 1, bubble_rate = 0.0, makespan_ms = 3.0, peak_memory = [2.0], stage_to_rank = [0],
    ranks = [[#zb.action<F, stage 0, mb 0>, #zb.action<B, stage 0, mb 0>, #zb.action<W, stage 0, mb 0>]],
    optimizer_sync = "post-validation", validate_before = [3]>
} {
}

// -----

// Phases on backward ops, kinds and roles on stage functions, rank
// arguments on step functions.
// CHECK-LABEL: func.func @stage0_backward_weight
// CHECK-SAME: (%{{.*}}: tensor<4x3xf32> {zb.index = 0 : i64, zb.role = #zb.role<batch>}, %{{.*}}: tensor<4x5xf32> {zb.role = #zb.role<residual>, zb.value = 2 : i64})
// CHECK-SAME: -> (tensor<3x5xf32> {zb.index = 1 : i64, zb.role = #zb.role<param_grad>})
// CHECK-SAME: attributes {zb.kind = #zb.kind<backward_weight>, zb.stage = 0 : i64}
// CHECK: zb.add {{.*}}zb.phase = #zb.phase<W>
// CHECK: zb.neg {{.*}}zb.phase = #zb.phase<B>
func.func @stage0_backward_weight(%x: tensor<4x3xf32> {zb.index = 0 : i64, zb.role = #zb.role<batch>}, %g: tensor<4x5xf32> {zb.role = #zb.role<residual>, zb.value = 2 : i64}) -> (tensor<3x5xf32> {zb.index = 1 : i64, zb.role = #zb.role<param_grad>}) attributes {zb.kind = #zb.kind<backward_weight>, zb.stage = 0 : i64} {
  %s = zb.add %g, %g {zb.origin = 0 : i64, zb.phase = #zb.phase<W>} : tensor<4x5xf32>
  %n = zb.neg %s {zb.origin = 0 : i64, zb.phase = #zb.phase<B>} : tensor<4x5xf32>
  %dw = zb.constant dense<0.0> : tensor<3x5xf32>
  return %dw : tensor<3x5xf32>
}
// CHECK-LABEL: func.func @zb_rank0_step
// CHECK-SAME: zb.rank_args = [#zb.rank_arg<param, 1>, #zb.rank_arg<grad, 1>, #zb.rank_arg<input, 0>, #zb.rank_arg<loss>]
func.func @zb_rank0_step(%w: memref<3x5xf32>, %dw: memref<3x5xf32>, %x: memref<2x4x3xf32>, %loss: memref<f32>) attributes {zb.rank = 0 : i64, zb.rank_args = [#zb.rank_arg<param, 1>, #zb.rank_arg<grad, 1>, #zb.rank_arg<input, 0>, #zb.rank_arg<loss>]} {
  return
}
