// RUN: zb-opt %s -split-input-file -verify-diagnostics

// One case per check of the typed pipeline attributes (ZBAttributes.cpp):
// the attribute verifiers and the attribute expected under each name.

// expected-error @+1 {{#zb.pipeline: num_ranks x num_chunks (2 x 2) must equal num_stages (2)}}
module attributes {zb.pipeline = #zb.pipeline<num_stages = 2, num_ranks = 2, num_chunks = 2, target = "cpu", stages = [], params = [], inputs = []>} {
}

// -----

// expected-error @+1 {{#zb.pipeline: 1 stage entries for num_stages = 2}}
module attributes {zb.pipeline = #zb.pipeline<num_stages = 2, num_ranks = 2, num_chunks = 1, target = "cpu", stages = [#zb.stage<stage = 0, forward = @f, backward_input = @b, backward_weight = @w, t_f = 1.0, t_b = 1.0, t_w = 1.0, t_comm = 0.0, m_b = 1, m_w = 1>], params = [], inputs = []>} {
}

// -----

// expected-error @+1 {{#zb.pipeline: entry 0 of stages must be the #zb.stage of stage 0, not #zb.stage<stage = 1}}
module attributes {zb.pipeline = #zb.pipeline<num_stages = 1, num_ranks = 1, num_chunks = 1, target = "cpu", stages = [#zb.stage<stage = 1, forward = @f, backward_input = @b, backward_weight = @w, t_f = 1.0, t_b = 1.0, t_w = 1.0, t_comm = 0.0, m_b = 1, m_w = 1>], params = [], inputs = []>} {
}

// -----

// expected-error @+1 {{#zb.pipeline: params 'w' names stage 3 of 1}}
module attributes {zb.pipeline = #zb.pipeline<num_stages = 1, num_ranks = 1, num_chunks = 1, target = "cpu", stages = [#zb.stage<stage = 0, forward = @f, backward_input = @b, backward_weight = @w, t_f = 1.0, t_b = 1.0, t_w = 1.0, t_comm = 0.0, m_b = 1, m_w = 1>], params = [#zb.value<"w", index = 1, type = tensor<2xf32>, stages = [3]>], inputs = []>} {
}

// -----

// expected-error @+1 {{#zb.pipeline: inputs holds 1 : i64, not a #zb.value}}
module attributes {zb.pipeline = #zb.pipeline<num_stages = 1, num_ranks = 1, num_chunks = 1, target = "cpu", stages = [#zb.stage<stage = 0, forward = @f, backward_input = @b, backward_weight = @w, t_f = 1.0, t_b = 1.0, t_w = 1.0, t_comm = 0.0, m_b = 1, m_w = 1>], params = [], inputs = [1]>} {
}

// -----

// expected-error @+1 {{#zb.stage 0: t_b must be a finite time >= 0 (ms), not -1}}
module attributes {zb.x = #zb.stage<stage = 0, forward = @f, backward_input = @b, backward_weight = @w, t_f = 1.0, t_b = -1.0, t_w = 1.0, t_comm = 0.0, m_b = 1, m_w = 1>} {
}

// -----

// expected-error @+1 {{#zb.stage 0: m_b and m_w must be >= 0 bytes}}
module attributes {zb.x = #zb.stage<stage = 0, forward = @f, backward_input = @b, backward_weight = @w, t_f = 1.0, t_b = 1.0, t_w = 1.0, t_comm = 0.0, m_b = -8, m_w = 1>} {
}

// -----

// expected-error @+1 {{#zb.value 'x': type must be a ranked tensor, not 'f32'}}
module attributes {zb.x = #zb.value<"x", index = 0, type = f32, stages = [0]>} {
}

// -----

// expected-error @+1 {{#zb.value 'x': index must be >= 0}}
module attributes {zb.x = #zb.value<"x", index = -2, type = tensor<2xf32>, stages = [0]>} {
}

// -----

// expected-error @+1 {{#zb.action: stage -1 and microbatch 0 must be >= 0}}
module attributes {zb.x = #zb.action<F, stage -1, mb 0>} {
}

// -----

// expected-error @+1 {{#zb.schedule: rank 1 has #zb.action<F, stage 0, mb 0>, but stage 0 is on rank 0}}
module attributes {zb.schedule = #zb.schedule<name = "s", microbatches = 1, bubble_rate = 0.0, makespan_ms = 0.0, peak_memory = [0.0, 0.0], stage_to_rank = [0, 1], ranks = [[], [#zb.action<F, stage 0, mb 0>]]>} {
}

