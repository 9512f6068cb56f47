//===- FakeGraph.cpp - the stand-in's CUDA graphs -------------------------===//
//
// Stream capture and graphs of libzb_fake_cuda.so, with a GPU's rules:
//   - cuStreamBeginCapture_v2 puts a stream in capture: the launches, GEMMs,
//     copies, memsets and event records enqueued on it are recorded (their
//     arguments copied: a kernel's through its parameter layout) and do not
//     run; cuStreamEndCapture returns the recorded graph;
//   - a query or synchronisation of a capturing stream, or a wait on it,
//     is refused with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates
//     the capture (cuStreamEndCapture: CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
//   - cuGraphInstantiateWithFlags copies the graph; cuGraphLaunch runs its
//     nodes in capture order behind the stream's earlier work;
//   - cuFuncGetParamInfo reads the kernel's parameter records from its
//     fatbin (FakeKernels.cpp), for the compiled plan's kernels and for
//     libzbrt's own.
// And the per-step launch digests that tests compare (FakeGraph.h).
//
//===----------------------------------------------------------------------===//

#include "FakeGraph.h"
#include "FakeCudaInternal.h"
#include "FakeKernels.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace {

using CUresult = int;
constexpr CUresult kOk = 0, kInvalidValue = 1, kNotSupported = 801;
constexpr CUresult kCaptureUnsupported = 900, kCaptureInvalidated = 901;
constexpr CUresult kLaunchFailed = 719; // CUDA_ERROR_LAUNCH_FAILED

struct Graph {
  std::vector<std::function<int()>> nodes;
};
struct Capture {
  Graph graph;
  bool invalidated = false;
};

struct RuntimeKernel {
  const void *blob;
  std::string name;
  std::vector<std::pair<size_t, size_t>> params;
  bool resolved = false;
};

std::mutex gMutex;
std::atomic<int> gStickyError{0};
// Never freed: streams and modules outlive static destructors.
std::map<const void *, Capture> &gCaptures = *new std::map<const void *, Capture>;
std::map<const void *, RuntimeKernel> &gRuntimeKernels =
    *new std::map<const void *, RuntimeKernel>;

constexpr uint64_t kBasis = 1469598103934665603ull; // FNV-1a offset basis
/// The step's digest, and its digest without pointer values.
uint64_t gDigest = kBasis, gShape = kBasis;
bool gDigesting = false;
std::vector<uint64_t> &gStepDigests = *new std::vector<uint64_t>;
std::vector<uint64_t> &gStepShapes = *new std::vector<uint64_t>;

void fnv(uint64_t &h, const void *bytes, size_t n) {
  const auto *p = static_cast<const unsigned char *>(bytes);
  for (size_t i = 0; i < n; ++i)
    h = (h ^ p[i]) * 1099511628211ull;
}

/// The layout of `function`: a compiled plan's kernel or libzbrt's.
CUresult paramInfo(void *function, size_t index, size_t *offset,
                   size_t *size) {
  {
    std::lock_guard<std::mutex> lock(gMutex);
    auto it = gRuntimeKernels.find(function);
    if (it != gRuntimeKernels.end()) {
      RuntimeKernel &k = it->second;
      if (!k.resolved) {
        k.params = zbfake::kernelParams(k.blob, k.name.c_str());
        k.resolved = true;
      }
      if (k.params.empty())
        return kNotSupported;
      if (index >= k.params.size())
        return kInvalidValue;
      *offset = k.params[index].first;
      *size = k.params[index].second;
      return kOk;
    }
  }
  if (!function)
    return kInvalidValue;
  return zbfake::noopParamInfo(function, index, offset, size);
}

} // namespace

int zbfake::stickyError() { return gStickyError; }

bool zbfake::capturing(const void *stream) {
  std::lock_guard<std::mutex> lock(gMutex);
  return stream && gCaptures.count(stream);
}

void zbfake::captureNode(const void *stream, std::function<int()> node) {
  std::lock_guard<std::mutex> lock(gMutex);
  gCaptures.at(stream).graph.nodes.push_back(std::move(node));
}

int zbfake::refuseWhileCapturing(const void *stream, const char *call) {
  std::lock_guard<std::mutex> lock(gMutex);
  auto it = gCaptures.find(stream);
  if (it == gCaptures.end())
    return kOk;
  it->second.invalidated = true;
  std::fprintf(stderr,
               "fake-cuda: %s on a stream under capture: not permitted "
               "(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)\n",
               call);
  return kCaptureUnsupported;
}

int zbfake::captureLaunch(const void *stream, void *function, void **params,
                          std::function<int(void **params)> launch) {
  std::vector<std::pair<size_t, size_t>> layout;
  for (size_t i = 0;; ++i) {
    size_t offset = 0, size = 0;
    CUresult r = paramInfo(function, i, &offset, &size);
    if (r == kInvalidValue)
      break;
    if (r != kOk)
      return r;
    layout.emplace_back(offset, size);
  }
  // The values now, as the driver copies them when the launch is captured.
  auto bytes = std::make_shared<std::vector<unsigned char>>();
  for (size_t i = 0; i < layout.size(); ++i) {
    const auto *p = static_cast<const unsigned char *>(params[i]);
    bytes->insert(bytes->end(), p, p + layout[i].second);
  }
  captureNode(stream, [bytes, layout, launch] {
    std::vector<void *> pointers;
    size_t at = 0;
    for (const auto &param : layout) {
      pointers.push_back(bytes->data() + at);
      at += param.second;
    }
    return launch(pointers.data());
  });
  return kOk;
}

