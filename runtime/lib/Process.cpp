//===- Process.cpp - zb runtime: MPI process state and fatal errors -------===//
//
// Errors are fatal: "zb-run: rank R: <message>" on stderr, then MPI_Abort so
// that the other ranks do not wait forever. MPI errors (for example a peer
// that died) go through an error handler that does the same.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <mpi.h>

#include <atomic>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

using namespace zbrt;

namespace {

int32_t gRank = -1;
int32_t gWorldSize = 0;
bool gWeInitializedMPI = false;
int gTagUpperBound = INT_MAX;
double gCommTimeoutSeconds = 300;
int32_t gPipelineBase = 0;
int32_t gPipelineSize = 0; ///< 0: the whole world
MPI_Comm gPipelineComm = MPI_COMM_NULL;

void mpiErrorHandler(MPI_Comm *, int *code, ...) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(*code, text, &len);
  detail::fatalf("MPI error: %s (a peer rank may have failed)", text);
}

} // namespace

bool detail::mpiIsUp() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

int32_t detail::rank() { return gRank; }
int32_t detail::worldSize() { return gWorldSize; }
int32_t detail::tagUpperBound() { return gTagUpperBound; }
int32_t detail::pipelineBase() { return gPipelineBase; }
int32_t detail::pipelineSize() {
  return gPipelineSize > 0 ? gPipelineSize : gWorldSize;
}
int32_t detail::pipelineRank() {
  return gRank < 0 ? gRank : gRank - gPipelineBase;
}
void *detail::pipelineCommunicator() {
  static MPI_Comm world = MPI_COMM_WORLD;
  return gPipelineComm != MPI_COMM_NULL ? (void *)&gPipelineComm
                                        : (void *)&world;
}

int32_t detail::setPipeline(int32_t size) {
  if (gRank < 0)
    fatal("zbrt_set_pipeline: the runtime is not initialised (zbrt_init not "
          "called)");
  if (size < 1 || gWorldSize % size != 0)
    fatalf("zbrt_set_pipeline: pipelines of %d ranks do not divide the %d "
           "ranks of the job",
           size, gWorldSize);
  if (gPipelineComm != MPI_COMM_NULL)
    MPI_Comm_free(&gPipelineComm);
  gPipelineBase = gRank / size * size;
  gPipelineSize = size;
  MPI_Comm_split(MPI_COMM_WORLD, gRank / size, gRank % size, &gPipelineComm);
  return gRank - gPipelineBase;
}
double detail::commTimeoutSeconds() { return gCommTimeoutSeconds; }
void detail::setCommTimeoutSeconds(double seconds) {
  gCommTimeoutSeconds = seconds > 0 ? seconds : 0;
}

void detail::describeTag(int32_t tag, char *out, unsigned long cap) {
  if (tag < 0) {
    std::snprintf(out, cap, "tag %d", tag);
    return;
  }
  int32_t kind = tag % 2, stage = (tag / 2) % 1024, mb = tag / 2048;
  std::snprintf(out, cap, "tag %d (%s from stage %d, microbatch %d)", tag,
                kind == 0 ? "activation" : "gradient", stage, mb);
}

[[noreturn]] void detail::fatalf(const char *format, ...) {
  char message[2048];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  fatal(message);
}

namespace {
std::atomic<void (*)(void)> gFatalCleanup{nullptr};
} // namespace

void detail::setFatalCleanup(void (*cleanup)(void)) { gFatalCleanup = cleanup; }

[[noreturn]] void detail::fatal(const char *message) {
  if (gRank >= 0)
    std::fprintf(stderr, "zb-run: rank %d: %s\n", gRank, message);
  else
    std::fprintf(stderr, "zb-run: %s\n", message);
  std::fflush(stderr);
  std::fflush(stdout);
  if (void (*cleanup)(void) = gFatalCleanup.exchange(nullptr))
    cleanup();
  if (mpiIsUp() && gWorldSize > 1)
    MPI_Abort(MPI_COMM_WORLD, 1);
  // Alone (or without MPI) there is nobody to wake up: exit quietly.
  std::_Exit(1);
}

int32_t detail::initProcess(int *argc, char ***argv, int32_t *worldSize) {
  if (!mpiIsUp()) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized)
      fatal("zbrt_init: MPI was already finalised");
    if (MPI_Init(argc, argv) != MPI_SUCCESS)
      fatal("zbrt_init: MPI_Init failed");
    gWeInitializedMPI = true;
  }
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  gRank = rank;
  gWorldSize = size;
  installOutOfMemoryHandlers();

  MPI_Errhandler handler;
  MPI_Comm_create_errhandler(mpiErrorHandler, &handler);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, handler);
  MPI_Errhandler_free(&handler);

  void *ub = nullptr;
  int flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
  if (flag && ub)
    gTagUpperBound = *static_cast<int *>(ub);
  if (worldSize)
    *worldSize = size;
  return rank;
}

void detail::finalizeProcess() {
  if (mpiIsUp() && gPipelineComm != MPI_COMM_NULL)
    MPI_Comm_free(&gPipelineComm);
  if (mpiIsUp() && gWeInitializedMPI)
    MPI_Finalize();
}

int detail::localRank() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    return 0;
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                      &node);
  int local = 0;
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  return local;
}
