//===- DataParallel.h - zb-run: gradients across pipelines ------*- C++ -*-===//
//
// The gradient all-reduce of a data-parallel job (zb/Runner/Layout.h; the
// Zero Bubble paper, Appendix A, Figure 8): each gradient of this rank is
// summed over the D pipelines of its data-parallel group, in place, so that
// every pipeline holds the sum over the step's D*m microbatches (which the
// optimizer scales by 1/(D*m), RankProgram::globalMicrobatches) and takes
// the same optimizer step.
//
// Gradients are all-reduced in buckets (as PyTorch DDP does), each as soon
// as its gradients are final: the rank program calls
// zbrt_gradients_ready(k, n) right after the last W that contributes to
// gradient arguments k .. k+n-1 (zb-lower-pipeline), while the rank's
// later passes still run (a V schedule's other chunk; the other ranks'
// passes). Those gradients lie side by side in the rank's gradient arena
// (RankProgram::gradArena, in parameter order, 64-byte padding zeroed every
// step), so the bucket is one span and one all-reduce. The step's end
// starts the rest (tied parameters, whose copies are summed in the
// pipeline first), bucketed the same way, and waits for all, under the
// --comm-timeout watchdog. Non-blocking MPI all-reduces (MPI_Iallreduce,
// MPI_SUM over the group's communicator, chunks of at most 2^30 floats);
// every member issues them in the same order, since every pipeline runs
// the same program. Each bucket is a trace event
// (zbrt::EventKind::AllReduce) from its start until the runner saw it
// complete.
//
// On the CUDA backend the gradients are written by kernels on the compute
// stream, which may still run when the host code announces them: there the
// hook hands the bucket to the backend (zbrt_allreduce_start), which records
// an event on the compute stream at that point, makes the group's NCCL
// stream wait for it and enqueues an in-place ncclAllReduce there, the host
// waiting for nothing. Under CUDA graphs the call also ends the captured
// segment (a replay launches the segment there), so the graph holds no
// NCCL call and the host code, which runs every step, enqueues the
// all-reduce afresh each time. The step's end starts the rest through the
// backend the same way and zbrt_allreduce_finish makes the compute stream
// wait for all of them before the optimizer. Where the backend refuses
// (members of the group on one device, no NCCL: the same answer for every
// call of the run), every bucket waits for the step's end and goes over
// MPI after one synchronisation. The trace event of an NCCL all-reduce
// spans its issue until zbrt_allreduce_finish returned (the host's view;
// the device's work runs on).
//
//===----------------------------------------------------------------------===//
#ifndef ZB_RUNNER_DATAPARALLEL_H
#define ZB_RUNNER_DATAPARALLEL_H

#include "zb/Runner/RankProgram.h"

#include <mpi.h>

#include <cstdint>
#include <set>
#include <vector>

namespace zb::runner {

class GradientAllReduce {
public:
  /// Installs the zbrt_gradients_ready hook when the job has D > 1
  /// pipelines (either backend); does nothing for D = 1.
  explicit GradientAllReduce(RankProgram &rp);
  ~GradientAllReduce();
  GradientAllReduce(const GradientAllReduce &) = delete;
  GradientAllReduce &operator=(const GradientAllReduce &) = delete;

  /// Before a training step's program runs: gradients announced from now
  /// on start their all-reduce (evaluations announce theirs too; they are
  /// not armed).
  void arm();
  /// The step's passes are to run again (post-validation's redo): waits
  /// for the all-reduces in flight (the program rewrites their buffers) and
  /// forgets them.
  void discard();
  /// After step `step` (0-based): starts the all-reduce of every gradient
  /// not announced, waits for all, disarms. Collective over the group.
  void finish(int64_t step);

private:
  struct Bucket {
    int64_t firstParam = 0, lastParam = 0; ///< plan.json indices
    float *data = nullptr;                 ///< its span of the arena
    int64_t n = 0;                         ///< floats
    std::vector<MPI_Request> requests;     ///< one per chunk of 2^30 floats
    double beginUs = 0;
    bool done = false;
  };
  /// The bucket of the rank's gradients firstParam .. lastParam (plan.json
  /// indices of rp.grads, consecutive in it), not started.
  Bucket bucket(int64_t firstParam, int64_t lastParam) const;
  /// The buckets of the gradients not started yet: runs of consecutive
  /// gradients.
  std::vector<Bucket> rest() const;
  /// Marks b's gradients started (rest() leaves them out).
  void markStarted(const Bucket &b);
  /// Starts b over MPI on the host (MPI_Iallreduce).
  void start(Bucket b);
  void record(const Bucket &b, double endUs);
  /// Stamps the end of every all-reduce that has completed.
  void poll();
  static void hook(void *self, int32_t firstGradArg, int32_t count);

  RankProgram &rp;
  /// The parameter index of each gradient argument (plan.json).
  std::vector<int64_t> gradParams;
  MPI_Comm comm = MPI_COMM_NULL;
  bool enabled = false, onCuda = false, armed = false;
  /// The backend refused a bucket (no NCCL for the group): the run's
  /// buckets all go over MPI at the step's end.
  bool deviceRefused = false;
  std::vector<Bucket> inFlight; ///< this step's MPI ones, in start order
  /// This step's buckets the backend took (zbrt_allreduce_start), in order.
  std::vector<Bucket> onDevice;
  std::set<int64_t> started;    ///< their parameters
};

} // namespace zb::runner

#endif // ZB_RUNNER_DATAPARALLEL_H
