//===- Layout.cpp - zb-run: pipelines and data-parallel groups ------------===//

#include "zb/Runner/Layout.h"

#include "zbrt/zbrt.h"

#include <initializer_list>

using namespace zb::runner;

namespace {
Layout &state() {
  static Layout l;
  return l;
}
} // namespace

const Layout &zb::runner::layout() { return state(); }

const Layout &zb::runner::initLayout(int32_t ranksPerPipeline) {
  Layout &l = state();
  finalizeLayout();
  l.worldRank = zbrt_rank();
  l.worldSize = zbrt_world_size();
  l.pipelineSize = ranksPerPipeline;
  l.dataParallel = l.worldSize / ranksPerPipeline;
  l.pipeline = l.worldRank / ranksPerPipeline;
  l.stageRank = zbrt_set_pipeline(ranksPerPipeline);
  MPI_Comm_split(MPI_COMM_WORLD, l.pipeline, l.stageRank, &l.pipelineComm);
  MPI_Comm_split(MPI_COMM_WORLD, l.stageRank, l.pipeline, &l.groupComm);
  return l;
}

void zb::runner::finalizeLayout() {
  Layout &l = state();
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    return;
  for (MPI_Comm *c : {&l.pipelineComm, &l.groupComm})
    if (*c != MPI_COMM_WORLD && *c != MPI_COMM_SELF && *c != MPI_COMM_NULL)
      MPI_Comm_free(c);
  l.pipelineComm = MPI_COMM_WORLD;
  l.groupComm = MPI_COMM_SELF;
}
