//===- GradientCheck.cpp - JIT-run zb functions, finite differences -------===//
#include "GradientCheck.h"
#include "zb/Dialect/ZB/IR/ZBOps.h"
#include "zb/Driver/Driver.h"
#include "zb/Conversion/Passes.h"
#include "zb/Pipelines/Pipelines.h"
#include "zb/Transforms/Passes.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace zb::test {

int64_t HostTensor::numElements() const {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

static HostTensor templateOf(Type type) {
  auto t = llvm::cast<RankedTensorType>(type);
  HostTensor h;
  h.shape.assign(t.getShape().begin(), t.getShape().end());
  if (t.getElementType().isInteger(32))
    h.kind = HostTensor::I32;
  else if (t.getElementType().isInteger(64))
    h.kind = HostTensor::I64;
  else
    h.kind = HostTensor::F64;
  return h;
}

/// Appends `@entry(args..., out memrefs...)` that calls @main and writes its
/// results into the out buffers (C interface, so the JIT can call it).
/// From a whole program on zb tensors in one process (no ranks, e.g. a
/// forward-and-loss function after zb-autodiff) to the LLVM dialect: calls
/// inlined, zb.attention decomposed, with `useRuntime` f32 (batched) matmuls as zb runtime calls
/// (convert-zb-to-runtime: OpenBLAS, the program then needs libzbrt), the
/// rest as linalg (convert-zb-to-linalg), then the library's
/// buildTensorsToLLVMPipeline with malloc/free; with `gpu` (emulate set) the
/// CUDA target's kernels run by CPU emulation.
static void buildFunctionToLLVMPipeline(OpPassManager &pm, bool useRuntime,
                                        const zb::GpuCodegenOptions *gpu) {
  pm.addPass(createInlinerPass());
  pm.addPass(zb::createZBDecomposeAttention());
  if (useRuntime)
    pm.addPass(zb::createConvertZBToRuntime());
  pm.addPass(zb::createConvertZBToLinalg());
  zb::buildTensorsToLLVMPipeline(pm, /*runtimeAllocator=*/false, gpu);
}

static void addEntry(ModuleOp module) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  Location loc = main.getLoc();
  FunctionType ft = main.getFunctionType();
  SmallVector<Type> argTypes(ft.getInputs());
  for (Type r : ft.getResults()) {
    auto t = llvm::cast<RankedTensorType>(r);
    argTypes.push_back(MemRefType::get(t.getShape(), t.getElementType()));
  }
  auto entry = func::FuncOp::create(b, loc, "entry",
                                    b.getFunctionType(argTypes, {}));
  entry->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  Block *block = entry.addEntryBlock();
  b.setInsertionPointToStart(block);
  unsigned numIn = ft.getNumInputs();
  auto call = func::CallOp::create(
      b, loc, main, block->getArguments().take_front(numIn));
  for (auto [i, r] : llvm::enumerate(call.getResults())) {
    auto m = bufferization::MaterializeInDestinationOp::create(
        b, loc, r, block->getArgument(numIn + i));
    m.setRestrict(true);
    m.setWritable(true);
  }
  func::ReturnOp::create(b, loc);
}

CompiledLoss::CompiledLoss(const std::string &source, ManualBackward manual,
                           bool useRuntime,
                           const zb::GpuCodegenOptions *gpu) {
  zb::driver::initializeNativeTarget();
  context = zb::driver::createContext();
  context->disableMultithreading(); // the machine is shared: one thread
  context->loadDialect<zb::ZBDialect, func::FuncDialect,
                       bufferization::BufferizationDialect,
                       memref::MemRefDialect>();

  std::string diagnostics;
  llvm::raw_string_ostream diagOS(diagnostics);
  ScopedDiagnosticHandler handler(context.get(), [&](Diagnostic &d) {
    diagOS << d.getLocation() << ": " << d << "\n";
    return success();
  });

  OwningOpRef<ModuleOp> module = zb::driver::parseModel(source, context.get());
  if (!module) {
    errorMessage = "parse error: " + diagnostics;
    return;
  }
  auto main = module->lookupSymbol<func::FuncOp>("main");
  if (!main) {
    errorMessage = "no @main";
    return;
  }
  for (auto [i, t] : llvm::enumerate(main.getArgumentTypes())) {
    templates.push_back(templateOf(t));
    if (main.getArgAttr(i, zb::kParamAttr))
      params.push_back(i);
  }

  if (manual) {
    if (failed(manual(*module))) {
      errorMessage = "manual backward failed: " + diagnostics;
      return;
    }
  } else {
    PassManager pm = PassManager::on<ModuleOp>(context.get());
    pm.addPass(zb::createZBAutodiff());
    if (failed(pm.run(*module))) {
      errorMessage = "zb-autodiff failed: " + diagnostics;
      return;
    }
  }
  addEntry(*module);
  PassManager lower = PassManager::on<ModuleOp>(context.get());
  buildFunctionToLLVMPipeline(lower, useRuntime, gpu);
  if (failed(lower.run(*module))) {
    errorMessage = "lowering failed: " + diagnostics;
    return;
  }

  // Named: ExecutionEngineOptions::transformer is a function_ref.
  std::function<llvm::Error(llvm::Module *)> transformer =
      makeOptimizingTransformer(/*optLevel=*/1, /*sizeLevel=*/0,
                                /*targetMachine=*/nullptr);
  ExecutionEngineOptions options;
  options.transformer = transformer;
  // memrefCopy (memref.copy of non-contiguous buffers) lives there.
  SmallVector<StringRef> libs{ZB_MLIR_C_RUNNER_UTILS};
  // Emulated kernels announce their memref arguments to libzbrt
  // (zbrt_cuda_emulated_kernel_argument; a no-op without the CUDA backend).
  if (useRuntime || gpu)
    libs.push_back(ZB_RUNTIME_LIBRARY);
  options.sharedLibPaths = libs;
  auto created = ExecutionEngine::create(*module, options);
  if (!created) {
    errorMessage = "JIT failed: " + llvm::toString(created.takeError());
    return;
  }
  engine = std::move(*created);
}

