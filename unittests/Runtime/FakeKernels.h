//===- FakeKernels.h - the stand-in's no-op kernels -------------*- C++ -*-===//
//
// Part of libzb_fake_cuda.so (FakeCuda.cpp): with ZB_FAKE_CUDA_NOOP_KERNELS=1
// the stand-in loads any fatbin (a `zb-compile --target cuda` plan's kernels)
// and runs each launch as a no-op after checking its pointer arguments as
// compute-sanitizer would (FakeKernels.cpp's file comment).
//
//===----------------------------------------------------------------------===//
#ifndef ZB_UNITTESTS_RUNTIME_FAKEKERNELS_H
#define ZB_UNITTESTS_RUNTIME_FAKEKERNELS_H

#include <cstddef>
#include <utility>
#include <vector>

namespace zbfake {

/// Whether `p` lies inside a live device or managed allocation
/// (FakeCuda.cpp).
bool insideAllocation(const void *p);

/// ZB_FAKE_CUDA_NOOP_KERNELS is set and not 0.
bool noopKernels();
/// A module of no-op kernels for the fatbin at `blob` (its image stays
/// where it is: pointers into it are accepted as its globals).
void *loadNoopModule(const void *blob);
bool isNoopModule(const void *module);
/// The no-op kernel `name` of a module from loadNoopModule (any name).
void *noopFunction(void *module, const char *name);
/// Checks the parameters of `function` (from noopFunction) as the file
/// comment of FakeKernels.cpp says: 0, or 700 (CUDA_ERROR_ILLEGAL_ADDRESS)
/// with the stand-in's message on stderr.
int launchNoop(const void *function, void **params);

/// cuFuncGetParamInfo of a function from noopFunction: 0 with parameter
/// `index`'s offset and size, 1 (CUDA_ERROR_INVALID_VALUE) past the last
/// one, 801 when the image has no parameter records.
int noopParamInfo(const void *function, size_t index, size_t *offset,
                  size_t *size);
/// The kernel name of a function from noopFunction.
const char *noopName(const void *function);
/// The (offset, size) of every parameter of kernel `name` in the fatbin at
/// `blob` (libzbrt's own kernels); empty when it has no records.
std::vector<std::pair<size_t, size_t>> kernelParams(const void *blob,
                                                    const char *name);

} // namespace zbfake

#endif // ZB_UNITTESTS_RUNTIME_FAKEKERNELS_H
