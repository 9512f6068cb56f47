//===- IO/CSV.cpp - torch.distributed.pipelining CSV ----------------------===//
//
// writeCSV and readCSV: PyTorch's _dump_csv formats (zb/Schedule/IO.h).
//
//===----------------------------------------------------------------------===//

#include "zb/Schedule/IO.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace zb::sched;

/// "<stage><F|I|W|B><microbatch>", or "" for the W of a fused backward.
static std::string computeCell(const Schedule &schedule, const Action &a) {
  char type = 'F';
  switch (a.kind) {
  case ActionKind::F:
    type = 'F';
    break;
  case ActionKind::B:
    type = schedule.fusedBackward ? 'B' : 'I';
    break;
  case ActionKind::W:
    if (schedule.fusedBackward)
      return "";
    type = 'W';
    break;
  }
  return llvm::formatv("{0}{1}{2}", a.stage, type, a.microbatch).str();
}

void zb::sched::writeCSV(llvm::raw_ostream &os, const Schedule &schedule,
                         bool withCommunication) {
  auto row = [&](llvm::ArrayRef<std::string> cells) {
    bool first = true;
    for (const std::string &c : cells) {
      if (c.empty())
        continue;
      os << (first ? "" : ",") << c;
      first = false;
    }
    os << "\n";
  };
  if (!withCommunication) {
    for (const auto &list : schedule.perRank) {
      std::vector<std::string> cells;
      for (const Action &a : list)
        cells.push_back(computeCell(schedule, a));
      row(cells);
    }
    return;
  }
  // PyTorch's names: SEND_F / SEND_B carry the sending stage, RECV_F /
  // RECV_B the receiving one (the next stage for an activation, the
  // previous one for a gradient).
  for (const auto &ops : communicationProgram(schedule)) {
    std::vector<std::string> cells;
    for (const CommOp &op : ops) {
      const Action &a = op.action;
      switch (op.kind) {
      case CommOp::Kind::Compute:
        cells.push_back(computeCell(schedule, a));
        break;
      case CommOp::Kind::Send:
        cells.push_back(llvm::formatv("{0}{1}{2}", a.stage,
                                      op.isGradient() ? "SEND_B" : "SEND_F",
                                      a.microbatch)
                            .str());
        break;
      case CommOp::Kind::Recv:
        cells.push_back(
            llvm::formatv("{0}{1}{2}",
                          op.isGradient() ? a.stage - 1 : a.stage + 1,
                          op.isGradient() ? "RECV_B" : "RECV_F", a.microbatch)
                .str());
        break;
      }
    }
    row(cells);
  }
}

