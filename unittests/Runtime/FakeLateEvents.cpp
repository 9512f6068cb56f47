//===- FakeLateEvents.cpp - the stand-in's late event completion ----------===//
//
// ZB_FAKE_CUDA_LATE_EVENTS=N (FakeLateEvents.h): every N-th record is late
// for N queries, or until the host has seen a later record on its stream
// complete. Records are numbered per stream; the host's view of a stream is
// the newest record it has seen complete.
//
//===----------------------------------------------------------------------===//

#include "FakeLateEvents.h"

#include "FakeCudaInternal.h"

#include <map>
#include <mutex>

namespace {

struct Record {
  const void *stream;
  long seq;          // the record's number on its stream
  long queriesLeft;  // not-ready answers still to give; 0: not late
};

struct StreamView {
  long records = 0; // records so far
  long seen = 0;    // the newest record the host has seen complete
};

std::mutex gLateMutex;
std::map<const void *, Record> &gRecords = *new std::map<const void *, Record>;
std::map<const void *, StreamView> &gViews =
    *new std::map<const void *, StreamView>;
long gRecordCount = 0;

long lateEvery() {
  static const long n = zbfake::envLong("ZB_FAKE_CUDA_LATE_EVENTS", 0);
  return n > 0 ? n : 0;
}

} // namespace

void zbfake::lateRecorded(const void *event, const void *stream) {
  long n = lateEvery();
  if (!n)
    return;
  std::lock_guard<std::mutex> lock(gLateMutex);
  StreamView &v = gViews[stream];
  bool late = ++gRecordCount % n == 0;
  gRecords[event] = {stream, ++v.records, late ? n : 0};
}

bool zbfake::lateNotReady(const void *event) {
  if (!lateEvery())
    return false;
  std::lock_guard<std::mutex> lock(gLateMutex);
  auto it = gRecords.find(event);
  if (it == gRecords.end())
    return false;
  Record &r = it->second;
  StreamView &v = gViews[r.stream];
  if (r.queriesLeft > 0 && r.seq > v.seen) {
    --r.queriesLeft;
    return true;
  }
  // Seen complete: so is everything recorded before it on its stream.
  r.queriesLeft = 0;
  if (r.seq > v.seen)
    v.seen = r.seq;
  return false;
}

void zbfake::lateEventDone(const void *event) {
  if (!lateEvery())
    return;
  std::lock_guard<std::mutex> lock(gLateMutex);
  auto it = gRecords.find(event);
  if (it == gRecords.end())
    return;
  StreamView &v = gViews[it->second.stream];
  if (it->second.seq > v.seen)
    v.seen = it->second.seq;
  gRecords.erase(it);
}

void zbfake::lateStreamDone(const void *stream) {
  if (!lateEvery())
    return;
  std::lock_guard<std::mutex> lock(gLateMutex);
  StreamView &v = gViews[stream];
  v.seen = v.records;
}
