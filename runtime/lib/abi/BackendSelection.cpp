//===- BackendSelection.cpp - zb runtime: which backend runs --------------===//
//
// The one place that chooses the backend: the CPU backend from the start,
// the CUDA backend from zbrt_cuda_start to zbrt_finalize; and where the
// memory pool's blocks come from (host, CUDA managed or device memory).
//
//===----------------------------------------------------------------------===//

#include "BackendSelection.h"

#include "../Internal.h"
#include "../cpu/CpuBackend.h"
#include "../cuda/CudaBackend.h"

#include <memory>

using namespace zbrt;

namespace {

struct Selection {
  /// The CUDA backend while it runs, and after zbrt_finalize for its
  /// counters.
  std::unique_ptr<cuda::CudaBackend> cuda;
  Backend *active = nullptr;
  MemoryPlacement memory = MemoryPlacement::Host;
};

Selection &selection() {
  // Leaked on purpose: entry points may run from static destructors.
  static Selection *s = new Selection;
  return *s;
}

} // namespace

Backend &zbrt::backend() {
  Selection &s = selection();
  return s.active ? *s.active : cpu::cpuBackend();
}

void zbrt::initBackends() { cpu::configureBlasThreads(); }

void zbrt::startCudaBackend(int32_t flags) {
  Selection &s = selection();
  if (s.active)
    detail::fatalf("zbrt_cuda_start: the CUDA backend is already running");
  s.cuda = std::make_unique<cuda::CudaBackend>(flags);
  s.active = s.cuda.get();
}

MemoryPlacement zbrt::memoryPlacement() { return selection().memory; }

void zbrt::useCudaMemory(bool poolOnDevice) {
  selection().memory = poolOnDevice ? MemoryPlacement::CudaPoolOnDevice
                                    : MemoryPlacement::CudaManaged;
}

bool zbrt::cudaBackendStarted() { return selection().active != nullptr; }

void zbrt::cudaBackendStats(ZbrtCudaStats &out) {
  const Selection &s = selection();
  out = s.cuda ? s.cuda->stats() : ZbrtCudaStats{};
}

void zbrt::finalizeBackends() {
  Selection &s = selection();
  if (s.active) {
    s.active->finalize();
    s.active = nullptr;
    return;
  }
  cpu::cpuBackend().finalize();
}
