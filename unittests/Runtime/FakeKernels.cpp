//===- FakeKernels.cpp - the stand-in's no-op kernels, checked ------------===//
//
// With ZB_FAKE_CUDA_NOOP_KERNELS=1, libzb_fake_cuda.so accepts
// cuModuleLoadData of any fatbin, resolves cuModuleGetFunction for any name
// and runs every cuLaunchKernel of such a module as a no-op, after checking
// its arguments as compute-sanitizer would: a parameter that holds a
// pointer must lie inside a live stand-in allocation (device or managed
// memory) or inside the loaded image (the module's globals), else the
// launch fails with CUDA_ERROR_ILLEGAL_ADDRESS (700) and
//   stand-in: kernel <name> argument #<i> (<ptr>) is not device memory
// on stderr. So `zb-run --backend cuda` of a `--target cuda` plan runs
// without a GPU: the losses are meaningless, the host's side (launches,
// driver calls, synchronisations) and the pointers the kernels get are real.
//
// Which parameters: the driver knows a kernel's parameter list from the
// cubin; so does the stand-in: it reads the EIATTR_KPARAM_INFO records of
// the section ".nv.info.<kernel>" of the first ELF image in the fatbin that
// has one (ordinal, offset and size of every parameter). A kernel without
// them (a PTX-only fatbin) is launched without checks.
//
// Which parameters hold pointers: the signature's types are not in the
// cubin, so every 8-byte parameter whose value lies in [2^32, 2^47) is taken
// for a pointer (MLIR passes each memref argument as allocated pointer,
// aligned pointer, offset, sizes..., strides...). Limits of that heuristic:
//   - an integer or double parameter whose value falls into that range is
//     checked as a pointer (a false alarm; an f64 like 1.0 is above 2^47,
//     offsets and sizes are far below 2^32);
//   - a pointer below 4 GiB (a non-PIE executable's data, MAP_32BIT) is not
//     checked; null and MLIR's 0xdeadbeef (the allocated pointer of a
//     memref.get_global) are not pointers;
//   - only the start of what a pointer addresses is checked, not the extent
//     the kernel reads through it (the stand-in does not run the kernel).
//
//===----------------------------------------------------------------------===//

#include "FakeKernels.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct Param {
  uint16_t offset = 0, size = 0;
};

struct NoopModule {
  uintptr_t begin = 0, end = 0; // the loaded image
  std::map<std::string, struct NoopFunction *> functions;
};

struct NoopFunction {
  std::string name;
  NoopModule *module = nullptr;
  /// By ordinal; empty when the image has no parameter records.
  std::vector<Param> params;
};

std::mutex gMutex;
// Never freed: modules are unloaded by global destructors.
std::vector<NoopModule *> &gModules = *new std::vector<NoopModule *>;

template <typename T> T read(const unsigned char *p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

constexpr uint8_t kFormatSval = 4, kFormatHval = 3, kFormatBval = 2,
                  kFormatFree = 1;
constexpr uint8_t kAttrKparamInfo = 0x17;

/// Reads the parameter records of `section` (an .nv.info.<kernel>).
std::vector<Param> readParams(const unsigned char *p, uint64_t size) {
  std::vector<Param> params;
  uint64_t at = 0;
  while (at + 2 <= size) {
    uint8_t format = p[at], attr = p[at + 1];
    if (format == kFormatSval) {
      if (at + 4 > size)
        break;
      uint16_t length = read<uint16_t>(p + at + 2);
      if (attr == kAttrKparamInfo && length >= 12 && at + 4 + 12 <= size) {
        const unsigned char *v = p + at + 4;
        uint16_t ordinal = read<uint16_t>(v + 4);
        Param param{read<uint16_t>(v + 6),
                    (uint16_t)((read<uint32_t>(v + 8) >> 18) & 0x3fff)};
        if (params.size() <= ordinal)
          params.resize(ordinal + 1);
        params[ordinal] = param;
      }
      at += 4 + length;
    } else if (format == kFormatHval) {
      at += 4;
    } else if (format == kFormatBval) {
      at += 3;
    } else if (format == kFormatFree) {
      // No value, padded to 4 bytes (nvcc's images: "01 35 00 00").
      at += 4;
    } else {
      break;
    }
  }
  return params;
}

/// The parameters of `kernel` from the first ELF image in [begin, end) with
/// an .nv.info.<kernel> section.
std::vector<Param> findParams(const unsigned char *begin,
                              const unsigned char *end,
                              const std::string &kernel) {
  const std::string wanted = ".nv.info." + kernel;
  static const unsigned char kMagic[4] = {0x7f, 'E', 'L', 'F'};
  for (const unsigned char *e = begin; e + 64 <= end; ++e) {
    if (std::memcmp(e, kMagic, 4) != 0 || e[4] != 2 /*ELFCLASS64*/)
      continue;
    uint64_t limit = end - e;
    uint64_t shoff = read<uint64_t>(e + 0x28);
    uint16_t entsize = read<uint16_t>(e + 0x3a),
             count = read<uint16_t>(e + 0x3c),
             strndx = read<uint16_t>(e + 0x3e);
    if (entsize < 64 || strndx >= count ||
        shoff + (uint64_t)count * entsize > limit)
      continue;
    auto section = [&](unsigned i) {
      return e + shoff + (uint64_t)i * entsize;
    };
    uint64_t strOff = read<uint64_t>(section(strndx) + 0x18);
    uint64_t strSize = read<uint64_t>(section(strndx) + 0x20);
    if (strOff + strSize > limit)
      continue;
    for (unsigned i = 0; i < count; ++i) {
      uint32_t nameOff = read<uint32_t>(section(i));
      uint64_t off = read<uint64_t>(section(i) + 0x18);
      uint64_t size = read<uint64_t>(section(i) + 0x20);
      if (nameOff >= strSize || off + size > limit)
        continue;
      const char *name = reinterpret_cast<const char *>(e + strOff + nameOff);
      if (strnlen(name, strSize - nameOff) == wanted.size() &&
          wanted.compare(0, wanted.size(), name, wanted.size()) == 0)
        return readParams(e + off, size);
    }
  }
  return {};
}

bool insideLoadedImage(uintptr_t p) {
  for (const NoopModule *m : gModules)
    if (p >= m->begin && p < m->end)
      return true;
  return false;
}

} // namespace