void zbfake::registerRuntimeKernel(void *function, const void *blob,
                                   const char *name) {
  std::lock_guard<std::mutex> lock(gMutex);
  gRuntimeKernels.try_emplace(function, RuntimeKernel{blob, name, {}, false});
}

void zbfake::digest(const void *bytes, size_t n) {
  if (!gDigesting)
    return;
  fnv(gDigest, bytes, n);
  fnv(gShape, bytes, n);
}

void zbfake::digestPointer(const void *p) {
  if (!gDigesting)
    return;
  fnv(gDigest, &p, sizeof p);
  fnv(gShape, "P", 1);
}

void zbfake::digestKernel(void *function, const unsigned dims[6],
                          void **params) {
  if (!gDigesting)
    return;
  const char *name = zbfake::noopName(function);
  digest(name, std::strlen(name));
  digest(dims, 6 * sizeof *dims);
  for (size_t i = 0;; ++i) {
    size_t offset = 0, size = 0;
    if (paramInfo(function, i, &offset, &size) != kOk)
      break;
    uint64_t value = 0;
    if (size == 8)
      std::memcpy(&value, params[i], 8);
    // FakeKernels.cpp's rule for what is a pointer.
    if (size == 8 && value >= (1ull << 32) && value < (1ull << 47))
      digestPointer(reinterpret_cast<const void *>(value));
    else
      digest(params[i], size);
  }
}

void zbfake::digestStepBegins() {
  if (gDigesting) {
    gStepDigests.push_back(gDigest);
    gStepShapes.push_back(gShape);
  }
  gDigesting = true;
  gDigest = gShape = kBasis;
}

void zbfake::writeDigests(FILE *f) {
  auto line = [&](const char *name, const std::vector<uint64_t> &steps,
                  uint64_t last) {
    std::fprintf(f, "%s", name);
    for (uint64_t d : steps)
      std::fprintf(f, " %016llx", (unsigned long long)d);
    // The last step's digest runs to the end of the process.
    if (gDigesting)
      std::fprintf(f, " %016llx", (unsigned long long)last);
    std::fprintf(f, "\n");
  };
  line("step_digests", gStepDigests, gDigest);
  line("step_shapes", gStepShapes, gShape);
}

extern "C" {

CUresult cuFuncGetParamInfo(void *function, size_t index, size_t *offset,
                            size_t *size) {
  return paramInfo(function, index, offset, size);
}

CUresult cuStreamBeginCapture_v2(void *stream, int mode) {
  if (!stream || mode < 0 || mode > 2)
    return kInvalidValue;
  std::lock_guard<std::mutex> lock(gMutex);
  if (gCaptures.count(stream))
    return kInvalidValue; // already capturing
  gCaptures[stream];
  return kOk;
}

CUresult cuStreamEndCapture(void *stream, void **graph) {
  std::lock_guard<std::mutex> lock(gMutex);
  auto it = gCaptures.find(stream);
  if (it == gCaptures.end())
    return 904; // CUDA_ERROR_STREAM_CAPTURE_UNMATCHED
  bool invalidated = it->second.invalidated;
  auto *g = new Graph(std::move(it->second.graph));
  gCaptures.erase(it);
  if (invalidated) {
    delete g;
    *graph = nullptr;
    return kCaptureInvalidated;
  }
  *graph = g;
  return kOk;
}

CUresult cuGraphInstantiateWithFlags(void **exec, void *graph,
                                     unsigned long long) {
  if (!graph)
    return kInvalidValue;
  *exec = new Graph(*static_cast<Graph *>(graph));
  return kOk;
}

CUresult cuGraphLaunch(void *exec, void *stream) {
  if (!exec || zbfake::capturing(stream))
    return kInvalidValue;
  if (int sticky = zbfake::stickyError())
    return sticky;
  auto *g = static_cast<Graph *>(exec);
  zbfake::runOnStream(stream, [g, stream] {
    // Its memsets' writes are the launch stream's (noteWrite).
    zbfake::gLaunchingGraphOn = static_cast<zbfake::Stream *>(stream);
    struct Reset {
      ~Reset() { zbfake::gLaunchingGraphOn = nullptr; }
    } reset;
    for (size_t i = 0; i < g->nodes.size(); ++i) {
      if (int status = g->nodes[i]()) {
        // On a GPU the failure surfaces at the host's next synchronising
        // call as the context's sticky error; the rest of the graph does
        // not run.
        std::fprintf(stderr,
                     "fake-cuda: node %zu of %zu of a replayed CUDA graph "
                     "failed (status %d): the context's sticky error is now "
                     "CUDA_ERROR_LAUNCH_FAILED\n",
                     i + 1, g->nodes.size(), status);
        gStickyError = kLaunchFailed;
        return;
      }
    }
  });
  return kOk;
}

CUresult cuGraphExecDestroy(void *exec) {
  delete static_cast<Graph *>(exec);
  return kOk;
}

CUresult cuGraphDestroy(void *graph) {
  delete static_cast<Graph *>(graph);
  return kOk;
}

} // extern "C"
