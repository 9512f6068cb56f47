//===- FakeGraph.h - the stand-in's CUDA graphs -----------------*- C++ -*-===//
//
// Part of libzb_fake_cuda.so (FakeCuda.cpp): stream capture and CUDA graphs
// as the driver has them (FakeGraph.cpp's file comment), and the launch
// digests that tests compare between steps.
//
//===----------------------------------------------------------------------===//
#ifndef ZB_UNITTESTS_RUNTIME_FAKEGRAPH_H
#define ZB_UNITTESTS_RUNTIME_FAKEGRAPH_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>

namespace zbfake {

/// Runs `work` behind `stream`'s deferred work (FakeCuda.cpp).
void runOnStream(void *stream, std::function<void()> work);
/// Whether `stream` is being captured (cuStreamBeginCapture).
bool capturing(const void *stream);
/// Records `node` into `stream`'s capture: it runs at every cuGraphLaunch
/// of the graph, in capture order, and returns its call's status (a
/// CUresult or cublasStatus_t; 0: success). A node that fails ends the
/// replay and leaves the context's sticky error (stickyError), as a kernel
/// that fails inside a graph does on a GPU.
void captureNode(const void *stream, std::function<int()> node);
/// The context's sticky error (CUDA_ERROR_LAUNCH_FAILED after a node of a
/// replayed graph failed), else 0: every later synchronising call, query,
/// launch and copy returns it, as the driver does.
int stickyError();
/// A call the driver refuses while `stream` is captured (a query, a
/// synchronisation, a wait on an outside event): the capture is
/// invalidated (cuStreamEndCapture then fails) and the call returns
/// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (900), as on a GPU.
int refuseWhileCapturing(const void *stream, const char *call);
/// cuLaunchKernel into `stream`'s capture: the parameters are copied with
/// the kernel's layout (cuFuncGetParamInfo); `launch` runs the copy.
int captureLaunch(const void *stream, void *function, void **params,
                  std::function<int(void **params)> launch);

/// libzbrt's own kernels: `function` is kernel `name` of the fatbin at
/// `blob` (its parameter layout comes from the fatbin's records).
void registerRuntimeKernel(void *function, const void *blob,
                           const char *name);

/// Launch digests (ZB_FAKE_CUDA_REPORT "step_digests"): a hash of what
/// each step ran, from the trace's origin mark (the timestamp kernel's slot
/// 0) to the next: the compiled plan's kernels (name, grid, block,
/// parameter bytes), the GEMMs (operands, sizes, scalars) and the trace's
/// marks, in the order they ran; not libzbrt's optimizer kernels (their
/// scalars change every step). Steps of one process that ran the same work
/// have the same digest.
/// "step_shapes" is the same without pointer values (a pointer counts as
/// one): comparable between processes.
void digest(const void *bytes, size_t n);
void digestPointer(const void *p);
/// Digests a launch of `function` (dims: grid then block) with its
/// parameter bytes (the kernel's layout).
void digestKernel(void *function, const unsigned dims[6], void **params);
void digestStepBegins();
void writeDigests(FILE *f);

} // namespace zbfake

#endif // ZB_UNITTESTS_RUNTIME_FAKEGRAPH_H
