//===- Collective.cpp - zb-run: what all ranks do together ----------------===//

#include "zb/Runner/Collective.h"
#include "zb/Runner/Layout.h"
#include "zb/Runner/Safetensors.h"
#include "zb/Runner/Watched.h"

#include "zb/Support/AtomicFile.h"
#include "zb/Support/Checksum.h"

#include "zbrt/zbrt.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <mpi.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>

using namespace llvm;
using namespace zb::runner;
using namespace zb::formats;

namespace {

Error makeError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// Messages of at most 2^28 floats (MPI counts are int).
constexpr int64_t kChunk = int64_t(1) << 28;

/// Rank 0's image of a params.bin-layout file: tensors land at their
/// parameters' offsets. A tensor that does not match the plan (an index out
/// of range, another size) is remembered as an error, not written.
struct FileImage {
  const Plan &plan;
  std::vector<char> bytes;
  std::string mismatch;

  explicit FileImage(const Plan &plan) : plan(plan) {
    int64_t size = 0;
    for (const ParamInfo &p : plan.params)
      size = std::max(size, p.offsetBytes + 4 * p.numElements());
    bytes.assign((size_t)size, 0);
  }
  void put(int64_t index, const float *data, int64_t n) {
    if (index < 0 || index >= (int64_t)plan.params.size() ||
        n != plan.params[index].numElements()) {
      if (mismatch.empty())
        mismatch = formatv("tensor {0} ({1} elements) does not match the "
                           "plan's parameters",
                           index, n)
                       .str();
      return;
    }
    std::memcpy(bytes.data() + plan.params[index].offsetBytes, data,
                (size_t)n * 4);
  }
};

/// Rank 0: the pipeline's other ranks' tensors, in rank order (a tied
/// parameter's copies are equal; the last rank's is written last).
void receiveTensors(FileImage &image, MPI_Comm comm) {
  std::vector<float> staging;
  for (int32_t r = 1; r < layout().pipelineSize; ++r) {
    std::string what =
        formatv("rank {0}'s parameters (to save them)", r).str();
    int64_t count = 0;
    watched::recv(&count, 1, MPI_INT64_T, r, 0, comm, what.c_str());
    for (int64_t i = 0; i < count; ++i) {
      int64_t header[2];
      watched::recv(header, 2, MPI_INT64_T, r, 0, comm, what.c_str());
      staging.resize((size_t)header[1]);
      for (int64_t at = 0; at < header[1]; at += kChunk)
        watched::recv(staging.data() + at,
                      (int)std::min(kChunk, header[1] - at), MPI_FLOAT, r, 0,
                      comm, what.c_str());
      image.put(header[0], staging.data(), header[1]);
    }
  }
}

/// The other ranks: their tensors to rank 0.
void sendTensors(const std::map<int64_t, Buffer> &tensors, MPI_Comm comm) {
  int64_t count = (int64_t)tensors.size();
  const char *what = "rank 0 to take this rank's parameters (to save them)";
  watched::send(&count, 1, MPI_INT64_T, 0, 0, comm, what);
  for (const auto &[index, buf] : tensors) {
    int64_t header[2] = {index, buf.size()};
    watched::send(header, 2, MPI_INT64_T, 0, 0, comm, what);
    for (int64_t at = 0; at < buf.size(); at += kChunk)
      watched::send(buf.data() + at, (int)std::min(kChunk, buf.size() - at),
                    MPI_FLOAT, 0, 0, comm, what);
  }
}

/// Every rank's `tensors`, written by rank 0 alone through the one
/// atomic-file writer: into `binPath` in params.bin's layout and into
/// `safetensorsPath` as safetensors (writeSafetensors), each where not empty.
/// `what` names the flag in errors. A data-parallel job's pipelines hold the
/// same tensors: pipeline 0's are written. Collective over all ranks.
bool saveTensors(const std::map<int64_t, Buffer> &tensors, const Plan &plan,
                 StringRef binPath, StringRef safetensorsPath, StringRef what) {
  if (layout().pipeline != 0)
    return agree(Error::success());
  MPI_Comm comm;
  MPI_Comm_dup(layout().pipelineComm, &comm);
  Error err = Error::success();
  if (zbrt_rank() == 0) {
    FileImage image(plan);
    for (const auto &[index, buf] : tensors)
      image.put(index, buf.data(), buf.size());
    receiveTensors(image, comm);
    if (!image.mismatch.empty())
      err = makeError(image.mismatch);
    if (!err && !binPath.empty())
      err = zb::support::writeFileAtomically(binPath, [&](raw_ostream &os) {
        os.write(image.bytes.data(), image.bytes.size());
        return Error::success();
      });
    if (!err && !safetensorsPath.empty())
      err = writeSafetensors(safetensorsPath, plan, image.bytes);
    if (err)
      err = makeError(what + ": " + toString(std::move(err)));
  } else {
    sendTensors(tensors, comm);
  }
  MPI_Comm_free(&comm);
  return agree(std::move(err));
}

/// Rank 0: keeps the two newest step-<S> directories of `dir`.
void pruneCheckpoints(StringRef dir, size_t nameLength) {
  std::vector<std::string> steps;
  std::error_code ec;
  for (sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    StringRef n = sys::path::filename(it->path());
    if (n.starts_with("step-") && n.size() == nameLength)
      steps.push_back(it->path());
  }
  llvm::sort(steps);
  for (size_t i = 0; i + 2 < steps.size(); ++i)
    (void)sys::fs::remove_directories(steps[i]);
}

} // namespace