bool zbfake::noopKernels() {
  static const bool on = [] {
    const char *v = std::getenv("ZB_FAKE_CUDA_NOOP_KERNELS");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return on;
}

void *zbfake::loadNoopModule(const void *blob) {
  // A fatbin: 16-byte header whose second 8 bytes are the payload size.
  const auto *bytes = static_cast<const unsigned char *>(blob);
  auto *m = new NoopModule;
  m->begin = reinterpret_cast<uintptr_t>(bytes);
  m->end = m->begin + 16 + read<uint64_t>(bytes + 8);
  std::lock_guard<std::mutex> lock(gMutex);
  gModules.push_back(m);
  return m;
}

bool zbfake::isNoopModule(const void *module) {
  std::lock_guard<std::mutex> lock(gMutex);
  for (const NoopModule *m : gModules)
    if (m == module)
      return true;
  return false;
}

void *zbfake::noopFunction(void *module, const char *name) {
  auto *m = static_cast<NoopModule *>(module);
  std::lock_guard<std::mutex> lock(gMutex);
  NoopFunction *&f = m->functions[name];
  if (!f) {
    f = new NoopFunction{name, m, {}};
    f->params =
        findParams(reinterpret_cast<const unsigned char *>(m->begin),
                   reinterpret_cast<const unsigned char *>(m->end), name);
  }
  return f;
}

int zbfake::launchNoop(const void *function, void **params) {
  const auto *f = static_cast<const NoopFunction *>(function);
  for (size_t i = 0; i < f->params.size(); ++i) {
    if (f->params[i].size != 8)
      continue;
    uint64_t value = 0;
    std::memcpy(&value, params[i], 8);
    if (value < (1ull << 32) || value >= (1ull << 47))
      continue;
    const void *p = reinterpret_cast<const void *>(value);
    bool ok = insideAllocation(p);
    if (!ok) {
      std::lock_guard<std::mutex> lock(gMutex);
      ok = insideLoadedImage(value);
    }
    if (!ok) {
      std::fprintf(stderr,
                   "stand-in: kernel %s argument #%zu (%p) is not device "
                   "memory\n",
                   f->name.c_str(), i, p);
      return 700; // CUDA_ERROR_ILLEGAL_ADDRESS
    }
  }
  return 0;
}

int zbfake::noopParamInfo(const void *function, size_t index, size_t *offset,
                          size_t *size) {
  const auto *f = static_cast<const NoopFunction *>(function);
  if (f->params.empty())
    return 801; // no records (a PTX-only fatbin): the layout is unknown
  if (index >= f->params.size())
    return 1; // CUDA_ERROR_INVALID_VALUE: past the last parameter
  *offset = f->params[index].offset;
  *size = f->params[index].size;
  return 0;
}

const char *zbfake::noopName(const void *function) {
  return static_cast<const NoopFunction *>(function)->name.c_str();
}

std::vector<std::pair<size_t, size_t>>
zbfake::kernelParams(const void *blob, const char *name) {
  const auto *bytes = static_cast<const unsigned char *>(blob);
  std::vector<std::pair<size_t, size_t>> out;
  for (const Param &p : findParams(bytes, bytes + 16 + read<uint64_t>(bytes + 8),
                                   name))
    out.emplace_back(p.offset, p.size);
  return out;
}
