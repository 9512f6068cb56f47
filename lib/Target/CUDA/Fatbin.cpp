//===- Fatbin.cpp - zb-gpu-fatbin -----------------------------------------===//
//
// One fatbin per gpu.module for several architectures: every target attached
// to the module (one nvvm-attach-target per --gpu-arch) is compiled to a
// cubin (its PTX kept through the serializer's ISA callback), and the
// toolkit's `fatbinary` packs the cubins plus the PTX of the first (lowest)
// architecture, which the driver JIT-compiles on a newer GPU. See
// Passes.td.
//
//===----------------------------------------------------------------------===//
#include "zb/Target/CUDA/Passes.h"

#include "mlir/Dialect/GPU/IR/CompilationInterfaces.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

namespace zb {
#define GEN_PASS_DEF_ZBGPUFATBIN
#include "zb/Target/CUDA/Passes.h.inc"
} // namespace zb

using namespace mlir;

namespace {

/// A temporary file that removes itself.
struct TempFile {
  llvm::SmallString<128> path;
  ~TempFile() {
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
};

struct ZBGpuFatbinPass : public zb::impl::ZBGpuFatbinBase<ZBGpuFatbinPass> {
  using Base::Base;

  LogicalResult write(TempFile &file, StringRef suffix, StringRef data,
                      Operation *op) {
    int fd;
    if (llvm::sys::fs::createTemporaryFile("zb-fatbin", suffix, fd,
                                           file.path))
      return op->emitError("zb-gpu-fatbin: cannot create a temporary file");
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << data;
    return success();
  }

  LogicalResult convert(gpu::GPUModuleOp module) {
    ArrayAttr targets = module.getTargetsAttr();
    if (!targets || targets.empty())
      return module.emitError("zb-gpu-fatbin: no target attached");
    llvm::SmallString<256> fatbinary(toolkit);
    llvm::sys::path::append(fatbinary, "bin", "fatbinary");
    if (!llvm::sys::fs::can_execute(fatbinary))
      return module.emitError("zb-gpu-fatbin: ")
             << fatbinary << " not found (pass the toolkit root)";
    std::vector<TempFile> files(targets.size() + 2);
    std::vector<std::string> args = {fatbinary.str().str(), "-64"};
    std::string firstPtx;
    std::string firstChip;
    std::unique_ptr<SymbolTable> table;
    auto symbolTable = [&]() -> SymbolTable * {
      if (!table)
        table = std::make_unique<SymbolTable>(module->getParentOp());
      return table.get();
    };
    for (auto [i, attr] : llvm::enumerate(targets)) {
      auto target = dyn_cast<NVVM::NVVMTargetAttr>(attr);
      if (!target)
        return module.emitError("zb-gpu-fatbin: target ")
               << attr << " is not an NVVM target";
      std::string ptx;
      // TargetOptions keeps function_refs: the callables must outlive it.
      auto keepPtx = [&](StringRef isa) { ptx = isa.str(); };
      gpu::TargetOptions options(
          toolkit, {}, "", "", gpu::CompilationTarget::Binary, symbolTable,
          {}, {}, {}, keepPtx);
      auto serializable = cast<gpu::TargetAttrInterface>(attr);
      std::optional<SmallVector<char, 0>> cubin =
          serializable.serializeToObject(module, options);
      if (!cubin)
        return module.emitError("zb-gpu-fatbin: compiling for ")
               << target.getChip() << " failed";
      StringRef chip = target.getChip();
      if (!chip.starts_with("sm_"))
        return module.emitError("zb-gpu-fatbin: unexpected chip ") << chip;
      if (failed(write(files[i], "cubin",
                       StringRef(cubin->data(), cubin->size()), module)))
        return failure();
      args.push_back(("--image3=kind=elf,sm=" + chip.drop_front(3) +
                      ",file=" + files[i].path)
                         .str());
      if (i == 0) {
        firstPtx = ptx;
        firstChip = chip.drop_front(3).str();
      }
    }
    table.reset();
    TempFile &ptxFile = files[targets.size()];
    TempFile &out = files[targets.size() + 1];
    if (!firstPtx.empty()) {
      if (failed(write(ptxFile, "ptx", firstPtx, module)))
        return failure();
      args.push_back("--image3=kind=ptx,sm=" + firstChip +
                     ",file=" + ptxFile.path.str().str());
    }
    int fd;
    if (llvm::sys::fs::createTemporaryFile("zb-fatbin", "fatbin", fd,
                                           out.path))
      return module.emitError("zb-gpu-fatbin: cannot create a temporary file");
    llvm::sys::Process::SafelyCloseFileDescriptor(fd);
    args.push_back("--create=" + out.path.str().str());
    SmallVector<StringRef> argRefs(args.begin(), args.end());
    std::string message;
    int rc = llvm::sys::ExecuteAndWait(fatbinary, argRefs, std::nullopt, {},
                                       /*SecondsToWait=*/120, 0, &message);
    if (rc != 0)
      return module.emitError("zb-gpu-fatbin: fatbinary failed (exit ")
             << rc << ") " << message;
    auto buffer = llvm::MemoryBuffer::getFile(out.path, /*IsText=*/false);
    if (!buffer)
      return module.emitError("zb-gpu-fatbin: cannot read the fatbin");
    OpBuilder b(module);
    auto object = gpu::ObjectAttr::get(
        module.getContext(), targets[0], gpu::CompilationTarget::Fatbin,
        b.getStringAttr((*buffer)->getBuffer()), nullptr, nullptr);
    gpu::BinaryOp::create(b, module.getLoc(), module.getName(),
                          /*offloadingHandler=*/nullptr,
                          b.getArrayAttr({object}));
    module.erase();
    return success();
  }

  void runOnOperation() override {
    for (auto module : llvm::make_early_inc_range(
             getOperation().getOps<gpu::GPUModuleOp>()))
      if (failed(convert(module)))
        return signalPassFailure();
  }
};

} // namespace
