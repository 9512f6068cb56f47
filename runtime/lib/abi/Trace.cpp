//===- Trace.cpp - zb runtime: the ABI of the trace and validation --------===//
//
// zbrt_action_begin / zbrt_action_end record the action in the trace
// (TraceLog.h) and mark it on the active backend's timeline; the step's
// begin (zbrt::traceBeginStep, zbrt/Trace.h) clears the trace and starts
// the backend's timeline; and the optimizer's post-validation hook.
//
//===----------------------------------------------------------------------===//

#include "zbrt/Trace.h"
#include "zbrt/zbrt.h"

#include "../FaultInjection.h"
#include "../Internal.h"
#include "../TraceLog.h"
#include "BackendSelection.h"

#include <csignal>

using namespace zbrt;

void zbrt::traceBeginStep() {
  detail::traceReset();
  backend().traceBeginStep();
}

extern "C" void zbrt_action_begin(int32_t kind, int32_t stage,
                                  int32_t microbatch) {
  if (kind < 0 || kind > 2)
    detail::fatalf("zbrt_action_begin: unknown action kind %d (0 = F, 1 = B, "
                   "2 = W)",
                   kind);
  static long passes = 0;
  ++passes;
  if (faults().shouldKill(detail::rank(), passes))
    std::raise(SIGKILL);
  if (faults().shouldStop(detail::rank(), passes))
    std::raise(SIGSTOP);
  size_t index = detail::traceActionBegin(kind, stage, microbatch);
  if (index != detail::kNoTraceEvent)
    backend().traceMark(index, /*end=*/false);
}

extern "C" void zbrt_action_end(int32_t kind, int32_t stage,
                                int32_t microbatch) {
  size_t index = detail::traceActionEnd(kind, stage, microbatch);
  if (index != detail::kNoTraceEvent)
    backend().traceMark(index, /*end=*/true);
}

namespace {
/// The hook zb-run installed for one kind of call (one per hook type).
template <typename Fn> struct Hook {
  Fn fn = nullptr;
  void *context = nullptr;
};
template <typename Fn> Hook<Fn> &hookOf() {
  static Hook<Fn> h;
  return h;
}
} // namespace

extern "C" void zbrt_set_validate_hook(zbrt_validate_hook hook, void *context) {
  hookOf<zbrt_validate_hook>() = {hook, context};
}

extern "C" void zbrt_validate_optimizer(void) {
  const auto &h = hookOf<zbrt_validate_hook>();
  if (h.fn)
    h.fn(h.context);
}

extern "C" void zbrt_set_gradient_hook(zbrt_gradient_hook hook,
                                       void *context) {
  hookOf<zbrt_gradient_hook>() = {hook, context};
}

extern "C" void zbrt_gradients_ready(int32_t firstGradArg, int32_t count) {
  if (firstGradArg < 0 || count < 1)
    detail::fatalf("zbrt_gradients_ready: gradient arguments %d .. %d + %d - "
                   "1: expected a first argument >= 0 and a count >= 1",
                   firstGradArg, firstGradArg, count);
  const auto &h = hookOf<zbrt_gradient_hook>();
  if (h.fn)
    h.fn(h.context, firstGradArg, count);
}