bool zb::runner::agree(Error err) {
  int rank = zbrt_rank(), size = zbrt_world_size();
  std::string message;
  if (err)
    message = toString(std::move(err));
  int mine = message.empty() ? size : rank, first = size;
  watched::allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD,
                     "the other ranks' outcome (all-reduce)");
  if (first == size)
    return true;
  if (rank == first) {
    std::fflush(stdout);
    std::fprintf(stderr, "zb-run: rank %d: %s\n", rank, message.c_str());
    std::fflush(stderr);
  }
  return false;
}

namespace {
/// The lock file zbrt_fatal removes (the kernel releases the lock itself).
std::string fatalLockFile;
void removeLockFileOnFatal() {
  if (!fatalLockFile.empty())
    (void)::unlink(fatalLockFile.c_str());
}
} // namespace

zb::runner::CheckpointDirLock::~CheckpointDirLock() {
  if (!lock)
    return;
  zbrt_set_fatal_cleanup(nullptr);
  fatalLockFile.clear();
}

bool zb::runner::lockCheckpointDir(StringRef dir, CheckpointDirLock &held) {
  Error err = Error::success();
  if (zbrt_rank() == 0) {
    auto taken = zb::support::DirectoryLock::acquire(dir, "zb-run");
    if (!taken) {
      err = makeError("--checkpoint: " + toString(taken.takeError()));
    } else {
      held.lock = std::move(*taken);
      fatalLockFile = held.lock->lockFile();
      zbrt_set_fatal_cleanup(removeLockFileOnFatal);
      if (!held.lock->note().empty()) {
        std::fflush(stdout);
        std::fprintf(stderr, "zb-run: note: %s\n", held.lock->note().c_str());
        std::fflush(stderr);
      }
    }
  }
  return agree(std::move(err));
}

bool zb::runner::checkPipelinesAgree(const RankProgram &rp,
                                     int64_t stepsDone) {
  const Layout &l = layout();
  if (l.dataParallel == 1)
    return true;
  zbrt_cuda_synchronize();
  std::string digests;
  for (const auto *tensors : {&rp.params, &rp.adamM, &rp.adamV})
    for (const auto &[index, buf] : *tensors)
      digests += zb::support::xxh3Hex(
          StringRef(buf.bytes(), (size_t)buf.size() * sizeof(float)));
  uint64_t mine = 0;
  StringRef(zb::support::xxh3Hex(digests)).getAsInteger(16, mine);
  uint64_t low = 0, high = 0;
  const char *what = "the other pipelines' parameter checksums (all-reduce)";
  watched::allreduce(&mine, &low, 1, MPI_UINT64_T, MPI_MIN, l.groupComm, what);
  watched::allreduce(&mine, &high, 1, MPI_UINT64_T, MPI_MAX, l.groupComm,
                     what);
  Error err = Error::success();
  if (low != high && l.pipeline == 0)
    err = makeError(formatv("after step {0} the parameters of rank {1} "
                            "differ between the {2} data-parallel pipelines "
                            "(XXH3 {3:x-16} .. {4:x-16}): their gradients were "
                            "not all-reduced alike",
                            stepsDone, l.stageRank, l.dataParallel, low, high));
  return agree(std::move(err));
}

