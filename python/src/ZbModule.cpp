//===- ZbModule.cpp - zb._zb: nanobind bindings ---------------------------===//
//
// The native half of the `zb` Python package: lib/Schedule (problems,
// schedules by name, simulation, verification, the JSON / CSV / trace / SVG
// formats) and lib/Driver's compile(). The Python half (python/zb/*.py)
// gives them keyword arguments, scalars-or-lists and pictures. Every C++
// error becomes a ValueError carrying the C++ message.
//
// Units: times in ms (or any consistent unit), memory in the unit of mem_b
// (bytes for compiled models).
//
//===----------------------------------------------------------------------===//

#include "zb/Driver/Driver.h"
#include "zb/Schedule/IO.h"
#include "zb/Schedule/Registry.h"
#include "zb/Schedule/Schedule.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/raw_ostream.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

namespace nb = nanobind;
using namespace nb::literals;
using namespace zb::sched;

namespace {

/// A C++ error as a Python ValueError with the C++ message.
[[noreturn]] void raise(llvm::Error e) {
  throw nb::value_error(llvm::toString(std::move(e)).c_str());
}
template <typename T> T take(llvm::Expected<T> v) {
  if (!v)
    raise(v.takeError());
  return std::move(*v);
}

char kindChar(ActionKind k) {
  return k == ActionKind::F ? 'F' : k == ActionKind::B ? 'B' : 'W';
}
ActionKind kindOf(const std::string &s) {
  if (s == "F")
    return ActionKind::F;
  if (s == "B")
    return ActionKind::B;
  if (s == "W")
    return ActionKind::W;
  throw nb::value_error(("action kind must be 'F', 'B' or 'W', got '" + s +
                         "'")
                            .c_str());
}

std::string jsonOf(const Problem &problem, const Schedule &schedule) {
  std::string text;
  llvm::raw_string_ostream os(text);
  writeJSON(os, problem, schedule, simulate(problem, schedule));
  return text;
}

/// zb-compile in-process: the options as zb-compile's flags; progress lines
/// are dropped unless `verbose`; diagnostics are collected and raised.
void compileModel(const zb::driver::CompileOptions &options, bool verbose) {
  std::string diagnostics;
  zb::driver::CompileCallbacks callbacks;
  if (verbose)
    callbacks.progress = [](llvm::StringRef line) {
      llvm::errs() << "[zb-compile] " << line << "\n";
    };
  callbacks.diagnostic = [&](mlir::Diagnostic &d) {
    llvm::raw_string_ostream os(diagnostics);
    zb::driver::printDiagnostic(d, os);
  };
  if (llvm::Error e = zb::driver::validateOptions(options))
    raise(std::move(e));
  bool failed;
  {
    nb::gil_scoped_release release;
    failed = mlir::failed(zb::driver::compile(options, callbacks));
  }
  if (failed) {
    while (!diagnostics.empty() && diagnostics.back() == '\n')
      diagnostics.pop_back();
    throw nb::value_error(diagnostics.empty() ? "zb-compile failed"
                                              : diagnostics.c_str());
  }
}

} // namespace

