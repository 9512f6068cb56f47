//===- IO/SVG.cpp - SVG Gantt charts --------------------------------------===//
//
// writeSVG: the paper's figure style (zb/Schedule/IO.h).
//
//===----------------------------------------------------------------------===//

#include "zb/Schedule/IO.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <vector>

using namespace zb::sched;

/// The optimizer sync drawn over a two-iteration chart: the step (orange),
/// the partial-state messages (red arrows), the full state (purple, dashed),
/// the validation (black bar) or the all-reduce (red band).
/// \p pitch: the distance between two ranks' rows (rowH, plus the
/// all-reduce lane with data parallelism).
static void writeSyncSVG(llvm::raw_ostream &os, const OptimizerSyncTiming &sync,
                         double left, double top, double rowH, double pitch,
                         double scale) {
  int p = sync.ranks.size();
  auto x = [&](double t) { return left + t * scale; };
  auto arrow = [&](int from, double sent, int to, double arrives,
                   const char *colour, const char *dash, llvm::StringRef what) {
    double y1 = top + from * pitch + (to > from ? rowH - 2 : 2);
    double y2 = top + to * pitch + (to > from ? 2 : rowH - 2);
    os << llvm::formatv("<line x1=\"{0:F2}\" y1=\"{1}\" x2=\"{2:F2}\" "
                        "y2=\"{3}\" stroke=\"{4}\" stroke-width=\"1.2\"{5} "
                        "marker-end=\"url(#arrow)\"><title>{6}: rank {7} "
                        "-> rank {8}, sent {9:F3}, arrives {10:F3}</title>"
                        "</line>\n",
                        x(sent), y1, x(arrives), y2, colour, dash, what, from,
                        to, sent, arrives);
  };
  for (int r = 0; r < p; ++r) {
    const RankSync &s = sync.ranks[r];
    double y = top + r * pitch;
    if (sync.mode == OptimizerSync::AllReduce && s.stateIn > s.passesEnd)
      os << llvm::formatv("<rect x=\"{0:F2}\" y=\"{1}\" width=\"{2:F2}\" "
                          "height=\"{3}\" fill=\"#f4a6a6\"><title>all-reduce "
                          "[{4:F3}, {5:F3}]</title></rect>\n",
                          x(s.passesEnd), y + rowH * 0.35,
                          (s.stateIn - s.passesEnd) * scale, rowH * 0.3,
                          s.passesEnd, s.stateIn);
    os << llvm::formatv("<rect x=\"{0:F2}\" y=\"{1}\" width=\"{2:F2}\" "
                        "height=\"{3}\" fill=\"#f0a030\" stroke=\"#333\" "
                        "stroke-width=\"0.5\"><title>optimizer step{4} "
                        "[{5:F3}, {6:F3}]</title></rect>\n",
                        x(s.stepStart), y + 1,
                        std::max(3.0, (s.stepEnd - s.stepStart) * scale),
                        rowH - 2,
                        sync.mode == OptimizerSync::PostValidation ? " (eager)"
                                                                   : "",
                        s.stepStart, s.stepEnd);
  }
  if (sync.mode != OptimizerSync::PostValidation)
    return;
  for (int r = 0; r + 1 < p; ++r)
    arrow(r, sync.ranks[r].stateOut, r + 1, sync.ranks[r + 1].stateIn,
          "#c0392b", "", "partial state");
  for (int r = 0; r + 1 < p; ++r)
    arrow(p - 1, sync.ranks[p - 1].stepStart, r, sync.ranks[r].fullArrives,
          "#7d3c98", " stroke-dasharray=\"3,2\"", "full state");
  for (int r = 0; r < p; ++r) {
    const RankSync &s = sync.ranks[r];
    double at = validationTime(sync, r);
    os << llvm::formatv("<rect x=\"{0:F2}\" y=\"{1}\" width=\"2\" "
                        "height=\"{2}\" fill=\"#000\"><title>validate before "
                        "action {3} of the next iteration ({4} forward(s) "
                        "redone on a rollback)</title></rect>\n",
                        x(at) - 1, top + r * pitch - 2, rowH + 2,
                        s.validateBefore, s.forwardsBeforeValidation);
  }
}

