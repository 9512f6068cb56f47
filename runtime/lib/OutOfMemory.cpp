//===- OutOfMemory.cpp - zb runtime: allocations that failed --------------===//
//
// Every way a rank can run out of memory ends the job with one line: which
// memory, how much was asked, what the rank holds, the limit, and what to
// change (issue 40). The host's limit is the address-space limit
// (RLIMIT_AS, `ulimit -v`), the usual way a job scheduler caps a process;
// without one, the machine itself (or vm.overcommit_memory) said no.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <exception>
#include <new>
#include <system_error>

using namespace zbrt;

std::string detail::formatBytes(uint64_t bytes) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = (double)bytes;
  int unit = 0;
  while (value >= 1024 && unit < 5) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  if (unit == 0)
    std::snprintf(text, sizeof text, "%" PRIu64 " B", bytes);
  else
    std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
  return text;
}

uint64_t detail::mappedBytes() {
  std::FILE *f = std::fopen("/proc/self/statm", "r");
  if (!f)
    return 0;
  unsigned long long pages = 0;
  int n = std::fscanf(f, "%llu", &pages);
  std::fclose(f);
  long pageSize = sysconf(_SC_PAGESIZE);
  return n == 1 && pageSize > 0 ? pages * (uint64_t)pageSize : 0;
}

namespace {

const char *kLessPerRank =
    "use less memory per rank (a smaller microbatch, more stages, or "
    "zb-compile --memory-limit so that the schedule keeps fewer "
    "microbatches in flight)";

void newHandler() {
  detail::fatalOutOfMemory(detail::MemoryKind::Host,
                           "a C++ allocation of the runner", 0, nullptr);
}

void terminateHandler() {
  // Only reached by an exception nobody caught: name it, then end the job
  // the way every other error does.
  std::string what = "an unexpected C++ exception";
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::system_error &err) {
      if (err.code() == std::errc::resource_unavailable_try_again)
        detail::fatalf("could not start a thread (%s): the limit on "
                       "processes and threads (ulimit -u) or on memory "
                       "(ulimit -v) is reached",
                       err.what());
      what = std::string("an unexpected C++ error: ") + err.what();
    } catch (const std::bad_alloc &) {
      detail::fatalOutOfMemory(detail::MemoryKind::Host,
                               "a C++ allocation of the runner", 0, nullptr);
    } catch (const std::exception &err) {
      what = std::string("an unexpected C++ exception: ") + err.what();
    } catch (...) {
    }
  }
  detail::fatalf("internal error: %s", what.c_str());
}

} // namespace

void detail::fatalOutOfMemory(MemoryKind kind, const char *what,
                              uint64_t bytes, const char *context) {
  const char *memory = kind == MemoryKind::Host     ? "host memory"
                       : kind == MemoryKind::Device ? "GPU memory"
                                                    : "CUDA managed memory";
  std::string line = std::string("out of ") + memory + ": " + what;
  if (bytes)
    line += " asked for " + formatBytes(bytes) + " (" +
            std::to_string(bytes) + " bytes)";
  else
    line += " failed";
  if (context && *context)
    line += std::string("; ") + context;
  if (kind == MemoryKind::Device) {
    line += std::string(": ") + kLessPerRank +
            ", or run fewer ranks on each GPU";
    fatal(line.c_str());
  }
  struct rlimit limit = {};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    line += "; the address-space limit (ulimit -v) is " +
            formatBytes(limit.rlim_cur);
    if (uint64_t mapped = detail::mappedBytes())
      line += ", " + formatBytes(mapped) + " of it mapped";
    line += std::string(": raise the limit, or ") + kLessPerRank;
  } else {
    line += std::string("; the machine has no more memory to give (no "
                        "address-space limit is set): ") +
            kLessPerRank + ", or run fewer ranks on this machine";
  }
  fatal(line.c_str());
}

void detail::installOutOfMemoryHandlers() {
  std::set_new_handler(newHandler);
  std::set_terminate(terminateHandler);
}