// -----

// expected-error @+1 {{#zb.schedule: rank 0 has #zb.action<B, stage 2, mb 0> of stage 2, but stage_to_rank has 1 stages}}
module attributes {zb.schedule = #zb.schedule<name = "s", microbatches = 1, bubble_rate = 0.0, makespan_ms = 0.0, peak_memory = [0.0], stage_to_rank = [0], ranks = [[#zb.action<B, stage 2, mb 0>]]>} {
}

// -----

// expected-error @+1 {{#zb.schedule: #zb.action<W, stage 0, mb 4> on rank 0 is past the 4 microbatches}}
module attributes {zb.schedule = #zb.schedule<name = "s", microbatches = 4, bubble_rate = 0.0, makespan_ms = 0.0, peak_memory = [0.0], stage_to_rank = [0], ranks = [[#zb.action<W, stage 0, mb 4>]]>} {
}

// -----

// expected-error @+1 {{#zb.schedule: rank 0 holds "F0.0", not a #zb.action}}
module attributes {zb.schedule = #zb.schedule<name = "s", microbatches = 1, bubble_rate = 0.0, makespan_ms = 0.0, peak_memory = [0.0], stage_to_rank = [0], ranks = [["F0.0"]]>} {
}

// -----

// expected-error @+1 {{#zb.schedule: stage_to_rank names rank 2, but the schedule has 1 ranks}}
module attributes {zb.schedule = #zb.schedule<name = "s", microbatches = 1, bubble_rate = 0.0, makespan_ms = 0.0, peak_memory = [0.0], stage_to_rank = [2], ranks = [[]]>} {
}

// -----

// expected-error @+1 {{#zb.schedule: peak_memory has 2 entries for 1 ranks}}
module attributes {zb.schedule = #zb.schedule<name = "s", microbatches = 1, bubble_rate = 0.0, makespan_ms = 0.0, peak_memory = [0.0, 1.0], stage_to_rank = [0], ranks = [[]]>} {
}

// -----

// The schedule's enums are the dialect's own (ScheduleCostConvention,
// ScheduleOptimizerSync): a name outside them fails to parse.
// expected-error @+2 {{#zb.schedule: cost_convention must be "makespan" or "stage_span", not "wall"}}
// expected-error @+1 {{failed to parse ZB_ScheduleAttr parameter 'cost_convention'}}
module attributes {zb.schedule = #zb.schedule<name = "s", microbatches = 1, bubble_rate = 0.0, makespan_ms = 0.0, peak_memory = [0.0], stage_to_rank = [0], cost_convention = "wall", ranks = [[]]>} {
}

// -----

// expected-error @+1 {{#zb.schedule: microbatches must be > 0, not 0}}
module attributes {zb.schedule = #zb.schedule<name = "s", microbatches = 0, bubble_rate = 0.0, makespan_ms = 0.0, peak_memory = [0.0], stage_to_rank = [0], ranks = [[]]>} {
}

// -----

// expected-error @+1 {{#zb.schedule: directions must be 1, or 2 with an even number of stages and of microbatches, not 3 with 2 stages and 2 microbatches}}
module attributes {zb.schedule = #zb.schedule<name = "s", microbatches = 2, bubble_rate = 0.0, makespan_ms = 0.0, peak_memory = [0.0, 0.0], stage_to_rank = [0, 1], ranks = [[], []], directions = 3>} {
}

// -----

// expected-error @+1 {{#zb.schedule: directions must be 1, or 2 with an even number of stages and of microbatches, not 2 with 2 stages and 3 microbatches}}
module attributes {zb.schedule = #zb.schedule<name = "s", microbatches = 3, bubble_rate = 0.0, makespan_ms = 0.0, peak_memory = [0.0, 0.0], stage_to_rank = [0, 1], ranks = [[], []], directions = 2>} {
}

// -----

