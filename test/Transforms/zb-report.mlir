// RUN: not zb-opt %s --split-input-file --zb-report -o /dev/null 2>&1 | FileCheck %s
// RUN: not zb-opt %s --split-input-file --zb-report 2>/dev/null | FileCheck %s --check-prefix=IR

// zb-report: one line per stage of zb.pipeline with its costs per
// microbatch, the totals, and the schedule's prediction when there is one.
// The IR is unchanged.

// Two stages with unequal costs: totals T_F = 1.5 + 2 = 3.5 ms,
// T_B = 3 + 4 = 7 ms, T_W = 1 + 0.5 = 1.5 ms, (T_B + T_W) / T_F = 8.5 / 3.5
// = 2.43.
// CHECK: zb-report: 2 stages on 2 ranks (1 chunk(s) per rank), cost model 'h100', per microbatch:
// CHECK-NEXT: stage  0: T_F=1.5000 ms T_B=3.0000 ms T_W=1.0000 ms T_comm=0.2500 ms M_B=4096 bytes M_W=1024 bytes
// CHECK-NEXT: stage  1: T_F=2.0000 ms T_B=4.0000 ms T_W=0.5000 ms T_comm=0.2500 ms M_B=8192 bytes M_W=512 bytes
// CHECK-NEXT: total:    T_F=3.5000 ms T_B=7.0000 ms T_W=1.5000 ms (T_B+T_W)/T_F=2.43
// CHECK-NOT: schedule
// IR: module attributes {zb.pipeline = #zb.pipeline<num_stages = 2
module attributes {zb.pipeline = #zb.pipeline<num_stages = 2, num_ranks = 2, num_chunks = 1, target = "h100",
  stages = [
    #zb.stage<stage = 0, forward = @f0, backward_input = @b0, backward_weight = @w0, t_f = 1.5, t_b = 3.0, t_w = 1.0, t_comm = 0.25, m_b = 4096, m_w = 1024>,
    #zb.stage<stage = 1, forward = @f1, backward_input = @b1, backward_weight = @w1, t_f = 2.0, t_b = 4.0, t_w = 0.5, t_comm = 0.25, m_b = 8192, m_w = 512>],
  params = [], inputs = []>} {
}

// -----

// With zb.schedule (here written by hand: one microbatch, F B W on each of
// two ranks), its name, predicted bubble rate and peak memory per rank.
// CHECK: zb-report: 2 stages on 2 ranks
// CHECK: total:    T_F=2.0000 ms T_B=2.0000 ms T_W=2.0000 ms (T_B+T_W)/T_F=2.00
// CHECK-NEXT: schedule zb-h1: predicted bubble rate 0.5000, peak memory per rank (bytes): 3 2
module attributes {zb.pipeline = #zb.pipeline<num_stages = 2, num_ranks = 2, num_chunks = 1, target = "cpu",
  stages = [
    #zb.stage<stage = 0, forward = @f0, backward_input = @b0, backward_weight = @w0, t_f = 1.0, t_b = 1.0, t_w = 1.0, t_comm = 0.0, m_b = 2, m_w = 1>,
    #zb.stage<stage = 1, forward = @f1, backward_input = @b1, backward_weight = @w1, t_f = 1.0, t_b = 1.0, t_w = 1.0, t_comm = 0.0, m_b = 2, m_w = 1>],
  params = [], inputs = []>,
  zb.schedule = #zb.schedule<name = "zb-h1", microbatches = 1, bubble_rate = 0.5, makespan_ms = 6.0,
    peak_memory = [3.0, 2.0], stage_to_rank = [0, 1], fused_backward = false,
    cost_convention = "makespan",
    ranks = [[#zb.action<F, stage 0, mb 0>, #zb.action<B, stage 0, mb 0>, #zb.action<W, stage 0, mb 0>],
             [#zb.action<F, stage 1, mb 0>, #zb.action<B, stage 1, mb 0>, #zb.action<W, stage 1, mb 0>]]>} {
}

// -----

// A module that was not partitioned: an error, nothing printed.
// CHECK: error: module has no zb.pipeline attribute: run zb-partition-stages first
module {
}