NB_MODULE(_zb, m) {
  m.doc() = "zb native bindings (lib/Schedule, lib/Driver); use the `zb` "
            "package, not this module";

  nb::class_<Problem>(m, "Problem",
                      "A scheduling problem: p ranks, m microbatches, V "
                      "chunks per rank; per-rank (or per-stage) T_F, T_B, "
                      "T_W, T_comm in ms and M_B, M_W in the memory unit")
      .def(nb::init<>())
      .def_rw("stages", &Problem::numRanks, "p: pipeline ranks")
      .def_rw("microbatches", &Problem::numMicrobatches, "m")
      .def_rw("virtual_stages", &Problem::numChunks, "V: chunks per rank")
      .def_rw("cost_f", &Problem::costF, "T_F per rank or stage, ms")
      .def_rw("cost_b", &Problem::costB, "T_B per rank or stage, ms")
      .def_rw("cost_w", &Problem::costW, "T_W per rank or stage, ms")
      .def_rw("cost_comm", &Problem::costComm, "T_comm, ms")
      .def_rw("mem_b", &Problem::memB, "M_B (memory unit)")
      .def_rw("mem_w", &Problem::memW, "M_W (memory unit)")
      .def_rw("memory_limit", &Problem::memoryLimit,
              "limit for every rank (0 = none)")
      .def_rw("memory_limits", &Problem::memoryLimits,
              "per-rank limits (empty: memory_limit)")
      .def_rw("fb_overlap", &Problem::fbOverlap,
              "alpha in [0, 1]: an overlapped F&B pair (Schedule.fb_pairs) "
              "takes max(T_F, T_B) + (1 - alpha) min(T_F, T_B) ms")
      .def("validate", [](const Problem &p) {
        if (llvm::Error e = validateProblem(p))
          raise(std::move(e));
      });

  nb::class_<Schedule>(m, "Schedule", "Per-rank orders of F/B/W passes")
      .def(nb::init<>())
      .def_rw("name", &Schedule::name)
      .def_rw("stage_to_rank", &Schedule::stageToRank)
      .def_rw("fused_backward", &Schedule::fusedBackward)
      .def_rw("directions", &Schedule::directions,
              "1, or 2 for a bidirectional pipeline (dualpipe): stages "
              "0..L-1 carry microbatches 0..m/2-1 down, stages L..2L-1 (the "
              "same model stages on mirrored ranks) the rest up")
      .def_rw("fb_pairs", &Schedule::fbPairs,
              "per rank: indices i of overlapped F&B pairs (actions i, an F, "
              "and i+1, a B of another microbatch, issued together: "
              "dualpipe, dualpipev, PyTorch's OVERLAP_F_B); empty: none")
      .def_prop_rw(
          "cost_convention",
          [](const Schedule &s) {
            return costConventionName(s.costConvention).str();
          },
          [](Schedule &s, const std::string &c) {
            std::optional<CostConvention> convention = parseCostConvention(c);
            if (!convention)
              throw nb::value_error(
                  "cost_convention must be 'makespan' or 'stage_span'");
            s.costConvention = *convention;
          })
      .def_prop_rw(
          "actions",
          [](const Schedule &s) {
            std::vector<std::vector<std::tuple<std::string, int, int>>> out;
            for (const auto &rank : s.perRank) {
              out.emplace_back();
              for (const Action &a : rank)
                out.back().emplace_back(std::string(1, kindChar(a.kind)),
                                        a.stage, a.microbatch);
            }
            return out;
          },
          [](Schedule &s,
             const std::vector<std::vector<std::tuple<std::string, int, int>>>
                 &actions) {
            s.perRank.clear();
            for (const auto &rank : actions) {
              s.perRank.emplace_back();
              for (const auto &[k, stage, mb] : rank)
                s.perRank.back().push_back({kindOf(k), stage, mb});
            }
          },
          "per rank: (kind 'F'|'B'|'W', stage, microbatch) in run order");

  nb::class_<SimResult>(m, "SimResult", "Simulated timing (ms)")
      .def_ro("makespan", &SimResult::makespan)
      .def_ro("stage_span", &SimResult::stageSpan)
      .def_ro("cost", &SimResult::cost)
      .def_ro("ideal_time", &SimResult::idealTime)
      .def_ro("bubble_rate", &SimResult::bubbleRate)
      .def_ro("peak_memory", &SimResult::peakMemory)
      .def_ro("rank_bubble_rate", &SimResult::rankBubbleRate)
      .def_ro("complete", &SimResult::complete)
      .def_prop_ro(
          "timeline",
          [](const SimResult &r) {
            std::vector<
                std::vector<std::tuple<std::string, int, int, double, double>>>
                out;
            for (const auto &rank : r.timeline) {
              out.emplace_back();
              for (const TimedAction &t : rank)
                out.back().emplace_back(
                    std::string(1, kindChar(t.action.kind)), t.action.stage,
                    t.action.microbatch, t.start, t.end);
            }
            return out;
          },
          "per rank: (kind, stage, microbatch, start ms, end ms)");

  nb::class_<IlpReport>(m, "IlpReport", "CBC's report for the ILP")
      .def_ro("status", &IlpReport::status)
      .def_ro("proven_optimal", &IlpReport::provenOptimal)
      .def_ro("objective", &IlpReport::objective)
      .def_ro("best_bound", &IlpReport::bestBound)
      .def_ro("gap", &IlpReport::gap)
      .def_ro("analytic_bound", &IlpReport::analyticBound)
      .def_ro("cbc_bound", &IlpReport::cbcBound)
      .def_ro("seconds", &IlpReport::seconds);

  m.def("schedule_names", [] {
    std::vector<std::string> out;
    for (llvm::StringRef n : scheduleNames())
      out.push_back(n.str());
    return out;
  });
  // 1 for an unknown name: build_schedule then reports it.
  m.def("default_chunks", [](const std::string &name) {
    llvm::Expected<ScheduleKind> kind = parseScheduleKind(name);
    if (!kind) {
      llvm::consumeError(kind.takeError());
      return 1;
    }
    return defaultChunks(*kind);
  });
  m.def(
      "build_schedule",
      [](const Problem &problem, const std::string &name, double timeLimit,
         bool localSearch, int evaluations, int threads, bool verbose) {
        BuildOptions options;
        options.timeLimitSeconds = timeLimit;
        options.localSearch = localSearch;
        options.searchEvaluations = evaluations;
        options.threads = threads;
        options.verbose = verbose;
        IlpReport report;
        llvm::Expected<Schedule> s = [&] {
          nb::gil_scoped_release release;
          return buildSchedule(problem, name, options, &report);
        }();
        Schedule out = take(std::move(s));
        std::optional<IlpReport> ilp;
        llvm::Expected<ScheduleKind> kind = parseScheduleKind(name);
        if (kind && *kind == ScheduleKind::Ilp)
          ilp = report;
        else if (!kind)
          llvm::consumeError(kind.takeError());
        return std::make_pair(out, ilp);
      },
      "problem"_a, "name"_a, "time_limit"_a = 60.0, "local_search"_a = false,
      "evaluations"_a = 4000, "threads"_a = 1, "verbose"_a = false);
  m.def("simulate", [](const Problem &problem, const Schedule &schedule) {
    return simulate(problem, schedule);
  });
  m.def("verify", [](const Problem &problem, const Schedule &schedule) {
    if (llvm::Error e = verify(problem, schedule))
      raise(std::move(e));
  });
  m.def("to_json", &jsonOf);
  m.def("from_json", [](const std::string &text) {
    Problem problem;
    Schedule schedule;
    if (llvm::Error e = readJSON(text, problem, schedule))
      raise(std::move(e));
    return std::make_pair(problem, schedule);
  });
  m.def("to_csv", [](const Schedule &schedule) {
    std::string text;
    llvm::raw_string_ostream os(text);
    writeCSV(os, schedule);
    return text;
  });
  m.def(
      "from_csv",
      [](const std::string &text, int ranks) {
        return take(readCSV(text, ranks));
      },
      "text"_a, "ranks"_a = 0);
  m.def("to_trace", [](const Problem &problem, const Schedule &schedule) {
    std::string text;
    llvm::raw_string_ostream os(text);
    writeTrace(os, schedule, simulate(problem, schedule));
    return text;
  });
  m.def("to_svg", [](const Problem &problem, const Schedule &schedule) {
    std::string text;
    llvm::raw_string_ostream os(text);
    writeSVG(os, problem, schedule, simulate(problem, schedule));
    return text;
  });
  m.def("to_text", [](const Problem &problem, const Schedule &schedule) {
    std::string text;
    llvm::raw_string_ostream os(text);
    writeText(os, problem, schedule, simulate(problem, schedule));
    return text;
  });

  m.def(
      "compile",
      [](const std::string &model, const std::string &output, int64_t stages,
         int64_t virtualStages, int64_t microbatches,
         const std::string &schedule, std::vector<double> memoryLimits,
         std::vector<std::string> dataArgs, const std::string &target,
         const std::string &optimizer, double lr,
         const std::string &data, const std::string &profile, int optLevel,
         unsigned jobs, bool verbose, const std::string &precision,
         int64_t dataParallel, int64_t dpBucketBytes, bool fuseAttention,
         bool fuseCrossEntropy, bool gpuAttentionKernel, bool gpuNormKernel,
         bool gpuAttentionTokenMajor) {
        zb::driver::CompileOptions o;
        o.inputFile = model;
        o.outputDir = output;
        o.numRanks = stages;
        o.virtualStages = virtualStages;
        o.microbatches = microbatches;
        o.memoryLimits = std::move(memoryLimits);
        o.dataArgs = std::move(dataArgs);
        if (llvm::Error error = zb::driver::parseTextOptions(
                o, target, optimizer,
                zb::sched::optimizerSyncName(o.optimizerSync), precision,
                schedule))
          raise(std::move(error));
        o.learningRate = lr;
        o.dataDir = data;
        o.profile = profile;
        o.optLevel = optLevel;
        o.jobs = jobs;
        o.dataParallel = dataParallel;
        o.dpBucketBytes = dpBucketBytes;
        o.fuseAttention = fuseAttention;
        o.fuseCrossEntropy = fuseCrossEntropy;
        o.cuda.attentionKernel = gpuAttentionKernel;
        o.cuda.normKernel = gpuNormKernel;
        o.cuda.attentionTokenMajor = gpuAttentionTokenMajor;
        compileModel(o, verbose);
      },
      "model"_a, "output"_a, "stages"_a, "virtual_stages"_a,
      "microbatches"_a, "schedule"_a, "memory_limits"_a, "data_args"_a,
      "target"_a,
      "optimizer"_a, "lr"_a, "data"_a, "profile"_a, "opt_level"_a, "jobs"_a,
      "verbose"_a, "precision"_a = "fp32", "data_parallel"_a = 1,
      "dp_bucket_bytes"_a = zb::driver::CompileOptions().dpBucketBytes,
      "fuse_attention"_a = zb::driver::CompileOptions().fuseAttention,
      "fuse_cross_entropy"_a =
          zb::driver::CompileOptions().fuseCrossEntropy,
      "gpu_attention_kernel"_a =
          zb::driver::CompileOptions().cuda.attentionKernel,
      "gpu_norm_kernel"_a = zb::driver::CompileOptions().cuda.normKernel,
      "gpu_attention_token_major"_a =
          zb::driver::CompileOptions().cuda.attentionTokenMajor);
}
