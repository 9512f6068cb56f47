//===- StepGraph.cpp - zb runtime: a step as CUDA graphs ------------------===//

#include "StepGraph.h"

#include <cstring>
#include <utility>


using namespace zbrt;
using namespace zbrt::cuda;

namespace {

constexpr CUresult kInvalidValue = 1; // CUDA_ERROR_INVALID_VALUE
/// After this many divergences the graphs stay off for the run.
constexpr int64_t kMaxDivergences = 3;

bool sameGemm(const GemmCall &x, const GemmCall &y) {
  const Gemm &a = x.gemm, &b = y.gemm;
  return a.a == b.a && a.b == b.b && a.c == b.c && a.M == b.M && a.N == b.N &&
         a.K == b.K && a.transA == b.transA && a.transB == b.transB &&
         std::memcmp(&a.alpha, &b.alpha, sizeof a.alpha) == 0 &&
         std::memcmp(&a.beta, &b.beta, sizeof a.beta) == 0 &&
         a.lda == b.lda && a.ldb == b.ldb && a.ldc == b.ldc &&
         x.batched == y.batched && x.strideA == y.strideA &&
         x.strideB == y.strideB && x.strideC == y.strideC &&
         x.batch == y.batch && x.bf16 == y.bf16;
}

} // namespace

void StepGraph::start(Handle computeStream, const std::string &whyOff,
                      LaunchFn launch, GemmFn gemm) {
  stream = computeStream;
  launchNow = std::move(launch);
  gemmNow = std::move(gemm);
  if (!whyOff.empty())
    return turnOff(whyOff);
  if (!hasGraphs(driver()))
    return turnOff("the CUDA driver lacks the graph API or "
                   "cuFuncGetParamInfo (CUDA 12.4)");
  mode = Mode::Eager;
  stateText = "on";
}

void StepGraph::turnOff(const std::string &why) {
  for (auto &entry : variants)
    dropGraphs(&entry.second);
  variants.clear();
  v = nullptr;
  mode = Mode::Off;
  stateText = "off: " + why;
}

void StepGraph::dropGraphs(Variant *variant) {
  if (!variant)
    variant = v;
  if (capturing) {
    Handle graph = nullptr;
    driver().cuStreamEndCapture(stream, &graph);
    if (graph)
      driver().cuGraphDestroy(graph);
    capturing = false;
  }
  if (!variant)
    return;
  for (Handle exec : variant->segments)
    if (exec)
      check(driver().cuGraphExecDestroy(exec), "cuGraphExecDestroy");
  variant->segments.clear();
  variant->tape.clear();
}

void StepGraph::beginStep() {
  if (mode == Mode::Off)
    return;
  // A step that began without ending (an error path) left nothing usable.
  if (mode == Mode::Capture)
    dropGraphs();
  if (!variants.count(nextKey) && variants.size() == kMaxVariants)
    return turnOff("more than " + std::to_string(kMaxVariants) +
                   " step variants");
  v = &variants[nextKey];
  mode = v->next;
  cursor = segmentStart = segment = 0;
  if (mode == Mode::Capture) {
    dropGraphs();
    ++captures;
  } else if (mode == Mode::Replay) {
    ++replays;
  }
}

void StepGraph::endStep() {
  if (mode == Mode::Off)
    return;
  if (mode == Mode::Capture || mode == Mode::Replay)
    segmentEnd(/*final=*/true);
  if (mode == Mode::Capture)
    v->next = Mode::Replay;
  else if (mode == Mode::Eager && v)
    v->next = Mode::Capture; // after the warm-up step or a divergence
  if (mode != Mode::Off)
    mode = Mode::Eager; // between steps (the optimizer) nothing is taken
}

const std::vector<std::pair<size_t, size_t>> *
StepGraph::layout(Handle function) {
  auto it = layouts.find(function);
  if (it != layouts.end())
    return &it->second;
  std::vector<std::pair<size_t, size_t>> params;
  const Driver &d = driver();
  for (size_t i = 0;; ++i) {
    size_t offset = 0, size = 0;
    CUresult r = d.cuFuncGetParamInfo(function, i, &offset, &size);
    if (r == kInvalidValue)
      break; // past the last parameter
    if (r != kSuccess)
      return nullptr;
    params.emplace_back(offset, size);
  }
  return &layouts.emplace(function, std::move(params)).first->second;
}

