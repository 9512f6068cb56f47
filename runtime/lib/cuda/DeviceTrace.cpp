//===- DeviceTrace.cpp - zb runtime: the trace's device timeline ----------===//

#include "DeviceTrace.h"

#include "../Internal.h"

#include <map>
#include <utility>

using namespace zbrt;
using namespace zbrt::cuda;

extern "C" const unsigned char zbrt_trace_fatbin[];
extern "C" const size_t zbrt_trace_fatbin_size;

namespace {
/// Slots at the start (an origin and 2 marks per action: 2047 actions).
constexpr size_t kInitialSlots = 4096;
} // namespace

void DeviceTrace::start(StepGraph::LaunchFn launchFn) {
  launch = std::move(launchFn);
  if (zbrt_trace_fatbin_size == 0)
    detail::fatalf("libzbrt was built without the CUDA toolkit (nvcc): it has "
                   "no trace kernels for the GPU; rebuild zb with the toolkit");
  const Driver &d = driver();
  Handle module = nullptr;
  check(d.cuModuleLoadData(&module, zbrt_trace_fatbin),
        "cuModuleLoadData (trace kernels)");
  check(d.cuModuleGetFunction(&kernel, module, "zbrt_timestamp_kernel"),
        "cuModuleGetFunction");
}

void DeviceTrace::stamp(int slot) {
  unsigned long long *buffer = slots;
  void *params[] = {&buffer, &slot};
  launch({kernel, {1, 1, 1}, {1, 1, 1}, 0, params});
}

void DeviceTrace::beginStep() {
  marks.clear();
  if (!slots || overflow) {
    const Driver &d = driver();
    // The previous buffer's last use was waited for (resolve).
    if (slots)
      check(d.cuMemFree(reinterpret_cast<CUdeviceptr>(slots)), "cuMemFree");
    capacity = slots ? 2 * capacity : kInitialSlots;
    CUdeviceptr p = 0;
    check(d.cuMemAllocManaged(&p, capacity * sizeof *slots, kMemAttachGlobal),
          "cuMemAllocManaged", capacity * sizeof *slots);
    slots = reinterpret_cast<unsigned long long *>(p);
    overflow = false;
  }
  begun = true;
  stamp(0);
}

void DeviceTrace::mark(size_t index, bool end) {
  if (!begun)
    return;
  if (marks.size() + 1 >= capacity) {
    overflow = true;
    return;
  }
  marks.push_back({index, end});
  stamp((int)marks.size());
}

std::vector<DeviceTime> DeviceTrace::resolve() {
  std::vector<DeviceTime> result;
  if (!begun)
    return result;
  begun = false;
  std::map<size_t, std::pair<double, double>> times;
  const unsigned long long origin = slots[0];
  for (size_t k = 0; k < marks.size(); ++k) {
    const Mark &m = marks[k];
    // The difference first: the timer's values exceed a double's precision.
    double us = (double)(long long)(slots[k + 1] - origin) * 1e-3;
    auto &t = times.try_emplace(m.index, -1.0, -1.0).first->second;
    (m.end ? t.second : t.first) = us;
  }
  for (auto &[index, t] : times)
    if (t.first >= 0 && t.second >= 0)
      result.push_back({index, t.first, t.second});
  marks.clear();
  return result;
}
