//===- DeviceTrace.cpp - zb runtime: the trace's device timeline ----------===//

#include "DeviceTrace.h"

#include <map>
#include <utility>

using namespace zbrt;
using namespace zbrt::cuda;

Handle DeviceTrace::timingEvent() {
  if (!freeEvents.empty()) {
    Handle e = freeEvents.back();
    freeEvents.pop_back();
    return e;
  }
  Handle e = nullptr;
  check(driver().cuEventCreate(&e, 0), "cuEventCreate");
  return e;
}

void DeviceTrace::beginStep(Handle stream) {
  for (const Mark &m : marks)
    freeEvents.push_back(m.event);
  marks.clear();
  if (!origin)
    origin = timingEvent();
  check(driver().cuEventRecord(origin, stream), "cuEventRecord");
}

void DeviceTrace::mark(size_t index, bool end, Handle stream) {
  if (!origin)
    return;
  Handle e = timingEvent();
  check(driver().cuEventRecord(e, stream), "cuEventRecord");
  marks.push_back({index, end, e});
}

std::vector<DeviceTime> DeviceTrace::resolve() {
  std::vector<DeviceTime> result;
  if (!origin)
    return result;
  std::map<size_t, std::pair<double, double>> times;
  for (const Mark &m : marks) {
    float ms = 0;
    check(driver().cuEventElapsedTime(&ms, origin, m.event),
          "cuEventElapsedTime");
    auto &t = times.try_emplace(m.index, -1.0, -1.0).first->second;
    (m.end ? t.second : t.first) = ms * 1e3;
    freeEvents.push_back(m.event);
  }
  for (auto &[index, t] : times)
    if (t.first >= 0 && t.second >= 0)
      result.push_back({index, t.first, t.second});
  marks.clear();
  freeEvents.push_back(origin);
  origin = nullptr;
  return result;
}