bool zb::runner::saveFinalParams(const RankProgram &rp, const Plan &plan,
                               StringRef path) {
  bool saved = isSafetensorsPath(path)
                   ? saveTensors(rp.params, plan, "", path, "--save-params")
                   : saveTensors(rp.params, plan, path, "", "--save-params");
  if (!saved)
    return false;
  // PATH.xxh3: the checksum of the file as written (read back); none for
  // a device or FIFO written in place (/dev/null).
  Error err = Error::success();
  if (zbrt_rank() == 0 && sys::fs::is_regular_file(path)) {
    Expected<std::string> sum = zb::support::fileChecksum(path);
    err = sum ? zb::support::writeChecksumFile(path, *sum) : sum.takeError();
    if (err)
      err = makeError("--save-params: " + toString(std::move(err)));
  }
  return agree(std::move(err));
}

bool zb::runner::writeCheckpoint(const RankProgram &rp, const Plan &plan,
                               StringRef dir, const CheckpointInfo &info) {
  long long pid = (long long)getpid();
  watched::bcast(&pid, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD,
                 "rank 0's word to save a checkpoint (broadcast)");
  const std::string name = checkpointDirName(info.step);
  const std::string final = (dir + "/" + name).str();
  const std::string tmp = final + ".tmp." + std::to_string(pid);
  Error made = Error::success();
  if (zbrt_rank() == 0)
    if (std::error_code ec = sys::fs::create_directories(tmp))
      made = makeError("--checkpoint: cannot create '" + tmp +
                       "': " + ec.message());
  if (!agree(std::move(made)))
    return false;
  auto file = [&](StringRef f) { return tmp + "/" + f.str(); };
  // A write that failed (a full disk) leaves no temporary directory behind
  // to fill the disk further; the previous checkpoints are kept.
  auto abandon = [&] {
    if (zbrt_rank() == 0)
      (void)sys::fs::remove_directories(tmp);
    return false;
  };
  if (!saveTensors(rp.params, plan, file("params.bin"),
                   file("model.safetensors"), "--checkpoint"))
    return abandon();
  if (info.optimizer == zb::Optimizer::AdamW &&
      (!saveTensors(rp.adamM, plan, file("adam_m.bin"), "", "--checkpoint") ||
       !saveTensors(rp.adamV, plan, file("adam_v.bin"), "", "--checkpoint")))
    return abandon();
  Error done = Error::success();
  if (zbrt_rank() == 0) {
    std::string why;
    // The checksums of the files as written (read back), for --resume.
    CheckpointInfo withSums = info;
    for (const char *name :
         {"params.bin", "model.safetensors", "adam_m.bin", "adam_v.bin"}) {
      if (!sys::fs::exists(file(name)))
        continue;
      Expected<std::string> sum = fileChecksum(file(name));
      if (!sum) {
        why = toString(sum.takeError());
        break;
      }
      withSums.checksums[name] = *sum;
    }
    if (why.empty())
      if (Error e = zb::support::writeFileAtomically(file("checkpoint.json"),
                                        [&](raw_ostream &os) {
                                          os << checkpointJSON(withSums);
                                          return Error::success();
                                        }))
        why = toString(std::move(e));
    std::error_code ec;
    if (why.empty() && sys::fs::exists(final))
      ec = sys::fs::remove_directories(final);
    if (why.empty() && !ec)
      ec = sys::fs::rename(tmp, final);
    if (why.empty() && ec)
      why = ec.message();
    if (!why.empty()) {
      (void)sys::fs::remove_directories(tmp);
      done = makeError("--checkpoint: writing '" + final + "' failed: " + why +
                       " (the previous checkpoints are kept)");
    } else {
      pruneCheckpoints(dir, name.size());
    }
  }
  return agree(std::move(done));
}

std::vector<double> zb::runner::gradientNorms(const RankProgram &rp,
                                            const Plan &plan) {
  std::vector<double> sq(plan.params.size(), 0.0), total(plan.params.size());
  const double scale = 1.0 / (double)rp.globalMicrobatches();
  for (auto &[index, g] : rp.grads) {
    if (plan.params[index].rank != rp.rank)
      continue;
    double s = 0;
    for (int64_t i = 0; i < g.size(); ++i) {
      double v = (double)g.data()[i] * scale;
      s += v * v;
    }
    sq[index] = s;
  }
  watched::reduce(sq.data(), total.data(), (int)sq.size(), MPI_DOUBLE,
                  MPI_SUM, 0, layout().pipelineComm,
                  "the other ranks' gradient norms (reduce)");
  for (double &t : total)
    t = std::sqrt(t);
  return total;
}
