// RUN: zb-opt %s -zb-schedule="algorithm=1f1b microbatches=8" | FileCheck %s --check-prefix=ONEF
// RUN: zb-opt %s -zb-schedule="algorithm=zb-h1 microbatches=8" | FileCheck %s --check-prefix=H1
// RUN: not zb-opt %s -zb-schedule="algorithm=zb-h1 microbatches=2" 2>&1 | FileCheck %s --check-prefix=FEW
// RUN: not zb-opt %s -zb-schedule="algorithm=nonsense" 2>&1 | FileCheck %s --check-prefix=NAME
// RUN: zb-opt %s -zb-schedule="algorithm=1f1b microbatches=8 profile=%S/Inputs/profile-4stages.json" | FileCheck %s --check-prefix=PROF
// RUN: not zb-opt %s -zb-schedule="profile=%S/Inputs/missing.json" 2>&1 | FileCheck %s --check-prefix=NOPROF
// RUN: zb-opt %s -zb-schedule="algorithm=zb-h1 microbatches=8" -zb-report -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: zb-opt %s -zb-schedule="algorithm=zb-h1 microbatches=8 optimizer-sync=post-validation" | FileCheck %s --check-prefix=PV
// RUN: not zb-opt %s -zb-schedule="optimizer-sync=all-reduce" 2>&1 | FileCheck %s --check-prefix=PV-BAD

// Four stages with T_F = T_B = T_W = 1 ms and no communication latency.
// 1F1B: makespan (m + p - 1)(T_F + T_B + T_W) = 33 ms, bubble 9/33.
// ONEF: zb.schedule = #zb.schedule<name = "1f1b", microbatches = 8, bubble_rate = 0.27272727
// ONEF-SAME: makespan_ms = 3.300000e+01
// ONEF-SAME: stage_to_rank = [0, 1, 2, 3]
// ONEF-SAME: fused_backward = true
// ONEF-SAME: ranks = {{\[\[}}#zb.action<F, stage 0, mb 0>, #zb.action<F, stage 0, mb 1>, #zb.action<F, stage 0, mb 2>, #zb.action<F, stage 0, mb 3>, #zb.action<B, stage 0, mb 0>, #zb.action<W, stage 0, mb 0>, #zb.action<F, stage 0, mb 4>, #zb.action<B, stage 0, mb 1>, #zb.action<W, stage 0, mb 1>,
// ZB-H1 (paper Section 2): bubble (p-1)(T_F + T_B - T_W) = 3 ms of 27 ms.
// H1: zb.schedule = #zb.schedule<name = "zb-h1", microbatches = 8, bubble_rate = 0.1111111
// H1-SAME: makespan_ms = 2.700000e+01
// FEW: error: zb-schedule: zb-h1 needs at least p=4 microbatches, got m=2
// NAME: error: zb-schedule: {{.*}}nonsense
// Measured costs (T_F = T_B = 2, T_W = 1 ms) replace the model's: 1F1B takes
// (m + p - 1)(T_F + T_B + T_W) = 55 ms, bubble 15/55.
// PROF: #zb.stage<stage = 0, forward = @f0, backward_input = @b0, backward_weight = @w0, {{t_f = 2.000000e\+00, t_b = 2.000000e\+00, t_w = 1.000000e\+00, t_comm = 0.000000e\+00}}, m_b = 2, m_w = 1, {{.*}}profiled = true>
// PROF: zb.schedule = #zb.schedule<name = "1f1b", microbatches = 8, bubble_rate = 0.27272727
// PROF-SAME: makespan_ms = 5.500000e+01
// NOPROF: error: profile '{{.*}}missing.json': cannot read: No such file or directory
// REPORT: zb-report: 4 stages on 4 ranks (1 chunk(s) per rank), cost model 'cpu', per microbatch:
// REPORT: stage  0: T_F=1.0000 ms T_B=1.0000 ms T_W=1.0000 ms T_comm=0.0000 ms M_B=2 bytes M_W=1 bytes
// REPORT: stage  3: T_F=1.0000 ms
// REPORT: total:    T_F=4.0000 ms T_B=4.0000 ms T_W=4.0000 ms (T_B+T_W)/T_F=2.00
// REPORT: schedule zb-h1: predicted bubble rate 0.1111, peak memory per rank (bytes): 8 7 6 5
module attributes {zb.pipeline = #zb.pipeline<num_stages = 4, num_ranks = 4, num_chunks = 1, target = "cpu",
  stages = [
    #zb.stage<stage = 0, forward = @f0, backward_input = @b0, backward_weight = @w0, t_f = 1.0, t_b = 1.0, t_w = 1.0, t_comm = 0.0, m_b = 2, m_w = 1>,
    #zb.stage<stage = 1, forward = @f1, backward_input = @b1, backward_weight = @w1, t_f = 1.0, t_b = 1.0, t_w = 1.0, t_comm = 0.0, m_b = 2, m_w = 1>,
    #zb.stage<stage = 2, forward = @f2, backward_input = @b2, backward_weight = @w2, t_f = 1.0, t_b = 1.0, t_w = 1.0, t_comm = 0.0, m_b = 2, m_w = 1>,
    #zb.stage<stage = 3, forward = @f3, backward_input = @b3, backward_weight = @w3, t_f = 1.0, t_b = 1.0, t_w = 1.0, t_comm = 0.0, m_b = 2, m_w = 1>],
  params = [], inputs = []>} {
}

// Post-validation (the paper's Section 4) on ZB-H1 with T_comm = 0: rank 0
// ends last (27 ms), so the partial state reaches every rank, and the full
// state comes back, at 27 ms, when no rank has started its next iteration:
// every rank validates before its first action (with latencies the point
// moves into the warm-up: OptimizerSyncTest, test/Schedule/optimizer-sync).
// PV: optimizer_sync = "post-validation", validate_before = [0, 0, 0, 0]>
// PV-BAD: error: zb-schedule: optimizer-sync must be none or post-validation, got 'all-reduce'