/// The overlapped all-reduces (Appendix A), one bar per bucket, on a lane
/// under each rank's row.
static void writeDataParallelSVG(llvm::raw_ostream &os,
                                 const DataParallelTiming &dp, double left,
                                 double top, double rowH, double laneH,
                                 double pitch, double scale) {
  // With buckets (Appendix A) one bar per bucket, titled by it.
  bool bucketed = dp.model.bucketed();
  for (size_t r = 0; r < dp.overlapped.ranks.size(); ++r) {
    double y = top + r * pitch + rowH;
    for (const StageAllReduce &a : dp.overlapped.ranks[r].allReduces) {
      if (a.duration <= 0)
        continue;
      std::string what = llvm::formatv("stage {0}", a.stage).str();
      if (bucketed)
        what += llvm::formatv(" bucket {0}", a.bucket).str();
      os << llvm::formatv("<rect x=\"{0:F2}\" y=\"{1}\" width=\"{2:F2}\" "
                          "height=\"{3}\" fill=\"#d98cb3\" stroke=\"#333\" "
                          "stroke-width=\"0.5\"><title>all-reduce of "
                          "{4} [{5:F3}, {6:F3}], {7} bytes, ready {8:F3}"
                          "</title></rect>\n",
                          left + a.start * scale, y, a.duration * scale,
                          laneH - 2, what, a.start, a.end,
                          llvm::format("%.0f", a.bytes), a.ready);
      if (a.duration * scale >= 7)
        os << llvm::formatv("<text x=\"{0:F2}\" y=\"{1}\" font-size=\"8\" "
                            "text-anchor=\"middle\">{2}</text>\n",
                            left + (a.start + a.duration / 2) * scale,
                            y + laneH * 0.7, a.stage);
    }
  }
}