namespace {
/// A cell as error messages quote it: at most 40 characters.
std::string quoteCell(llvm::StringRef cell) {
  return cell.size() <= 40 ? cell.str() : (cell.take_front(40) + "...").str();
}

/// PyTorch's actions beside the compute passes (torch.distributed.pipelining
/// _ComputationType, torch 2.15): communication, the waits on sends, and FSDP
/// and gradient-reduction steps, which zb derives from the schedule itself;
/// read as no-ops.
bool isNonComputeAction(llvm::StringRef type) {
  return llvm::is_contained({"UNSHARD", "RESHARD", "SEND_F", "RECV_F", "SEND_B",
                             "RECV_B", "WAIT_SEND_F", "WAIT_SEND_B",
                             "REDUCE_GRAD", "WAIT_REDUCE_GRAD"},
                            type);
}

/// "(0F1;3B0)OVERLAP_F_B" (DualPipeV) runs its sub-actions in order; every
/// other cell of a CSV row is one action. Appends the row's actions to
/// \p actions and, for every OVERLAP_F_B group of exactly two sub-actions,
/// the index of its first in \p actions to \p groups; an error names a
/// group of another type.
llvm::Error splitRowActions(size_t row, llvm::StringRef line,
                            llvm::SmallVectorImpl<llvm::StringRef> &actions,
                            llvm::SmallVectorImpl<size_t> &groups) {
  llvm::SmallVector<llvm::StringRef> cells;
  line.trim().split(cells, ',');
  for (llvm::StringRef cell : cells) {
    cell = cell.trim();
    if (cell.empty())
      continue;
    if (cell.starts_with("(") && cell.contains(")")) {
      auto [inner, type] = cell.drop_front().split(')');
      if (type.trim() != "OVERLAP_F_B")
        return llvm::createStringError(
            llvm::formatv("CSV row {0}: action '{1}' groups actions under "
                          "'{2}'; only (..;..)OVERLAP_F_B is supported",
                          row, quoteCell(cell), quoteCell(type))
                .str());
      llvm::SmallVector<llvm::StringRef> subs;
      inner.split(subs, ';');
      if (subs.size() == 2)
        groups.push_back(actions.size());
      for (llvm::StringRef sub : subs)
        actions.push_back(sub.trim());
      continue;
    }
    actions.push_back(cell);
  }
  return llvm::Error::success();
}

/// What readCSV has read so far: the rank (row) of every stage seen, and
/// whether full (B) or split (I/W) backward actions occurred.
struct CSVStages {
  std::vector<int> stageRank; ///< -1: stage not seen yet
  int maxStage = -1;
  bool sawFull = false, sawSplit = false;
};

/// Parses one action "<stage><type><microbatch>" of CSV row \p row (the
/// stages of rank \p row) and appends its compute passes to \p list
/// (PyTorch's non-compute actions add nothing). Errors name the cell.
llvm::Error readCSVAction(size_t row, llvm::StringRef cell,
                          std::vector<Action> &list, CSVStages &stages) {
  size_t pos = cell.find_first_not_of("0123456789");
  unsigned stage;
  if (pos == 0 || pos == llvm::StringRef::npos ||
      cell.substr(0, pos).getAsInteger(10, stage))
    return llvm::createStringError(
        llvm::formatv("CSV row {0}: cannot parse action '{1}' (expected "
                      "<stage><F|I|W|B><microbatch>, e.g. 0F3)",
                      row, quoteCell(cell))
            .str());
  llvm::StringRef rest = cell.substr(pos);
  size_t digits = rest.find_first_of("0123456789");
  llvm::StringRef type = rest.substr(0, digits);
  if (isNonComputeAction(type))
    return llvm::Error::success();
  unsigned mb;
  if (type.size() != 1 || digits == llvm::StringRef::npos ||
      rest.substr(digits).getAsInteger(10, mb))
    return llvm::createStringError(
        llvm::formatv("CSV row {0}: action '{1}' has type '{2}'; the "
                      "compute actions F, I, W, B and PyTorch's UNSHARD, "
                      "RESHARD, SEND_F, RECV_F, SEND_B, RECV_B, "
                      "WAIT_SEND_F, WAIT_SEND_B, REDUCE_GRAD, "
                      "WAIT_REDUCE_GRAD and (..;..)OVERLAP_F_B are "
                      "supported",
                      row, quoteCell(cell), quoteCell(type))
            .str());
  if (stage >= (unsigned)(kMaxRanks * kMaxChunks) ||
      mb >= (unsigned)kMaxMicrobatches)
    return llvm::createStringError(
        llvm::formatv("CSV row {0}: action '{1}': stage {2} or "
                      "microbatch {3} is beyond zb's limits ({4} stages, "
                      "{5} microbatches)",
                      row, quoteCell(cell), stage, mb, kMaxRanks * kMaxChunks,
                      kMaxMicrobatches)
            .str());
  std::vector<int> &stageRank = stages.stageRank;
  if (stage >= stageRank.size())
    stageRank.resize(stage + 1, -1);
  if (stageRank[stage] >= 0 && stageRank[stage] != (int)row)
    return llvm::createStringError(
        llvm::formatv("CSV row {0}: stage {1} already appears on row {2}", row,
                      stage, stageRank[stage])
            .str());
  stageRank[stage] = row;
  stages.maxStage = std::max<int>(stages.maxStage, stage);
  switch (type[0]) {
  case 'F':
    list.push_back({ActionKind::F, (int)stage, (int)mb});
    break;
  case 'I':
    stages.sawSplit = true;
    list.push_back({ActionKind::B, (int)stage, (int)mb});
    break;
  case 'W':
    stages.sawSplit = true;
    list.push_back({ActionKind::W, (int)stage, (int)mb});
    break;
  case 'B':
    stages.sawFull = true;
    list.push_back({ActionKind::B, (int)stage, (int)mb});
    list.push_back({ActionKind::W, (int)stage, (int)mb});
    break;
  default:
    return llvm::createStringError(
        llvm::formatv("CSV row {0}: action '{1}' has type '{2}'; only "
                      "compute actions F, I, W and B are supported",
                      row, cell, type)
            .str());
  }
  return llvm::Error::success();
}
} // namespace

llvm::Expected<Schedule> zb::sched::readCSV(llvm::StringRef text,
                                            int numRanks) {
  Schedule s;
  s.name = "csv";
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n');
  while (!lines.empty() && lines.back().trim().empty())
    lines.pop_back();
  CSVStages stages;
  for (size_t row = 0; row < lines.size(); ++row) {
    auto &list = s.perRank.emplace_back();
    auto &pairs = s.fbPairs.emplace_back();
    llvm::SmallVector<llvm::StringRef> actions;
    llvm::SmallVector<size_t> groups;
    if (llvm::Error e = splitRowActions(row, lines[row], actions, groups))
      return std::move(e);
    for (size_t k = 0, g = 0; k < actions.size(); ++k) {
      size_t before = list.size();
      if (llvm::Error e = readCSVAction(row, actions[k], list, stages))
        return std::move(e);
      // An OVERLAP_F_B group "(xFi;yBj)" (or yIj) is the overlapped F&B pair
      // of the F at `before` and the B after it (Schedule::fbPairs); a group
      // in another order or of the same microbatch is read unmarked.
      if (g < groups.size() && groups[g] == k) {
        ++g;
        if (list.size() == before + 1 && k + 1 < actions.size()) {
          size_t fAt = before;
          if (llvm::Error e = readCSVAction(row, actions[++k], list, stages))
            return std::move(e);
          if (list.size() > fAt + 1 && list[fAt].kind == ActionKind::F &&
              list[fAt + 1].kind == ActionKind::B &&
              list[fAt].microbatch != list[fAt + 1].microbatch)
            pairs.push_back(static_cast<int>(fAt));
        }
      }
    }
  }
  // A full backward B is B directly followed by its W; mixed with split
  // I/W actions (PyTorch's ZB schedules), the gradient of a full B is sent
  // after its B as for I (the schedule is not fused).
  s.fusedBackward = stages.sawFull && !stages.sawSplit;
  if (numRanks > 0)
    s.perRank.resize(std::max<size_t>(numRanks, s.perRank.size()));
  s.fbPairs.resize(s.perRank.size());
  if (!s.hasFBPairs())
    s.fbPairs.clear();
  for (int st = 0; st <= stages.maxStage; ++st) {
    if (stages.stageRank[st] < 0)
      return llvm::createStringError(
          llvm::formatv("CSV: stage {0} never appears", st).str());
    s.stageToRank.push_back(stages.stageRank[st]);
  }
  s.costConvention = CostConvention::StageSpan;
  return s;
}