// The schedule must cover the pipeline's stages.
// expected-error @+1 {{zb.schedule maps 1 stages, zb.pipeline has 2}}
module attributes {zb.pipeline = #zb.pipeline<num_stages = 2, num_ranks = 1, num_chunks = 2, target = "cpu", stages = [#zb.stage<stage = 0, forward = @f, backward_input = @b, backward_weight = @w, t_f = 1.0, t_b = 1.0, t_w = 1.0, t_comm = 0.0, m_b = 1, m_w = 1>, #zb.stage<stage = 1, forward = @f, backward_input = @b, backward_weight = @w, t_f = 1.0, t_b = 1.0, t_w = 1.0, t_comm = 0.0, m_b = 1, m_w = 1>], params = [], inputs = []>,
                   zb.schedule = #zb.schedule<name = "s", microbatches = 1, bubble_rate = 0.0, makespan_ms = 0.0, peak_memory = [0.0], stage_to_rank = [0], ranks = [[]]>} {
}

// -----

// The attribute expected under each name: the old string forms are errors.
// expected-error @+1 {{'zb.schedule' must be a #zb.schedule, not {ranks = [["F0.0"]]}}}
module attributes {zb.schedule = {ranks = [["F0.0"]]}} {
}

// -----

// expected-error @+1 {{'zb.pipeline' must be a #zb.pipeline, not {num_stages = 1 : i64}}}
module attributes {zb.pipeline = {num_stages = 1 : i64}} {
}

// -----

func.func @phase(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'zb.phase' must be a #zb.phase, not "B"}}
  %0 = zb.neg %x {zb.phase = "B"} : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// expected-error @+1 {{'zb.kind' must be a #zb.kind, not "forward"}}
func.func @kind() attributes {zb.kind = "forward"} {
  return
}

// -----

// expected-error @+1 {{'zb.role' must be a #zb.role, not "param"}}
func.func @role(%x: tensor<2xf32> {zb.role = "param"}) {
  return
}

// -----

// expected-error @+1 {{'zb.role' must be a #zb.role, not "loss"}}
func.func @result_role() -> (tensor<f32> {zb.role = "loss"}) {
  %0 = zb.constant dense<0.0> : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// expected-error @+1 {{'zb.rank_args' must be an array of #zb.rank_arg, not ["param:1"]}}
func.func @rank_args() attributes {zb.rank_args = ["param:1"]} {
  return
}

// -----

// expected-error @+1 {{#zb.rank_arg<param>: needs the index of the model parameter}}
func.func @rank_arg_index() attributes {zb.rank_args = [#zb.rank_arg<param>]} {
  return
}

// -----

// expected-error @+1 {{#zb.rank_arg<loss>: takes no index}}
func.func @rank_arg_loss() attributes {zb.rank_args = [#zb.rank_arg<loss, 3>]} {
  return
}

// -----

// expected-error @+2 {{expected ::zb::Phase to be one of: B, W}}
// expected-error @+1 {{failed to parse ZB_PhaseAttr parameter 'value'}}
func.func @bad_phase() attributes {zb.x = #zb.phase<F>} {
  return
}

// -----

// expected-error @+2 {{#zb.schedule: optimizer_sync must be "none" or "post-validation", not "all-reduce"}}
// expected-error @+1 {{failed to parse ZB_ScheduleAttr parameter 'optimizer_sync'}}
module attributes {zb.schedule = #zb.schedule<name = "s", microbatches = 1, bubble_rate = 0.0, makespan_ms = 0.0, peak_memory = [0.0], stage_to_rank = [0], ranks = [[]], optimizer_sync = "all-reduce">} {
}

// -----

// expected-error @+1 {{#zb.schedule: validate_before goes with optimizer_sync = "post-validation" (and only with it)}}
module attributes {zb.schedule = #zb.schedule<name = "s", microbatches = 1, bubble_rate = 0.0, makespan_ms = 0.0, peak_memory = [0.0], stage_to_rank = [0], ranks = [[]], optimizer_sync = "post-validation">} {
}

// -----

// expected-error @+1 {{#zb.schedule: validate_before of rank 0 is 2, outside [0, 1]}}
module attributes {zb.schedule = #zb.schedule<name = "s", microbatches = 1, bubble_rate = 0.0, makespan_ms = 0.0, peak_memory = [0.0], stage_to_rank = [0], ranks = [[#zb.action<F, stage 0, mb 0>]], optimizer_sync = "post-validation", validate_before = [2]>} {
}

// -----

// expected-error @+1 {{#zb.schedule: validate_before has 2 entries for 1 ranks}}
module attributes {zb.schedule = #zb.schedule<name = "s", microbatches = 1, bubble_rate = 0.0, makespan_ms = 0.0, peak_memory = [0.0], stage_to_rank = [0], ranks = [[]], optimizer_sync = "post-validation", validate_before = [0, 0]>} {
}