void zb::sched::writeSVG(llvm::raw_ostream &os, const Problem &problem,
                         const Schedule &schedule, const SimResult &sim,
                         const OptimizerSyncTiming *sync,
                         const DataParallelTiming *dp) {
  const double width = 1400, rowH = 24, left = 70, top = 40, legendH = 30;
  // With data parallelism each rank gets a lane for its all-reduces.
  const double laneH = dp ? 12 : 0, pitch = rowH + laneH;
  int p = sim.timeline.size();
  double span = std::max(sync ? sync->second.makespan : sim.makespan, 1e-9);
  if (dp)
    span = std::max(span, dp->overlapped.makespan);
  double scale = (width - left - 10) / span;
  double height = top + p * pitch + legendH + 10;
  // Colours in the spirit of the paper's figures: F blue, B teal, W green.
  auto fill = [&](const Action &a) -> const char * {
    bool second = problem.numChunks > 1 &&
                  a.stage >= problem.numRanks; // later chunks darker
    switch (a.kind) {
    case ActionKind::F:
      return second ? "#5b8fd6" : "#9ec5f4";
    case ActionKind::B:
      return second ? "#3aa8a0" : "#8fe0d9";
    case ActionKind::W:
      return second ? "#4f9a45" : "#a6dc9c";
    }
    return "#ccc";
  };
  os << llvm::formatv("<svg xmlns=\"http://www.w3.org/2000/svg\" "
                      "width=\"{0}\" height=\"{1}\" font-family=\"sans-serif\" "
                      "font-size=\"10\">\n",
                      width, height);
  if (sync)
    os << "<defs><marker id=\"arrow\" viewBox=\"0 0 6 6\" refX=\"6\" refY=\"3\" "
        "markerWidth=\"5\" markerHeight=\"5\" orient=\"auto\"><path d=\"M0,0 "
        "L6,3 L0,6 z\"/></marker></defs>\n";
  std::string syncTitle;
  if (sync)
    syncTitle = llvm::formatv("; optimizer sync {0}: steady-state iteration "
                              "{1:F3} ms, bubble rate {2:F4}",
                              optimizerSyncName(sync->mode), sync->period,
                              sync->bubbleRate)
                    .str();
  if (dp)
    syncTitle += llvm::formatv("; D={0}: step {1:F3} with the all-reduce "
                               "overlapped, bubble rate {2:F4}",
                               dp->model.numReplicas, dp->overlapped.stepTime,
                               dp->overlapped.bubbleRate)
                     .str();
  os << llvm::formatv(
      "<text x=\"{0}\" y=\"20\" font-size=\"13\">{1}: p={2} "
      "m={3}{4}, bubble rate {5:F4}, cost {6:F3}, peak "
      "memory {7}{8}</text>\n",
      left, schedule.name, problem.numRanks, problem.numMicrobatches,
      problem.numChunks > 1 ? llvm::formatv(" V={0}", problem.numChunks).str()
                            : "",
      sim.bubbleRate, sim.cost,
      sim.peakMemory.empty()
          ? 0.0
          : *std::max_element(sim.peakMemory.begin(), sim.peakMemory.end()),
      syncTitle);
  auto boxes = [&](const SimResult &iteration, int r, double y,
                   const char *opacity) {
    const std::vector<TimedAction> &line = iteration.timeline[r];
    // An overlapped F&B pair (Schedule::fbPairs, fb-overlap > 0): an F and
    // the B after it with the same span, drawn as the upper and lower half
    // of one box.
    auto shared = [&](size_t i) {
      return i + 1 < line.size() && line[i].action.kind == ActionKind::F &&
             line[i + 1].action.kind == ActionKind::B &&
             line[i].start == line[i + 1].start &&
             line[i].end == line[i + 1].end && line[i].end > line[i].start;
    };
    for (size_t i = 0; i < line.size(); ++i) {
      const TimedAction &t = line[i];
      const bool upper = shared(i), lower = i > 0 && shared(i - 1);
      const double h = upper || lower ? (rowH - 2) / 2.0 : rowH - 2;
      const double y0 = y + 1 + (lower ? h : 0);
      double x = left + t.start * scale, w = (t.end - t.start) * scale;
      os << llvm::formatv("<rect x=\"{0:F2}\" y=\"{1}\" width=\"{2:F2}\" "
                          "height=\"{3}\" fill=\"{4}\" stroke=\"#333\" "
                          "stroke-width=\"0.5\"{10}><title>{5}{6} stage {7} "
                          "[{8:F3}, {9:F3}]{11}</title></rect>\n",
                          x, y0, w, h, fill(t.action), kindName(t.action.kind),
                          t.action.microbatch, t.action.stage, t.start, t.end,
                          opacity,
                          upper || lower ? " (overlapped F&amp;B)" : "");
      if (w >= 7)
        os << llvm::formatv("<text x=\"{0:F2}\" y=\"{1}\" "
                            "text-anchor=\"middle\">{2}</text>\n",
                            x + w / 2,
                            upper || lower ? y0 + h * 0.8 : y + rowH * 0.65,
                            t.action.microbatch);
    }
  };
  for (int r = 0; r < p; ++r) {
    double y = top + r * pitch;
    os << llvm::formatv("<text x=\"5\" y=\"{0}\">rank {1}</text>\n",
                        y + rowH * 0.65, r);
    // Idle time: the grey background shows through.
    os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"{2}\" "
                        "height=\"{3}\" fill=\"#e6e6e6\"/>\n",
                        left, y + 1, span * scale, rowH - 2);
    if (sync) {
      boxes(sync->first, r, y, "");
      boxes(sync->second, r, y, " fill-opacity=\"0.5\"");
    } else {
      boxes(sim, r, y, "");
    }
  }
  if (sync)
    writeSyncSVG(os, *sync, left, top, rowH, pitch, scale);
  if (dp)
    writeDataParallelSVG(os, *dp, left, top, rowH, laneH, pitch, scale);
  double ly = top + p * pitch + 12;
  std::vector<const char *> names = {"F (forward)", "B (input gradient)",
                                     "W (weight gradient)", "idle"};
  std::vector<const char *> colours = {"#9ec5f4", "#8fe0d9", "#a6dc9c",
                                       "#e6e6e6"};
  if (sync) {
    names.push_back("optimizer step");
    colours.push_back("#f0a030");
  }
  if (dp) {
    names.push_back("gradient all-reduce");
    colours.push_back("#d98cb3");
  }
  for (size_t k = 0; k < names.size(); ++k) {
    double x = left + k * 170;
    os << llvm::formatv("<rect x=\"{0}\" y=\"{1}\" width=\"14\" "
                        "height=\"12\" fill=\"{2}\" stroke=\"#333\" "
                        "stroke-width=\"0.5\"/><text x=\"{3}\" y=\"{4}\">{5}"
                        "</text>\n",
                        x, ly, colours[k], x + 18, ly + 10, names[k]);
  }
  if (sync && sync->mode == OptimizerSync::PostValidation)
    os << llvm::formatv("<text x=\"{0}\" y=\"{1}\">red: partial state, "
                        "purple: full state, black bar: validation; the next "
                        "iteration is pale</text>\n",
                        left + names.size() * 170, ly + 10);
  os << "</svg>\n";
}