CompiledLoss::~CompiledLoss() = default;

namespace {
/// A memref descriptor {allocated, aligned, offset, sizes[r], strides[r]}
/// (every field is 8 bytes) for identity-layout memrefs.
struct Descriptor {
  std::vector<int64_t> words;
  Descriptor(void *data, const std::vector<int64_t> &shape) {
    size_t r = shape.size();
    words.assign(3 + 2 * r, 0);
    words[0] = reinterpret_cast<int64_t>(data);
    words[1] = reinterpret_cast<int64_t>(data);
    int64_t stride = 1;
    for (size_t i = r; i-- > 0;) {
      words[3 + i] = shape[i];
      words[3 + r + i] = stride;
      stride *= shape[i];
    }
  }
};

void *dataOf(HostTensor &t) {
  switch (t.kind) {
  case HostTensor::F64:
    return t.f64.data();
  case HostTensor::I32:
    return t.i32.data();
  case HostTensor::I64:
    return t.i64.data();
  }
  return nullptr;
}
} // namespace

double CompiledLoss::run(const std::vector<HostTensor> &argsIn,
                         std::vector<HostTensor> *grads) {
  std::vector<HostTensor> args = argsIn; // descriptors need mutable pointers
  std::vector<HostTensor> outs;
  HostTensor lossT;
  lossT.f64.assign(1, 0.0);
  outs.push_back(lossT);
  for (unsigned p : params) {
    HostTensor g = templates[p];
    g.f64.assign(g.numElements(), 0.0);
    outs.push_back(g);
  }
  std::vector<Descriptor> descs;
  for (HostTensor &a : args)
    descs.emplace_back(dataOf(a), a.shape);
  for (HostTensor &o : outs)
    descs.emplace_back(dataOf(o), o.shape);
  std::vector<void *> descPtrs;
  for (Descriptor &d : descs)
    descPtrs.push_back(d.words.data());
  std::vector<void *> packed;
  for (void *&p : descPtrs)
    packed.push_back(&p);
  if (!engine)
    return NAN;
  if (llvm::Error err = engine->invokePacked("_mlir_ciface_entry", packed)) {
    llvm::errs() << "invoke failed: " << llvm::toString(std::move(err))
                 << "\n";
    engine.reset();
    return NAN;
  }
  if (grads)
    grads->assign(outs.begin() + 1, outs.end());
  return outs[0].f64[0];
}

std::vector<HostTensor> randomArgs(const CompiledLoss &loss,
                                   const std::vector<ArgInit> &inits,
                                   std::mt19937_64 &rng) {
  std::vector<HostTensor> args = loss.argTemplates();
  for (auto [i, a] : llvm::enumerate(args)) {
    ArgInit init = i < inits.size() ? inits[i] : ArgInit();
    int64_t n = a.numElements();
    if (a.kind == HostTensor::F64) {
      std::uniform_real_distribution<double> u(init.lo, init.hi);
      for (int64_t j = 0; j < n; ++j) {
        double v = u(rng);
        while (std::abs(v) < init.minAbs)
          v = u(rng);
        a.f64.push_back(v);
      }
    } else {
      std::uniform_int_distribution<int64_t> u(0, init.maxIndex - 1);
      for (int64_t j = 0; j < n; ++j) {
        if (a.kind == HostTensor::I32)
          a.i32.push_back(static_cast<int32_t>(u(rng)));
        else
          a.i64.push_back(u(rng));
      }
    }
  }
  return args;
}

GradientCheckResult checkGradients(CompiledLoss &loss,
                                   const std::vector<HostTensor> &args,
                                   double h) {
  GradientCheckResult result;
  std::vector<HostTensor> grads;
  result.loss = loss.run(args, &grads);
  std::vector<HostTensor> probe = args;
  for (auto [k, p] : llvm::enumerate(loss.paramIndices())) {
    double maxDiff = 0, maxFd = 0;
    std::vector<double> &x = probe[p].f64;
    for (size_t j = 0; j < x.size(); ++j) {
      double saved = x[j];
      x[j] = saved + h;
      double plus = loss.run(probe);
      x[j] = saved - h;
      double minus = loss.run(probe);
      x[j] = saved;
      double fd = (plus - minus) / (2 * h);
      maxDiff = std::max(maxDiff, std::abs(fd - grads[k].f64[j]));
      maxFd = std::max(maxFd, std::abs(fd));
      if (std::isnan(grads[k].f64[j]) || std::isnan(fd))
        maxDiff = INFINITY;
    }
    double rel = maxDiff / std::max(maxFd, 1e-12);
    result.relErrors.push_back(rel);
    result.maxRelError = std::max(result.maxRelError, rel);
  }
  return result;
}

} // namespace zb::test
