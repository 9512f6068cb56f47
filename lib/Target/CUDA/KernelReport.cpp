//===- KernelReport.cpp - the kernels of a CUDA rank program --------------===//
#include "zb/Target/CUDA/KernelReport.h"
#include "zb/Target/CUDA/DeviceMemory.h"
#include "zb/Dialect/ZB/IR/ZBAttributes.h"
#include "zbrt/Symbols.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <limits>
#include <map>

using namespace mlir;

namespace zb {

double GpuKernelLaunch::rooflineSeconds(const GpuSpec &gpu, bool tf32) const {
  bool tensorCores = kind == "gemm" || kind == "attention";
  double peak = tensorCores && bf16 ? gpu.peaks.bf16FlopsPerSecond
                 : kind == "gemm" && (tf32 || gpu.tf32Gemms)
                     ? gpu.peaks.tf32FlopsPerSecond
                     : gpu.peaks.fp32FlopsPerSecond;
  return std::max((bytesRead + bytesWritten) / gpu.peaks.memBytesPerSecond,
                  flops / peak);
}

namespace {

std::optional<int64_t> constantIndex(Value v) {
  if (auto c = v.getDefiningOp<arith::ConstantIndexOp>())
    return c.value();
  if (auto c = v.getDefiningOp<arith::ConstantIntOp>())
    return c.value();
  return std::nullopt;
}

/// A constant index, also one that `launch` passes to `kernel` (outlining
/// leaves constants defined outside the launch as kernel arguments).
std::optional<int64_t> kernelConstant(Value v, gpu::GPUFuncOp kernel,
                                      gpu::LaunchFuncOp launch) {
  if (auto arg = dyn_cast<BlockArgument>(v);
      arg && arg.getOwner() == &kernel.getBody().front() &&
      arg.getArgNumber() < launch.getKernelOperands().size())
    return constantIndex(launch.getKernelOperands()[arg.getArgNumber()]);
  return constantIndex(v);
}

/// Executions of `op` per thread from the scf.for loops around it inside
/// `kernel`; none when a loop has no constant trip count.
std::optional<double> tripCount(Operation *op, gpu::GPUFuncOp kernel,
                                gpu::LaunchFuncOp launch) {
  double n = 1;
  for (Operation *p = op->getParentOp(); p && p != kernel;
       p = p->getParentOp()) {
    auto loop = dyn_cast<scf::ForOp>(p);
    if (!loop)
      continue;
    std::optional<int64_t> ub = kernelConstant(loop.getUpperBound(), kernel, launch),
                           step = kernelConstant(loop.getStep(), kernel, launch);
    if (!ub || !step || *step <= 0)
      return std::nullopt;
    int64_t lb = kernelConstant(loop.getLowerBound(), kernel, launch).value_or(0);
    n *= static_cast<double>(std::max<int64_t>(0, (*ub - lb + *step - 1) /
                                                      *step));
  }
  return n;
}

/// Bytes that `access` (a load or store of a kernel argument) moves when
/// `threads` threads run the kernel: its executions (tripCount) x the bytes
/// of one access; infinity when a loop around it has no constant trip
/// count.
double accessBytes(Operation *access, gpu::GPUFuncOp kernel,
                   gpu::LaunchFuncOp launch, double threads) {
  std::optional<double> trips = tripCount(access, kernel, launch);
  if (!trips)
    return std::numeric_limits<double>::infinity();
  double n = threads * *trips;
  Type value = isa<memref::StoreOp, vector::StoreOp>(access)
                   ? access->getOperand(0).getType()
                   : access->getResult(0).getType();
  double elements = 1;
  if (auto v = dyn_cast<VectorType>(value)) {
    elements = v.getNumElements();
    value = v.getElementType();
  }
  if (!value.isIntOrIndexOrFloat())
    return std::numeric_limits<double>::infinity();
  unsigned bits = value.isIndex() ? 64 : value.getIntOrFloatBitWidth();
  return n * elements * bits / 8.0;
}

double bytesOf(Type type) {
  auto m = dyn_cast<MemRefType>(type);
  if (!m || !m.hasStaticShape() || !m.getElementType().isIntOrIndexOrFloat())
    return 0;
  unsigned bits = m.getElementType().isIndex()
                      ? 64
                      : m.getElementType().getIntOrFloatBitWidth();
  return static_cast<double>(m.getNumElements()) * ((bits + 7) / 8);
}

/// Bytes of the constant tensors `kernel` loads from device globals
/// (zb-gpu-sink-constants moved them in): each loaded view counted once,
/// as it was when the host passed it as an operand.
double constantBytesRead(mlir::gpu::GPUFuncOp kernel) {
  SymbolTableCollection symbols;
  llvm::DenseSet<Value> seen;
  double bytes = 0;
  kernel.walk([&](Operation *op) {
    Value memref;
    if (auto load = dyn_cast<memref::LoadOp>(op))
      memref = load.getMemRef();
    else if (auto load = dyn_cast<vector::LoadOp>(op))
      memref = load.getBase();
    else
      return;
    if (zb::cuda::constantGlobalRoot(memref, symbols) &&
        seen.insert(memref).second)
      bytes += bytesOf(memref.getType());
  });
  return bytes;
}

bool isFlop(Operation *op) {
  if (op->getNumResults() != 1 || !isa<FloatType>(op->getResult(0).getType()))
    return false;
  if (isa<arith::ConstantOp, arith::SelectOp, arith::BitcastOp,
          arith::SIToFPOp, arith::UIToFPOp, arith::ExtFOp, arith::TruncFOp>(
          op))
    return false;
  return isa<arith::ArithDialect, math::MathDialect>(op->getDialect());
}

/// Static trip count of the host loops around a launch or call.
int64_t hostLoops(Operation *op) {
  int64_t n = 1;
  for (auto loop = op->getParentOfType<scf::ForOp>(); loop;
       loop = loop->getParentOfType<scf::ForOp>()) {
    std::optional<int64_t> lb = constantIndex(loop.getLowerBound()),
                           ub = constantIndex(loop.getUpperBound()),
                           step = constantIndex(loop.getStep());
    if (lb && ub && step && *step > 0)
      n *= std::max<int64_t>(0, (*ub - *lb + *step - 1) / *step);
  }
  return n;
}

Value throughCasts(Value v) {
  while (auto cast = v.getDefiningOp<memref::CastOp>())
    v = cast.getSource();
  return v;
}

} // namespace

std::vector<GpuKernelLaunch> collectGpuKernelLaunches(ModuleOp module,
                                                     bool everyStageFunction) {
  // Calls per step of every function from the step function (zb.rank).
  llvm::StringMap<int64_t> calls;
  module.walk([&](func::FuncOp fn) {
    if (!zb::isStepFunction(fn))
      return;
    fn.walk([&](func::CallOp call) {
      calls[call.getCallee()] += hostLoops(call);
    });
  });

  std::vector<GpuKernelLaunch> result;
  module.walk([&](func::FuncOp fn) {
    GpuKernelLaunch base;
    base.function = fn.getName().str();
    if (auto stage = fn->getAttrOfType<IntegerAttr>("zb.stage"))
      base.stage = stage.getInt();
    if (Attribute kind = fn->getAttr("zb.kind")) {
      std::string text;
      llvm::raw_string_ostream os(text);
      kind.print(os);
      base.pass = StringRef(text).contains("backward_input")    ? 'B'
                  : StringRef(text).contains("backward_weight") ? 'W'
                  : StringRef(text).contains("forward")         ? 'F'
                                                                : '-';
    }
    if (everyStageFunction) {
      if (base.stage < 0)
        return; // not a stage function
    } else if (!zb::isStepFunction(fn)) {
      auto it = calls.find(fn.getName());
      if (it == calls.end())
        return; // not called from the step: not part of this rank's step
      base.callsPerStep = it->second;
    }
    fn.walk([&](Operation *op) {
      if (auto call = dyn_cast<func::CallOp>(op)) {
        namespace sym = zbrt::symbols;
        StringRef callee = call.getCallee();
        bool bf16 = callee == sym::GemmBf16Memref ||
                    callee == sym::GemmBf16BatchedMemref;
        bool batched = callee == sym::SgemmBatchedMemref ||
                       callee == sym::GemmBf16BatchedMemref;
        if ((callee != sym::SgemmMemref && callee != sym::GemmBf16Memref &&
             !batched) ||
            call.getNumOperands() != 5)
          return;
        GpuKernelLaunch g = base;
        g.kernel = bf16 ? (batched ? "gemm_bf16_strided_batched" : "gemm_bf16")
                        : (batched ? "sgemm_strided_batched" : "sgemm");
        g.kind = "gemm";
        g.bf16 = bf16;
        g.launches = hostLoops(call);
        auto a = dyn_cast<MemRefType>(throughCasts(call.getOperand(0)).getType());
        auto c = dyn_cast<MemRefType>(throughCasts(call.getOperand(2)).getType());
        std::optional<int64_t> ta = constantIndex(call.getOperand(3));
        const int64_t rank = batched ? 3 : 2;
        if (a && c && a.hasStaticShape() && c.hasStaticShape() && ta &&
            a.getRank() == rank && c.getRank() == rank) {
          int64_t k = *ta ? a.getDimSize(rank - 2) : a.getDimSize(rank - 1);
          double matrices = batched ? c.getDimSize(0) : 1;
          g.flops = 2.0 * matrices * c.getDimSize(rank - 2) *
                    c.getDimSize(rank - 1) * k;
        }
        g.bytesRead = bytesOf(throughCasts(call.getOperand(0)).getType()) +
                      bytesOf(throughCasts(call.getOperand(1)).getType());
        g.bytesWritten = bytesOf(throughCasts(call.getOperand(2)).getType());
        result.push_back(g);
        return;
      }
      auto launch = dyn_cast<gpu::LaunchFuncOp>(op);
      if (!launch)
        return;
      GpuKernelLaunch g = base;
      g.kernel = launch.getKernelModuleName().str();
      g.launches = hostLoops(launch);
      gpu::KernelDim3 gs = launch.getGridSizeOperandValues(),
                      bs = launch.getBlockSizeOperandValues();
      Value gv[3] = {gs.x, gs.y, gs.z}, bv[3] = {bs.x, bs.y, bs.z};
      for (int d = 0; d < 3; ++d) {
        g.grid[d] = constantIndex(gv[d]).value_or(0);
        g.block[d] = constantIndex(bv[d]).value_or(0);
      }
      double threads = 1;
      for (int d = 0; d < 3; ++d)
        threads *= static_cast<double>(g.grid[d]) * g.block[d];
      auto kernel = SymbolTable::lookupNearestSymbolFrom<gpu::GPUFuncOp>(
          launch, launch.getKernel());
      g.kind = "elementwise";
      if (kernel) {
        bool allReduce = false, innerLoop = false, barrier = false;
        kernel.walk([&](Operation *inner) {
          if (isFlop(inner))
            // A loop without a constant trip count counted once.
            g.flops += tripCount(inner, kernel, launch).value_or(1) * threads;
          allReduce |= isa<gpu::AllReduceOp>(inner);
          barrier |= isa<gpu::BarrierOp>(inner);
          innerLoop |= isa<scf::ForOp>(inner);
        });
        g.kind = allReduce   ? "block-reduction"
                 : barrier   ? "column-reduction"
                 : innerLoop ? "serial-reduction"
                             : "elementwise";
        // A kernel that states its kind and FLOPs (the fused attention of
        // zb-gpu-attention-kernels: bfloat16 mma.sync on tensor cores; the
        // row norms of zb-gpu-norm-kernels).
        if (auto kind = kernel->getAttrOfType<StringAttr>("zb.kernel_kind")) {
          g.kind = kind.getValue().str();
          g.bf16 = g.kind == "attention";
        }
        if (auto flops = kernel->getAttrOfType<FloatAttr>("zb.flops"))
          g.flops = flops.getValueAsDouble();
        for (auto [i, arg] : llvm::enumerate(kernel.getArguments())) {
          if (!isa<MemRefType>(arg.getType()) ||
              i >= launch.getKernelOperands().size())
            continue;
          // Each load or store moves at most its executions x its bytes
          // (a gather of one element per row, as the cross-entropy's pick of
          // the target logit, reads that much of the buffer, not all of
          // it), and the whole buffer at most.
          bool loads = false, stores = false;
          double loaded = 0, stored = 0;
          for (Operation *user : arg.getUsers()) {
            if (isa<memref::LoadOp, vector::LoadOp>(user)) {
              loads = true;
              loaded += accessBytes(user, kernel, launch, threads);
            }
            if (isa<memref::StoreOp, vector::StoreOp>(user)) {
              stores = true;
              stored += accessBytes(user, kernel, launch, threads);
            }
          }
          // An argument with `zb.bytes` (the attention kernels' heads in a
          // token-major buffer) is read or written in that part only.
          auto part = kernel.getArgAttrOfType<FloatAttr>(i, "zb.bytes");
          double bytes =
              part ? part.getValueAsDouble()
                   : bytesOf(launch.getKernelOperands()[i].getType());
          if (loads)
            g.bytesRead += std::min(bytes, loaded);
          if (stores)
            g.bytesWritten += std::min(bytes, stored);
        }
        g.bytesRead += constantBytesRead(kernel);
      }
      result.push_back(g);
    });
  });
  return result;
}

namespace {
struct PassSum {
  int64_t kernels = 0, gemms = 0;
  /// Roofline plus launch overheads, and the roofline alone.
  double seconds = 0, roofline = 0, bytes = 0, flops = 0;
  /// Adds `n` launches of `k`.
  void add(const GpuKernelLaunch &k, int64_t n, const GpuSpec &gpu) {
    (k.kind == "gemm" ? gemms : kernels) += n;
    seconds += n * k.seconds(gpu);
    roofline += n * k.rooflineSeconds(gpu);
    bytes += n * (k.bytesRead + k.bytesWritten);
    flops += n * k.flops;
  }
};
/// (stage, pass) -> sums over one call of the pass's function.
std::map<std::pair<int64_t, char>, PassSum>
passSums(const std::vector<GpuKernelLaunch> &launches, const GpuSpec &gpu) {
  std::map<std::pair<int64_t, char>, PassSum> sums;
  for (const GpuKernelLaunch &k : launches)
    sums[{k.stage, k.pass}].add(k, k.launches, gpu);
  return sums;
}
} // namespace

std::map<int64_t, std::array<double, 3>>
gpuStagePassSeconds(const std::vector<std::vector<GpuKernelLaunch>> &ranks,
                        const GpuSpec &gpu) {
  std::map<int64_t, std::array<double, 3>> result;
  for (const std::vector<GpuKernelLaunch> &launches : ranks)
    for (auto &[key, sum] : passSums(launches, gpu)) {
      auto [stage, pass] = key;
      int index = pass == 'F' ? 0 : pass == 'B' ? 1 : pass == 'W' ? 2 : -1;
      if (stage >= 0 && index >= 0)
        result[stage][index] += sum.seconds;
    }
  return result;
}

namespace {
PassSum stepSum(const std::vector<GpuKernelLaunch> &launches,
                const GpuSpec &gpu) {
  PassSum s;
  for (const GpuKernelLaunch &k : launches)
    s.add(k, k.launches * k.callsPerStep, gpu);
  return s;
}
} // namespace

llvm::json::Value
gpuReportJSON(const std::vector<std::vector<GpuKernelLaunch>> &ranks,
              const GpuSpec &gpu) {
  llvm::json::Array rankArray;
  for (auto [r, launches] : llvm::enumerate(ranks)) {
    llvm::json::Array kernels;
    for (const GpuKernelLaunch &k : launches)
      kernels.push_back(llvm::json::Object{
          {"function", k.function},
          {"stage", k.stage},
          {"pass", std::string(1, k.pass)},
          {"kernel", k.kernel},
          {"kind", k.kind},
          {"grid", llvm::json::Array{k.grid[0], k.grid[1], k.grid[2]}},
          {"block", llvm::json::Array{k.block[0], k.block[1], k.block[2]}},
          {"bytes_read", k.bytesRead},
          {"bytes_written", k.bytesWritten},
          {"flops", k.flops},
          {"launches", k.launches},
          {"calls_per_step", k.callsPerStep},
          {"roofline_ms", k.rooflineSeconds(gpu) * 1e3},
          {"time_ms", k.seconds(gpu) * 1e3}});
    llvm::json::Array passes;
    for (auto &[key, s] : passSums(launches, gpu))
      passes.push_back(llvm::json::Object{{"stage", key.first},
                                          {"pass", std::string(1, key.second)},
                                          {"kernels", s.kernels},
                                          {"gemms", s.gemms},
                                          {"bytes", s.bytes},
                                          {"flops", s.flops},
                                          {"roofline_ms", s.roofline * 1e3},
                                          {"time_ms", s.seconds * 1e3}});
    PassSum step = stepSum(launches, gpu);
    rankArray.push_back(llvm::json::Object{
        {"rank", static_cast<int64_t>(r)},
        {"kernels", std::move(kernels)},
        {"passes", std::move(passes)},
        {"step", llvm::json::Object{{"kernel_launches", step.kernels},
                                    {"gemms", step.gemms},
                                    {"bytes", step.bytes},
                                    {"flops", step.flops},
                                    {"roofline_ms", step.roofline * 1e3},
                                    {"time_ms", step.seconds * 1e3}}}});
  }
  return llvm::json::Object{
      {"gpu", llvm::json::Object{{"name", gpu.peaks.name},
                                 {"bytes_per_second", gpu.peaks.memBytesPerSecond},
                                 {"fp32_flops_per_second",
                                  gpu.peaks.fp32FlopsPerSecond},
                                 {"tf32_flops_per_second",
                                  gpu.peaks.tf32FlopsPerSecond},
                                 {"launch_seconds", gpu.launchSeconds}}},
      {"ranks", std::move(rankArray)}};
}

std::string
gpuReportText(const std::vector<std::vector<GpuKernelLaunch>> &ranks,
              const GpuSpec &gpu) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::formatv("GPU report: roofline on {0} ({1:f2} TB/s, {2:f0} "
                      "TFLOP/s fp32, {3:f0} TFLOP/s TF32) + {4:f1} us per "
                      "launch\n",
                      gpu.peaks.name, gpu.peaks.memBytesPerSecond / 1e12,
                      gpu.peaks.fp32FlopsPerSecond / 1e12,
                      gpu.peaks.tf32FlopsPerSecond / 1e12, gpu.launchSeconds * 1e6);
  for (auto [r, launches] : llvm::enumerate(ranks)) {
    os << llvm::formatv("rank {0}\n", r);
    os << llvm::formatv("  {0,-5} {1,-4} {2,-40} {3,-16} {4,9} {5,9} {6,11} "
                        "{7,11} {8,10} {9,9}\n",
                        "stage", "pass", "kernel", "kind", "grid", "block",
                        "read (B)", "written (B)", "FLOPs", "time (us)");
    for (const GpuKernelLaunch &k : launches) {
      std::string grid = k.kind == "gemm"
                             ? "-"
                             : std::to_string(k.grid[0] * k.grid[1] *
                                              k.grid[2]);
      std::string block = "-";
      if (k.kind != "gemm") {
        block = std::to_string(k.block[0]);
        for (int d = 1; d < 3; ++d)
          if (k.block[d] != 1)
            block += "x" + std::to_string(k.block[d]);
      }
      std::string stage = k.stage < 0 ? "-" : std::to_string(k.stage);
      os << llvm::formatv("  {0,-5} {1,-4} {2,-40} {3,-16} {4,9} {5,9} "
                          "{6,11:f0} {7,11:f0} {8,10:e1} {9,9:f3}{10}\n",
                          stage, std::string(1, k.pass), k.kernel, k.kind,
                          grid, block, k.bytesRead, k.bytesWritten, k.flops,
                          k.seconds(gpu) * 1e6,
                          k.launches > 1
                              ? llvm::formatv("  x{0}", k.launches).str()
                              : std::string());
    }
    for (auto &[key, s] : passSums(launches, gpu)) {
      if (key.first < 0)
        continue;
      os << llvm::formatv("  stage {0} T_{1} = {2:f6} ms per microbatch ({3} "
                          "kernels, {4} GEMMs, {5:f0} bytes, {6:e2} FLOPs)\n",
                          key.first, std::string(1, key.second),
                          s.seconds * 1e3, s.kernels, s.gemms, s.bytes,
                          s.flops);
    }
    PassSum step = stepSum(launches, gpu);
    os << llvm::formatv("  step: {0} kernel launches, {1} GEMMs, {2:f6} ms "
                        "of compute ({3:f6} ms roofline + {4:f6} ms "
                        "launches)\n",
                        step.kernels, step.gemms, step.seconds * 1e3,
                        step.roofline * 1e3,
                        (step.seconds - step.roofline) * 1e3);
  }
  return out;
}

} // namespace zb
