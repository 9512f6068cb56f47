//===- Layout.h - zb-run: pipelines and data-parallel groups ----*- C++ -*-===//
//
// Where each MPI rank of a D x P job sits (issue 39; the Zero Bubble paper,
// Appendix A). The job runs D copies of one P-rank pipeline (plan.json
// num_ranks = P, data_parallel = D):
//
//   world rank w = d * P + s     pipeline d in [0, D), stage rank s in [0, P)
//
// Pipeline d is the consecutive world ranks d*P .. d*P+P-1; it runs the
// plan's rank programs rank0.so .. rank<P-1>.so on microbatches d*m ..
// d*m+m-1 of the step's D*m (m = num_microbatches). The ranks with the same
// stage rank s form s's data-parallel group: they hold the same parameters
// and all-reduce their gradients before every optimizer step. World rank 0
// (pipeline 0's rank 0) prints, reports and writes every file.
//
// A job of one pipeline (D = 1) is the same layout with one group per rank.
// Communicators: the pipeline's (its rank s = the stage rank; the runner's
// gathers, the post-validation chain, saving parameters) and the group's
// (the gradient all-reduce, the loss across pipelines).
//
//===----------------------------------------------------------------------===//
#ifndef ZB_RUNNER_LAYOUT_H
#define ZB_RUNNER_LAYOUT_H

#include <mpi.h>

#include <cstdint>

namespace zb::runner {

struct Layout {
  int32_t worldRank = 0, worldSize = 1;
  /// P: ranks per pipeline (plan.json num_ranks).
  int32_t pipelineSize = 1;
  /// D: pipelines (data-parallel degree).
  int32_t dataParallel = 1;
  /// d: this rank's pipeline; s: its rank within it (= its rank program).
  int32_t pipeline = 0, stageRank = 0;
  /// The ranks of this pipeline (rank s = stage rank s).
  MPI_Comm pipelineComm = MPI_COMM_WORLD;
  /// The ranks of every pipeline with this stage rank (rank d = pipeline d).
  MPI_Comm groupComm = MPI_COMM_SELF;

  /// The rank that prints and writes files (world rank 0).
  bool reports() const { return worldRank == 0; }
};

/// This process's layout: a one-rank world until initLayout.
const Layout &layout();

/// Splits the MPI job into pipelines of `ranksPerPipeline` ranks
/// (collective over MPI_COMM_WORLD; the caller has checked that it divides
/// the world size): the runtime's pipeline (zbrt_set_pipeline, so that the
/// rank programs' peers are pipeline ranks) and the communicators above.
const Layout &initLayout(int32_t ranksPerPipeline);

/// Frees the communicators (before zbrt_finalize).
void finalizeLayout();

} // namespace zb::runner

#endif // ZB_RUNNER_LAYOUT_H