bool StepGraph::matches(const Entry &e, const KernelLaunch &k,
                        const std::vector<std::pair<size_t, size_t>> &params) {
  if (e.kind != Entry::Kernel || e.launch.function != k.function ||
      e.launch.sharedBytes != k.sharedBytes ||
      std::memcmp(e.launch.grid, k.grid, sizeof k.grid) != 0 ||
      std::memcmp(e.launch.block, k.block, sizeof k.block) != 0)
    return false;
  size_t at = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    if (std::memcmp(e.bytes.data() + at, k.params[i], params[i].second) != 0)
      return false;
    at += params[i].second;
  }
  return true;
}

void StepGraph::record(Entry e) {
  if (!capturing) {
    check(driver().cuStreamBeginCapture(stream, kCaptureModeRelaxed),
          "cuStreamBeginCapture");
    capturing = true;
  }
  v->tape.push_back(std::move(e));
}

bool StepGraph::takeKernel(const KernelLaunch &k) {
  if (mode != Mode::Capture && mode != Mode::Replay)
    return false;
  const auto *params = layout(k.function);
  if (!params) {
    // Cannot compare this kernel's arguments: never replay it.
    if (mode == Mode::Replay)
      diverge();
    turnOff("cuFuncGetParamInfo cannot tell a kernel's parameters");
    return false;
  }
  if (mode == Mode::Replay) {
    if (cursor < v->tape.size() && matches(v->tape[cursor], k, *params)) {
      ++cursor;
      return true;
    }
    diverge();
    return false;
  }
  Entry e;
  e.kind = Entry::Kernel;
  e.launch = k;
  e.launch.params = nullptr;
  for (size_t i = 0; i < params->size(); ++i) {
    const auto *p = static_cast<const unsigned char *>(k.params[i]);
    e.bytes.insert(e.bytes.end(), p, p + (*params)[i].second);
  }
  record(std::move(e));
  return false;
}

bool StepGraph::takeGemm(const GemmCall &g) {
  if (mode == Mode::Replay) {
    if (cursor < v->tape.size() && v->tape[cursor].kind == Entry::Gemm &&
        sameGemm(v->tape[cursor].gemm, g)) {
      ++cursor;
      return true;
    }
    diverge();
    return false;
  }
  if (mode != Mode::Capture)
    return false;
  Entry e;
  e.kind = Entry::Gemm;
  e.gemm = g;
  record(std::move(e));
  return false;
}

void StepGraph::boundary() {
  if (mode == Mode::Capture || mode == Mode::Replay)
    segmentEnd(/*final=*/false);
}

void StepGraph::segmentEnd(bool final) {
  const Driver &d = driver();
  if (mode == Mode::Replay) {
    if (cursor >= v->tape.size() || v->tape[cursor].kind != Entry::Boundary ||
        v->tape[cursor].final != final)
      return diverge();
    if (Handle exec = v->segments[segment])
      check(d.cuGraphLaunch(exec, stream), "cuGraphLaunch");
    ++cursor;
    ++segment;
    segmentStart = cursor;
    return;
  }
  Handle exec = nullptr;
  if (capturing) {
    Handle graph = nullptr;
    capturing = false;
    check(d.cuStreamEndCapture(stream, &graph), "cuStreamEndCapture");
    check(d.cuGraphInstantiateWithFlags(&exec, graph, 0),
          "cuGraphInstantiateWithFlags");
    check(d.cuGraphDestroy(graph), "cuGraphDestroy");
    // The captured work has not run yet: it runs now, at its place.
    check(d.cuGraphLaunch(exec, stream), "cuGraphLaunch");
  }
  v->segments.push_back(exec);
  Entry e;
  e.kind = Entry::Boundary;
  e.final = final;
  v->tape.push_back(std::move(e));
}

void StepGraph::issue(const Entry &e) {
  if (e.kind == Entry::Gemm) {
    gemmNow(e.gemm);
    return;
  }
  const auto &params = layouts.at(e.launch.function);
  std::vector<void *> pointers;
  size_t at = 0;
  for (const auto &param : params) {
    pointers.push_back(const_cast<unsigned char *>(e.bytes.data() + at));
    at += param.second;
  }
  KernelLaunch k = e.launch;
  k.params = pointers.data();
  launchNow(k);
}

void StepGraph::diverge() {

  // What matched of this segment was asked for and not yet issued.
  for (size_t i = segmentStart; i < cursor; ++i)
    issue(v->tape[i]);
  ++divergences;
  dropGraphs();
  mode = Mode::Eager;
  v->next = Mode::Capture;
  if (divergences >= kMaxDivergences)
    turnOff("the step's launches changed from step to step (" +
            std::to_string(divergences) + " divergences)");
}
