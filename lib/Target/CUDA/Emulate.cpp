//===- Emulate.cpp - zb-gpu-emulate ---------------------------------------===//
//
// Runs the GPU kernels of a module on the CPU with the GPU's semantics, for
// checking them where no GPU is at hand. Every gpu.func kernel of every
// gpu.module (as gpu-kernel-outlining leaves them, before NVVM) becomes a
// host function that loops over the grid's blocks and, per block, over the
// block's threads once per phase: the kernel body is cut at every
// gpu.barrier and gpu.all_reduce, so a phase runs to the barrier in every
// thread before any thread goes on, as on the GPU. Scalars that live across
// a cut are kept per thread; workgroup memory is allocated per block;
// gpu.all_reduce combines the per-thread values in exactly the order of
// upstream's lowering (populateGpuAllReducePatterns, which
// convert-gpu-to-nvvm applies): an XOR butterfly over the lanes of each
// 32-lane subgroup (a partner lane outside the active width is skipped),
// then the same over the subgroups' results. Each gpu.launch_func becomes a
// call, preceded for each memref argument by
//   zbrt_cuda_emulated_kernel_argument(kernel name, argument index, pointer)
// with the argument's aligned pointer: under zb-run --backend cuda, libzbrt
// asks the driver whether that is device memory where it can (the stand-in,
// FakeDeviceMemory.cpp), as a GPU's kernel could read nothing else. See
// Passes.td.
//
//===----------------------------------------------------------------------===//
#include "zb/Target/CUDA/Passes.h"
#include "zbrt/Symbols.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Utils/GPUUtils.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

namespace zb {
#define GEN_PASS_DEF_ZBGPUEMULATE
#include "zb/Target/CUDA/Passes.h.inc"
} // namespace zb

using namespace mlir;

namespace {

constexpr int64_t kSubgroupSize = 32;

/// The operations that read a thread's or block's coordinates (replaced by
/// the emulation's loop indices).
bool isCoordinateOp(Operation *op) {
  return isa<gpu::ThreadIdOp, gpu::BlockIdOp, gpu::BlockDimOp, gpu::GridDimOp,
             gpu::GlobalIdOp, gpu::LaneIdOp, gpu::SubgroupIdOp,
             gpu::SubgroupSizeOp, gpu::NumSubgroupsOp>(op);
}

/// A kernel body cut at its top-level gpu.barrier and gpu.all_reduce ops
/// into phases, and the values that live across a cut.
struct KernelPhases {
  /// The top-level operations of each phase (the terminator in none).
  SmallVector<SmallVector<Operation *>> phases;
  /// The cut that ends phase i (the last phase ends at the terminator).
  SmallVector<Operation *> cuts;
  /// The phase of each top-level operation (of a cut: the phase it ends).
  DenseMap<Operation *, unsigned> phaseOf;
  /// The values kept in per-thread arrays, and per phase the ones it loads
  /// (defined earlier) and stores (used later or reduced by its cut).
  llvm::SetVector<Value> spilled;
  SmallVector<llvm::SetVector<Value>> imports, exports;
};

/// What the emulation function of a kernel provides to the cloned phases:
/// the launch's grid and block sizes (its arguments), the block's
/// coordinates (the grid loops' indices), the threads per block and the
/// per-thread array of each spilled value.
struct EmulationScope {
  explicit EmulationScope(Location loc) : loc(loc) {}
  Location loc;
  Value grid[3], block[3], blockId[3];
  Value c0, c1, threads;
  DenseMap<Value, Value> spillArray;
};


//===-- Lock-step emulation (kernels with warp collectives) ---------------===//
//
// A kernel that exchanges registers between the lanes of a warp
// (gpu.shuffle, nvvm.mma.sync) inside loops cannot be cut into phases at
// the top level. It runs in lock-step instead: every operation runs for
// every thread of the block before the next operation starts, each value a
// per-thread array (a "lane array"), values that depend on no thread
// (constants, block coordinates, arithmetic on them) computed once. Loops
// must have bounds the same for every thread (checked when emulating:
// anything else is an error naming the loop), as a warp's collectives
// require on the GPU. A barrier is then implied after every operation, so
// lock-step emulation cannot show a missing gpu.barrier.

/// Whether `kernel` needs the lock-step emulation.
bool needsLockstep(gpu::GPUFuncOp kernel) {
  return kernel
      .walk([](Operation *op) {
        return isa<gpu::ShuffleOp, NVVM::MmaOp>(op) ? WalkResult::interrupt()
                                                    : WalkResult::advance();
      })
      .wasInterrupted();
}


struct ZBGpuEmulatePass
    : public zb::impl::ZBGpuEmulateBase<ZBGpuEmulatePass> {
  using Base::Base;

  ModuleOp module;
  llvm::StringMap<func::FuncOp> reduceFunctions;

  Value cst(OpBuilder &b, Location loc, int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  }

  /// `func @__zb_emu_mma_m16n8k16_bf16(a0..a3, b0, b1: memref<?xi32>,
  /// c0..c3, d0..d3: memref<?xf32>, threads: index)`: for every warp of
  /// the block, each lane's D fragment of mma.sync.m16n8k16.row.col (bf16
  /// products, float32 sums in k order) from the lanes' A, B and C
  /// fragments (layouts in AttentionKernels.cpp's file comment).
  func::FuncOp mmaFn;
  func::FuncOp mmaFunction(Location loc) {
    if (mmaFn)
      return mmaFn;
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    Type i32 = b.getI32Type(), f32 = b.getF32Type();
    auto ai = MemRefType::get({ShapedType::kDynamic}, i32);
    auto af = MemRefType::get({ShapedType::kDynamic}, f32);
    SmallVector<Type> argTypes(6, ai);
    argTypes.append(8, af);
    argTypes.push_back(b.getIndexType());
    mmaFn = func::FuncOp::create(b, loc, "__zb_emu_mma_m16n8k16_bf16",
                                 b.getFunctionType(argTypes, {}));
    mmaFn.setPrivate();
    Block *entry = mmaFn.addEntryBlock();
    b.setInsertionPointToStart(entry);
    auto args = entry->getArguments();
    Value c0 = cst(b, loc, 0), c1 = cst(b, loc, 1), c4 = cst(b, loc, 4),
          c32 = cst(b, loc, kSubgroupSize);
    // The bfloat16 in half `half` of an i32 register, as float32.
    auto element = [&](OpBuilder &b, Value reg, Value i, int64_t half) {
      Value bits = memref::LoadOp::create(b, loc, reg, ValueRange{i});
      bits = half ? arith::AndIOp::create(
                        b, loc, bits,
                        arith::ConstantIntOp::create(b, loc, i32, 0xffff0000))
                        .getResult()
                  : arith::ShLIOp::create(
                        b, loc, bits, arith::ConstantIntOp::create(b, loc, i32, 16))
                        .getResult();
      return arith::BitcastOp::create(b, loc, f32, bits).getResult();
    };
    scf::ForOp::create(
        b, loc, c0, args[14], c32, ValueRange(),
        [&](OpBuilder &b, Location loc, Value base, ValueRange) {
          scf::ForOp::create(
              b, loc, c0, c32, c1, ValueRange(),
              [&](OpBuilder &b, Location loc, Value lane, ValueRange) {
                Value g = arith::DivUIOp::create(b, loc, lane, c4);
                Value t = arith::RemUIOp::create(b, loc, lane, c4);
                Value self = arith::AddIOp::create(b, loc, base, lane);
                Value aLane0 = arith::AddIOp::create(
                    b, loc, base, arith::MulIOp::create(b, loc, g, c4));
                for (int64_t i = 0; i < 4; ++i) {
                  // D element (row g + 8 (i >= 2), column 2t + (i & 1)).
                  Value col = arith::AddIOp::create(
                      b, loc, arith::MulIOp::create(b, loc, t, cst(b, loc, 2)),
                      cst(b, loc, i & 1));
                  Value bLane0 = arith::AddIOp::create(
                      b, loc, base, arith::MulIOp::create(b, loc, col, c4));
                  Value acc =
                      memref::LoadOp::create(b, loc, args[6 + i], ValueRange{self});
                  for (int64_t kk = 0; kk < 16; ++kk) {
                    int64_t quad = (kk % 8) / 2, half = kk % 2;
                    Value aLane = arith::AddIOp::create(b, loc, aLane0,
                                                        cst(b, loc, quad));
                    Value bLane = arith::AddIOp::create(b, loc, bLane0,
                                                        cst(b, loc, quad));
                    Value a = element(b, args[(i >= 2) + 2 * (kk >= 8)], aLane,
                                      half);
                    Value bv = element(b, args[4 + (kk >= 8)], bLane, half);
                    acc = arith::AddFOp::create(
                        b, loc, acc, arith::MulFOp::create(b, loc, a, bv));
                  }
                  memref::StoreOp::create(b, loc, acc, args[10 + i],
                                          ValueRange{self});
                }
                scf::YieldOp::create(b, loc);
              });
          scf::YieldOp::create(b, loc);
        });
    func::ReturnOp::create(b, loc);
    return mmaFn;
  }

  FailureOr<func::FuncOp> emulateLockstep(gpu::GPUModuleOp gpuModule,
                                          gpu::GPUFuncOp kernel);

  /// Before `launch`'s call: each memref argument's aligned pointer to
  /// zbrt_cuda_emulated_kernel_argument(name, index, pointer) (file
  /// comment), the name a NUL-terminated constant global.
  void announceArguments(OpBuilder &b, gpu::LaunchFuncOp launch) {
    Location loc = launch.getLoc();
    Type i64 = b.getI64Type();
    SmallVector<std::pair<int64_t, Value>> memrefs;
    for (auto [i, v] : llvm::enumerate(launch.getKernelOperands()))
      if (isa<MemRefType>(v.getType()))
        memrefs.push_back({(int64_t)i, v});
    if (memrefs.empty())
      return;
    constexpr StringLiteral kHook = zbrt::symbols::CudaEmulatedKernelArgument;
    auto hook = module.lookupSymbol<func::FuncOp>(kHook);
    if (!hook) {
      OpBuilder m = OpBuilder::atBlockEnd(module.getBody());
      hook = func::FuncOp::create(m, loc, kHook,
                                  m.getFunctionType({i64, i64, i64}, {}));
      hook.setPrivate();
    }
    StringRef kernel = launch.getKernelName().getValue();
    std::string global =
        ("__zb_emu_name_" + launch.getKernelModuleName().getValue() + "_" +
         kernel)
            .str();
    auto nameType =
        MemRefType::get({(int64_t)kernel.size() + 1}, b.getIntegerType(8));
    if (!module.lookupSymbol(global)) {
      SmallVector<int8_t> bytes(kernel.begin(), kernel.end());
      bytes.push_back(0);
      OpBuilder m = OpBuilder::atBlockEnd(module.getBody());
      memref::GlobalOp::create(
          m, loc, global, m.getStringAttr("private"), nameType,
          DenseElementsAttr::get(
              RankedTensorType::get(nameType.getShape(), m.getIntegerType(8)),
              ArrayRef<int8_t>(bytes)),
          /*constant=*/true, /*alignment=*/IntegerAttr());
    }
    auto address = [&](Value memref) {
      Value p = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
      return arith::IndexCastOp::create(b, loc, i64, p).getResult();
    };
    Value name = address(memref::GetGlobalOp::create(b, loc, nameType, global));
    for (auto [i, v] : memrefs) {
      Value index = arith::ConstantIntOp::create(b, loc, i64, i);
      func::CallOp::create(b, loc, hook, ValueRange{name, index, address(v)});
    }
  }

  /// `func @__zb_emu_subgroup_reduce_<kind>_<type>(%v: memref<?xT>, %base,
  /// %width: index) -> T`: lane 0's value after upstream's butterfly over
  /// lanes v[base .. base + min(32, width)).
  func::FuncOp subgroupReduceFunction(gpu::AllReduceOperation kind,
                                      Type type, Location loc) {
    std::string name;
    llvm::raw_string_ostream os(name);
    os << "__zb_emu_subgroup_reduce_" << gpu::stringifyAllReduceOperation(kind)
       << "_" << type;
    if (auto it = reduceFunctions.find(name); it != reduceFunctions.end())
      return it->second;
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    Type index = b.getIndexType();
    auto arrayType = MemRefType::get({ShapedType::kDynamic}, type);
    auto fn = func::FuncOp::create(
        b, loc, name,
        b.getFunctionType({arrayType, index, index}, {type}));
    fn.setPrivate();
    Block *entry = fn.addEntryBlock();
    b.setInsertionPointToStart(entry);
    Value values = entry->getArgument(0), base = entry->getArgument(1),
          width = entry->getArgument(2);
    Value c0 = cst(b, loc, 0), c1 = cst(b, loc, 1),
          c32 = cst(b, loc, kSubgroupSize);
    auto laneType = MemRefType::get({kSubgroupSize}, type);
    Value lanes = memref::AllocOp::create(b, loc, laneType);
    Value next = memref::AllocOp::create(b, loc, laneType);
    Value active = arith::MinUIOp::create(b, loc, width, c32);
    scf::ForOp::create(b, loc, c0, active, c1, ValueRange(),
                       [&](OpBuilder &b, Location loc, Value lane, ValueRange) {
                         Value i = arith::AddIOp::create(b, loc, base, lane);
                         Value v = memref::LoadOp::create(b, loc, values, i);
                         memref::StoreOp::create(b, loc, v, lanes, lane);
                         scf::YieldOp::create(b, loc);
                       });
    for (int64_t offset = 1; offset < kSubgroupSize; offset <<= 1) {
      Value off = cst(b, loc, offset);
      scf::ForOp::create(
          b, loc, c0, active, c1, ValueRange(),
          [&](OpBuilder &b, Location loc, Value lane, ValueRange) {
            Value partner = arith::XOrIOp::create(b, loc, lane, off);
            Value own = memref::LoadOp::create(b, loc, lanes, lane);
            Value valid = arith::CmpIOp::create(
                b, loc, arith::CmpIPredicate::ult, partner, active);
            // The partner index is below 32: in bounds even when the lane
            // is inactive (its value is then not used).
            Value other = memref::LoadOp::create(b, loc, lanes, partner);
            // accumulate(value, shuffled), as upstream.
            Value acc = vector::makeArithReduction(
                b, loc, gpu::convertReductionKind(kind), own, other);
            Value chosen = arith::SelectOp::create(b, loc, valid, acc, own);
            memref::StoreOp::create(b, loc, chosen, next, lane);
            scf::YieldOp::create(b, loc);
          });
      memref::CopyOp::create(b, loc, next, lanes);
    }
    Value result = memref::LoadOp::create(b, loc, lanes, c0);
    memref::DeallocOp::create(b, loc, lanes);
    memref::DeallocOp::create(b, loc, next);
    func::ReturnOp::create(b, loc, result);
    reduceFunctions[name] = fn;
    return fn;
  }

  /// The block-wide result of gpu.all_reduce over values[0 .. n).
  Value emulateAllReduce(OpBuilder &b, Location loc,
                         gpu::AllReduceOperation kind, Value values,
                         Value n) {
    Type type = cast<MemRefType>(values.getType()).getElementType();
    func::FuncOp fn = subgroupReduceFunction(kind, type, loc);
    Value c0 = cst(b, loc, 0), c1 = cst(b, loc, 1),
          c32 = cst(b, loc, kSubgroupSize);
    Value subgroups = arith::CeilDivUIOp::create(b, loc, n, c32);
    Value partials = memref::AllocOp::create(
        b, loc, MemRefType::get({ShapedType::kDynamic}, type), subgroups);
    scf::ForOp::create(
        b, loc, c0, subgroups, c1, ValueRange(),
        [&](OpBuilder &b, Location loc, Value s, ValueRange) {
          Value base = arith::MulIOp::create(b, loc, s, c32);
          Value width = arith::SubIOp::create(b, loc, n, base);
          Value r = func::CallOp::create(b, loc, fn,
                                         ValueRange{values, base, width})
                        .getResult(0);
          memref::StoreOp::create(b, loc, r, partials, s);
          scf::YieldOp::create(b, loc);
        });
    Value result =
        func::CallOp::create(b, loc, fn, ValueRange{partials, c0, subgroups})
            .getResult(0);
    memref::DeallocOp::create(b, loc, partials);
    return result;
  }

  /// Recomputes the thread and block coordinates and the constants of
  /// `body` used in a later phase there (cloned before the user) rather than
  /// keeping them per thread.
  static void rematerializeCoordinates(Block &body) {
    DenseMap<Operation *, unsigned> scan;
    unsigned phase = 0;
    for (Operation &op : body) {
      scan[&op] = phase;
      if (isa<gpu::BarrierOp, gpu::AllReduceOp>(op))
        ++phase;
    }
    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (op.getNumResults() != 1 || op.getNumOperands() != 0 ||
          !(op.hasTrait<OpTrait::ConstantLike>() || isCoordinateOp(&op)))
        continue;
      for (OpOperand &use :
           llvm::make_early_inc_range(op.getResult(0).getUses())) {
        Operation *user = body.findAncestorOpInBlock(*use.getOwner());
        if (!user || scan.lookup(user) == scan.lookup(&op))
          continue;
        OpBuilder ob(user);
        Operation *copy = ob.clone(op);
        scan[copy] = scan.lookup(user);
        use.set(copy->getResult(0));
      }
    }
  }

  /// Cuts `body` into phases: the top-level operations between cuts
  /// (KernelPhases::phases, cuts, phaseOf). Fails (reported) on a
  /// gpu.all_reduce with a body region, on barriers and all-reductions inside
  /// control flow, and on shuffles and subgroup reductions.
  static LogicalResult cutPhases(Block &body, KernelPhases &k) {
    k.phases.emplace_back();
    for (Operation &op : body) {
      if (isa<gpu::BarrierOp, gpu::AllReduceOp>(op)) {
        if (auto reduce = dyn_cast<gpu::AllReduceOp>(op);
            reduce && (!reduce.getOp() || !reduce.getBody().empty()))
          return op.emitError("zb-gpu-emulate: gpu.all_reduce with a body "
                              "region is not supported");
        k.cuts.push_back(&op);
        k.phaseOf[&op] = k.phases.size() - 1;
        k.phases.emplace_back();
        continue;
      }
      if (op.hasTrait<OpTrait::IsTerminator>())
        continue;
      k.phaseOf[&op] = k.phases.size() - 1;
      k.phases.back().push_back(&op);
    }
    WalkResult nested = body.walk([&](Operation *op) {
      if (op->getBlock() != &body &&
          isa<gpu::BarrierOp, gpu::AllReduceOp, gpu::ShuffleOp,
              gpu::SubgroupReduceOp>(op)) {
        op->emitError("zb-gpu-emulate: '")
            << op->getName()
            << "' inside control flow (only top-level barriers and "
               "all-reductions are emulated)";
        return WalkResult::interrupt();
      }
      if (op->getBlock() == &body &&
          isa<gpu::ShuffleOp, gpu::SubgroupReduceOp>(op)) {
        op->emitError("zb-gpu-emulate: '")
            << op->getName() << "' is not emulated";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    return failure(nested.wasInterrupted());
  }

  /// Finds the values defined in one phase and used in a later one (or
  /// reduced by a cut): they live in per-thread arrays
  /// (KernelPhases::spilled, imports, exports). Fails (reported) for one
  /// that is not a scalar.
  static LogicalResult findSpilled(gpu::GPUFuncOp kernel, Block &body,
                                   KernelPhases &k) {
    auto phaseOfValue = [&](Value v) -> std::optional<unsigned> {
      Operation *def = v.getDefiningOp();
      if (!def)
        def = v.getParentBlock()->getParentOp();
      if (def == kernel.getOperation())
        return std::nullopt; // a kernel argument or attribution
      Operation *top = body.findAncestorOpInBlock(*def);
      if (!top || isa<gpu::AllReduceOp>(top))
        return std::nullopt; // an all_reduce result: block-wide
      return k.phaseOf.lookup(top);
    };
    k.imports.resize(k.phases.size());
    k.exports.resize(k.phases.size());
    for (auto [i, phase] : llvm::enumerate(k.phases))
      for (Operation *op : phase)
        op->walk([&](Operation *inner) {
          for (Value operand : inner->getOperands())
            if (auto p = phaseOfValue(operand); p && *p < i) {
              k.spilled.insert(operand);
              k.imports[i].insert(operand);
              k.exports[*p].insert(operand);
            }
        });
    for (auto [i, cut] : llvm::enumerate(k.cuts))
      if (auto reduce = dyn_cast<gpu::AllReduceOp>(cut)) {
        k.spilled.insert(reduce.getValue());
        k.exports[i].insert(reduce.getValue());
      }
    for (Value v : k.spilled)
      if (!v.getType().isIntOrIndexOrFloat())
        return kernel.emitError("zb-gpu-emulate: a value of type ")
               << v.getType() << " lives across a barrier in kernel '"
               << kernel.getName() << "'";
    return success();
  }

  /// Creates the (empty) emulation function of `kernel` (see emulateKernel)
  /// and, in its entry block, the threads per block and the per-thread
  /// arrays of `k`'s spilled values; fills `s` and maps the kernel's
  /// arguments to the function's in `kernelArgs`.
  func::FuncOp createEmulation(gpu::GPUModuleOp gpuModule,
                               gpu::GPUFuncOp kernel, const KernelPhases &k,
                               EmulationScope &s, IRMapping &kernelArgs) {
    Location loc = s.loc;
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    Type index = b.getIndexType();
    SmallVector<Type> argTypes(6, index);
    llvm::append_range(argTypes, kernel.getArgumentTypes());
    std::string name = ("__zb_emu_" + gpuModule.getName() + "_" +
                        kernel.getName())
                           .str();
    auto fn = func::FuncOp::create(b, loc, name,
                                   b.getFunctionType(argTypes, {}));
    fn.setPrivate();
    Block *entry = fn.addEntryBlock();
    b.setInsertionPointToStart(entry);
    for (int d = 0; d < 3; ++d) {
      s.grid[d] = entry->getArgument(d);
      s.block[d] = entry->getArgument(3 + d);
    }
    s.c0 = cst(b, loc, 0);
    s.c1 = cst(b, loc, 1);
    s.threads = arith::MulIOp::create(
        b, loc, arith::MulIOp::create(b, loc, s.block[0], s.block[1]),
        s.block[2]);
    for (Value v : k.spilled)
      s.spillArray[v] = memref::AllocOp::create(
          b, loc, MemRefType::get({ShapedType::kDynamic}, v.getType()),
          s.threads);
    // The function's arguments only: the entry block's further arguments
    // are workgroup attributions (allocated per block).
    for (unsigned i = 0, e = kernel.getNumArguments(); i < e; ++i)
      kernelArgs.map(kernel.getArgument(i), entry->getArgument(6 + i));
    return fn;
  }

  /// for z, y, x: scf.for over [0, bounds[d]), its induction variable in
  /// ivs[d]; leaves `b` in the innermost loop's body.
  static void loopNest(OpBuilder &b, const EmulationScope &s,
                       const Value *bounds, Value *ivs) {
    for (int d = 2; d >= 0; --d) {
      auto loop = scf::ForOp::create(b, s.loc, s.c0, bounds[d], s.c1);
      b.setInsertionPointToStart(loop.getBody());
      ivs[d] = loop.getInductionVar();
    }
  }

  /// Replaces the coordinate ops in (the regions of) `cloned` by the
  /// emulation's values: the thread's `threadId` (`linear` in its block),
  /// the block's coordinates and the launch's sizes in `s`; `c32` is the
  /// subgroup size.
  static void replaceCoordinates(ArrayRef<Operation *> cloned,
                                 const EmulationScope &s,
                                 const Value *threadId, Value linear,
                                 Value c32) {
    Location loc = s.loc;
    auto dimValue = [&](gpu::Dimension d, const Value *values) {
      return values[static_cast<int>(d)];
    };
    for (Operation *op : cloned) {
      SmallVector<Operation *> idOps;
      op->walk([&](Operation *inner) {
        if (isCoordinateOp(inner))
          idOps.push_back(inner);
      });
      for (Operation *idOp : idOps) {
        OpBuilder ib(idOp);
        Value v =
            llvm::TypeSwitch<Operation *, Value>(idOp)
                .Case([&](gpu::ThreadIdOp o) {
                  return dimValue(o.getDimension(), threadId);
                })
                .Case([&](gpu::BlockIdOp o) {
                  return dimValue(o.getDimension(), s.blockId);
                })
                .Case([&](gpu::BlockDimOp o) {
                  return dimValue(o.getDimension(), s.block);
                })
                .Case([&](gpu::GridDimOp o) {
                  return dimValue(o.getDimension(), s.grid);
                })
                .Case([&](gpu::GlobalIdOp o) -> Value {
                  return arith::AddIOp::create(
                      ib, loc,
                      arith::MulIOp::create(
                          ib, loc, dimValue(o.getDimension(), s.blockId),
                          dimValue(o.getDimension(), s.block)),
                      dimValue(o.getDimension(), threadId));
                })
                .Case([&](gpu::LaneIdOp) -> Value {
                  return arith::RemUIOp::create(ib, loc, linear, c32);
                })
                .Case([&](gpu::SubgroupIdOp) -> Value {
                  return arith::DivUIOp::create(ib, loc, linear, c32);
                })
                .Case([&](gpu::SubgroupSizeOp) { return c32; })
                .Case([&](gpu::NumSubgroupsOp) -> Value {
                  return arith::CeilDivUIOp::create(ib, loc, s.threads, c32);
                });
        idOp->getResult(0).replaceAllUsesWith(v);
        idOp->erase();
      }
    }
  }

  /// Phase `i` of `k` for every thread of the block, at `b` (inside the
  /// grid loops; `b` is left there): a loop nest over the threads that loads
  /// the phase's imports, clones its operations (mapped by `blockScope`),
  /// stores its exports and replaces the coordinate ops.
  void emulatePhase(OpBuilder &b, const EmulationScope &s,
                    const KernelPhases &k, unsigned i,
                    const IRMapping &blockScope) {
    OpBuilder::InsertionGuard guard(b);
    Location loc = s.loc;
    Value threadId[3];
    loopNest(b, s, s.block, threadId);
    Value linear = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(
            b, loc,
            arith::AddIOp::create(
                b, loc, arith::MulIOp::create(b, loc, threadId[2], s.block[1]),
                threadId[1]),
            s.block[0]),
        threadId[0]);
    IRMapping mapping = blockScope;
    for (Value v : k.imports[i])
      mapping.map(v, memref::LoadOp::create(b, loc, s.spillArray.lookup(v),
                                            ValueRange{linear}));
    SmallVector<Operation *> cloned;
    for (Operation *op : k.phases[i])
      cloned.push_back(b.clone(*op, mapping));
    for (Value v : k.exports[i])
      memref::StoreOp::create(b, loc, mapping.lookup(v),
                              s.spillArray.lookup(v), ValueRange{linear});
    Value c32 = cst(b, loc, kSubgroupSize);
    replaceCoordinates(cloned, s, threadId, linear, c32);
  }

  /// The emulation of `kernel`: (gridX, gridY, gridZ, blockX, blockY,
  /// blockZ, kernel arguments...). Loops over the grid's blocks; per block,
  /// allocates the workgroup memory and runs each phase in every thread
  /// (emulatePhase), then the all-reduction that ends it.
  FailureOr<func::FuncOp> emulateKernel(gpu::GPUModuleOp gpuModule,
                                        gpu::GPUFuncOp kernel) {
    if (!kernel.getBody().hasOneBlock())
      return kernel.emitError("zb-gpu-emulate: kernel '")
             << kernel.getName()
             << "' has unstructured control flow (more than one block); "
                "emulate before convert-scf-to-cf";
    if (!kernel.getPrivateAttributions().empty())
      return kernel.emitError("zb-gpu-emulate: kernel '")
             << kernel.getName() << "' has private attributions";
    if (needsLockstep(kernel))
      return emulateLockstep(gpuModule, kernel);
    Block &body = kernel.getBody().front();
    rematerializeCoordinates(body);
    KernelPhases k;
    if (failed(cutPhases(body, k)) || failed(findSpilled(kernel, body, k)))
      return failure();

    EmulationScope s(kernel.getLoc());
    IRMapping kernelArgs;
    func::FuncOp fn = createEmulation(gpuModule, kernel, k, s, kernelArgs);
    Block *entry = &fn.getBody().front();
    OpBuilder b = OpBuilder::atBlockEnd(entry);
    Location loc = s.loc;
    // for bz, by, bx: (a block)
    loopNest(b, s, s.grid, s.blockId);
    SmallVector<Value> workgroupBuffers;
    for (BlockArgument attribution : kernel.getWorkgroupAttributions()) {
      auto type = cast<MemRefType>(attribution.getType());
      if (!type.hasStaticShape())
        return kernel.emitError("zb-gpu-emulate: dynamic workgroup memory");
      Value buffer = memref::AllocOp::create(
          b, loc, MemRefType::get(type.getShape(), type.getElementType()));
      kernelArgs.map(attribution, buffer);
      workgroupBuffers.push_back(buffer);
    }
    IRMapping blockScope = kernelArgs;
    for (unsigned i = 0, e = k.phases.size(); i < e; ++i) {
      emulatePhase(b, s, k, i, blockScope);
      if (i < k.cuts.size())
        if (auto reduce = dyn_cast<gpu::AllReduceOp>(k.cuts[i]))
          blockScope.map(
              reduce.getResult(),
              emulateAllReduce(b, loc, *reduce.getOp(),
                               s.spillArray.lookup(reduce.getValue()),
                               s.threads));
    }
    for (Value buffer : workgroupBuffers)
      memref::DeallocOp::create(b, loc, buffer);
    b.setInsertionPointToEnd(entry);
    for (Value v : k.spilled)
      memref::DeallocOp::create(b, loc, s.spillArray.lookup(v));
    func::ReturnOp::create(b, loc);
    return fn;
  }

  void runOnOperation() override {
    module = getOperation();
    llvm::DenseMap<Operation *, func::FuncOp> emulations;
    for (auto gpuModule :
         llvm::make_early_inc_range(module.getOps<gpu::GPUModuleOp>())) {
      for (auto kernel : gpuModule.getOps<gpu::GPUFuncOp>()) {
        if (!kernel.isKernel())
          continue;
        FailureOr<func::FuncOp> fn = emulateKernel(gpuModule, kernel);
        if (failed(fn))
          return signalPassFailure();
        emulations[kernel] = *fn;
      }
    }
    WalkResult result = module.walk([&](gpu::LaunchFuncOp launch) {
      if (launch.getAsyncToken() || !launch.getAsyncDependencies().empty()) {
        launch.emitError("zb-gpu-emulate: asynchronous gpu.launch_func; "
                         "emulate before gpu-async-region");
        return WalkResult::interrupt();
      }
      auto kernel = SymbolTable::lookupNearestSymbolFrom<gpu::GPUFuncOp>(
          launch, launch.getKernel());
      if (!kernel || !emulations.count(kernel)) {
        launch.emitError("zb-gpu-emulate: no kernel ") << launch.getKernel();
        return WalkResult::interrupt();
      }
      OpBuilder b(launch);
      gpu::KernelDim3 g = launch.getGridSizeOperandValues(),
                      k = launch.getBlockSizeOperandValues();
      SmallVector<Value> operands = {g.x, g.y, g.z, k.x, k.y, k.z};
      llvm::append_range(operands, launch.getKernelOperands());
      announceArguments(b, launch);
      func::CallOp::create(b, launch.getLoc(), emulations[kernel], operands);
      launch.erase();
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return signalPassFailure();
    // The constant globals the kernels read (zb-gpu-sink-constants) are
    // read by the emulations from the host module, where they came from.
    SymbolTable hostSymbols(module);
    for (auto gpuModule :
         llvm::make_early_inc_range(module.getOps<gpu::GPUModuleOp>())) {
      for (auto global :
           llvm::make_early_inc_range(gpuModule.getOps<memref::GlobalOp>()))
        if (!hostSymbols.lookup(global.getSymName())) {
          global->remove();
          hostSymbols.insert(global);
        }
      gpuModule.erase();
    }
    module->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());
  }
};

struct Lockstep {
  ZBGpuEmulatePass &pass;
  Location loc;
  OpBuilder allocs; ///< the entry block, after `threads`
  Value threads, c0, c1, c32;
  Value blockDims[3], gridDims[3], blockIds[3];
  IRMapping uniform;              ///< kernel value -> host value
  DenseMap<Value, Value> lanes;   ///< kernel value -> memref<?xT>
  SmallVector<Value> arrays;      ///< to free at the end

  Lockstep(ZBGpuEmulatePass &pass, Location loc, OpBuilder allocs)
      : pass(pass), loc(loc), allocs(allocs) {}

  Value laneArray(Type type) {
    Value a = memref::AllocOp::create(
        allocs, loc, MemRefType::get({ShapedType::kDynamic}, type), threads);
    arrays.push_back(a);
    return a;
  }

  /// for (t = 0; t < threads; ++t) body(b, t), at `b`.
  void forLanes(OpBuilder &b, function_ref<void(OpBuilder &, Value)> body) {
    scf::ForOp::create(b, loc, c0, threads, c1, ValueRange(),
                       [&](OpBuilder &ib, Location, Value t, ValueRange) {
                         body(ib, t);
                         scf::YieldOp::create(ib, loc);
                       });
  }

  /// `v`'s value in thread `t` (inside a lane loop).
  Value valueAt(OpBuilder &b, Value v, Value t) {
    if (Value u = uniform.lookupOrNull(v))
      return u;
    return memref::LoadOp::create(b, loc, lanes.lookup(v), ValueRange{t});
  }

  /// `v` as a lane array (a uniform value broadcast into a new one).
  Value asLanes(OpBuilder &b, Value v) {
    if (Value a = lanes.lookup(v))
      return a;
    Value a = laneArray(v.getType());
    Value u = uniform.lookup(v);
    forLanes(b, [&](OpBuilder &ib, Value t) {
      memref::StoreOp::create(ib, loc, u, a, ValueRange{t});
    });
    return a;
  }

  bool isUniform(Value v) const { return (bool)uniform.lookupOrNull(v); }

  /// The coordinates of thread `t` of the block.
  Value threadCoordinate(OpBuilder &b, gpu::Dimension d, Value t) {
    Value x = arith::RemUIOp::create(b, loc, t, blockDims[0]);
    if (d == gpu::Dimension::x)
      return x;
    Value yz = arith::DivUIOp::create(b, loc, t, blockDims[0]);
    if (d == gpu::Dimension::y)
      return arith::RemUIOp::create(b, loc, yz, blockDims[1]);
    return arith::DivUIOp::create(b, loc, yz, blockDims[1]);
  }

  /// Thread `t`'s value of a thread coordinate op (thread, lane, subgroup
  /// or global id); null for any other op.
  Value laneCoordinate(OpBuilder &b, Operation *op, Value t) {
    if (auto id = dyn_cast<gpu::ThreadIdOp>(op))
      return threadCoordinate(b, id.getDimension(), t);
    if (isa<gpu::LaneIdOp>(op))
      return arith::RemUIOp::create(b, loc, t, c32);
    if (isa<gpu::SubgroupIdOp>(op))
      return arith::DivUIOp::create(b, loc, t, c32);
    if (auto id = dyn_cast<gpu::GlobalIdOp>(op)) {
      gpu::Dimension d = id.getDimension();
      return arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(b, loc, blockIds[(int)d], blockDims[(int)d]),
          threadCoordinate(b, d, t));
    }
    return Value();
  }

  LogicalResult emulateOp(OpBuilder &b, Operation *op);

  /// Whether `op` is a plain per-thread operation that can share a lane
  /// loop with its neighbours: no region, no collective, a result type a
  /// lane array can hold.
  static bool isPerLane(Operation *op) {
    if (op->getNumRegions() ||
        isa<gpu::ShuffleOp, NVVM::MmaOp, gpu::BarrierOp, gpu::AllReduceOp,
            gpu::SubgroupReduceOp, gpu::BlockIdOp, gpu::BlockDimOp,
            gpu::GridDimOp, gpu::SubgroupSizeOp, LLVM::ExtractValueOp>(op))
      return false;
    return llvm::all_of(op->getResultTypes(), [](Type type) {
      return type.isIntOrIndexOrFloat() || isa<VectorType>(type);
    });
  }

  /// The operations of `block` in order; consecutive per-thread operations
  /// share one loop over the threads (flushRun), so a value used only
  /// inside its run needs no lane array.
  LogicalResult emulateBlock(OpBuilder &b, Block &block) {
    SmallVector<Operation *> run;
    for (Operation &op : block) {
      if (op.hasTrait<OpTrait::IsTerminator>())
        continue;
      bool uniformOp =
          isMemoryEffectFree(&op) && !op.getNumRegions() &&
          !isa<gpu::ThreadIdOp, gpu::LaneIdOp, gpu::SubgroupIdOp,
               gpu::GlobalIdOp>(op) &&
          llvm::all_of(op.getOperands(), [&](Value v) { return isUniform(v); });
      if (isPerLane(&op) && !uniformOp) {
        run.push_back(&op);
        continue;
      }
      flushRun(b, run);
      if (failed(emulateOp(b, &op)))
        return failure();
    }
    flushRun(b, run);
    return success();
  }

  /// One loop over the threads for the operations of `run` (emptied).
  void flushRun(OpBuilder &b, SmallVectorImpl<Operation *> &run) {
    if (run.empty())
      return;
    llvm::SmallPtrSet<Operation *, 16> inRun(run.begin(), run.end());
    Block *block = run.front()->getBlock();
    // Lane arrays for the results used after the run.
    DenseMap<Value, Value> outside;
    for (Operation *op : run)
      for (Value r : op->getResults())
        if (llvm::any_of(r.getUsers(), [&](Operation *user) {
              Operation *top = block->findAncestorOpInBlock(*user);
              return !top || !inRun.contains(top);
            }))
          outside[r] = laneArray(r.getType());
    forLanes(b, [&](OpBuilder &ib, Value t) {
      IRMapping m;
      for (Operation *op : run) {
        if (Value v = laneCoordinate(ib, op, t))
          m.map(op->getResult(0), v);
        else {
          for (Value operand : op->getOperands())
            if (!m.contains(operand))
              m.map(operand, valueAt(ib, operand, t));
          ib.clone(*op, m);
        }
        for (Value r : op->getResults())
          if (Value a = outside.lookup(r))
            memref::StoreOp::create(ib, loc, m.lookup(r), a, ValueRange{t});
      }
    });
    for (auto [r, a] : outside)
      lanes[r] = a;
    run.clear();
  }

  LogicalResult emulateFor(OpBuilder &b, scf::ForOp loop);
  LogicalResult emulateShuffle(OpBuilder &b, gpu::ShuffleOp shuffle);
  LogicalResult emulateMma(OpBuilder &b, NVVM::MmaOp mma);
};

LogicalResult Lockstep::emulateOp(OpBuilder &b, Operation *op) {
  // Coordinates: the block's are uniform, the thread's per lane.
  if (auto id = dyn_cast<gpu::BlockIdOp>(op)) {
    uniform.map(id.getResult(), blockIds[(int)id.getDimension()]);
    return success();
  }
  if (auto dim = dyn_cast<gpu::BlockDimOp>(op)) {
    uniform.map(dim.getResult(), blockDims[(int)dim.getDimension()]);
    return success();
  }
  if (auto dim = dyn_cast<gpu::GridDimOp>(op)) {
    uniform.map(dim.getResult(), gridDims[(int)dim.getDimension()]);
    return success();
  }
  if (isa<gpu::SubgroupSizeOp>(op)) {
    uniform.map(op->getResult(0), c32);
    return success();
  }
  if (isa<gpu::BarrierOp>(op))
    return success(); // every operation ends in lock-step
  if (auto loop = dyn_cast<scf::ForOp>(op))
    return emulateFor(b, loop);
  if (auto shuffle = dyn_cast<gpu::ShuffleOp>(op))
    return emulateShuffle(b, shuffle);
  if (auto mma = dyn_cast<NVVM::MmaOp>(op))
    return emulateMma(b, mma);
  if (auto extract = dyn_cast<LLVM::ExtractValueOp>(op))
    if (extract.getContainer().getDefiningOp<NVVM::MmaOp>())
      return success(); // mapped by emulateMma
  if (op->getNumRegions() || isa<gpu::AllReduceOp, gpu::SubgroupReduceOp>(op))
    return op->emitError("zb-gpu-emulate: '")
           << op->getName() << "' in a lock-step kernel (one with warp "
           << "shuffles or mma.sync) is not emulated";
  for (Type type : op->getResultTypes())
    if (!type.isIntOrIndexOrFloat() && !isa<VectorType>(type))
      return op->emitError("zb-gpu-emulate: a value of type ")
             << type << " in a lock-step kernel";
  // Computed once when it depends on no thread and reads no memory.
  if (isMemoryEffectFree(op) && llvm::all_of(op->getOperands(), [&](Value v) {
        return isUniform(v);
      })) {
    b.clone(*op, uniform);
    return success();
  }
  SmallVector<Value> results;
  for (Type type : op->getResultTypes())
    results.push_back(laneArray(type));
  forLanes(b, [&](OpBuilder &ib, Value t) {
    IRMapping m;
    for (Value v : op->getOperands())
      m.map(v, valueAt(ib, v, t));
    Operation *copy = ib.clone(*op, m);
    for (auto [r, a] : llvm::zip(copy->getResults(), results))
      memref::StoreOp::create(ib, loc, r, a, ValueRange{t});
  });
  for (auto [r, a] : llvm::zip(op->getResults(), results))
    lanes[r] = a;
  return success();
}

LogicalResult Lockstep::emulateFor(OpBuilder &b, scf::ForOp loop) {
  for (Value bound : {loop.getLowerBound(), loop.getUpperBound(),
                      loop.getStep()})
    if (!isUniform(bound))
      return loop.emitError("zb-gpu-emulate: a loop whose bounds differ "
                            "between threads, in a lock-step kernel");
  // Each iteration argument in a lane array of its own.
  SmallVector<Value> state;
  for (auto [arg, init] :
       llvm::zip(loop.getRegionIterArgs(), loop.getInitArgs())) {
    Value a = laneArray(arg.getType());
    forLanes(b, [&](OpBuilder &ib, Value t) {
      memref::StoreOp::create(ib, loc, valueAt(ib, init, t), a,
                              ValueRange{t});
    });
    state.push_back(a);
    lanes[arg] = a;
  }
  auto host = scf::ForOp::create(b, loc, uniform.lookup(loop.getLowerBound()),
                                 uniform.lookup(loop.getUpperBound()),
                                 uniform.lookup(loop.getStep()));
  uniform.map(loop.getInductionVar(), host.getInductionVar());
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(host.getBody()->getTerminator());
    if (failed(emulateBlock(b, *loop.getBody())))
      return failure();
    // The yielded values into the state: per lane, all loads before the
    // stores, so a yield that permutes the arguments is right.
    auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
    forLanes(b, [&](OpBuilder &ib, Value t) {
      SmallVector<Value> values;
      for (Value v : yield.getOperands())
        values.push_back(valueAt(ib, v, t));
      for (auto [v, a] : llvm::zip(values, state))
        memref::StoreOp::create(ib, loc, v, a, ValueRange{t});
    });
  }
  for (auto [r, a] : llvm::zip(loop.getResults(), state))
    lanes[r] = a;
  return success();
}

LogicalResult Lockstep::emulateShuffle(OpBuilder &b, gpu::ShuffleOp shuffle) {
  if (shuffle.getMode() != gpu::ShuffleMode::XOR)
    return shuffle.emitError("zb-gpu-emulate: only xor shuffles are "
                             "emulated");
  Value value = asLanes(b, shuffle.getValue());
  Value result = laneArray(shuffle.getShuffleResult().getType());
  Value valid = laneArray(b.getI1Type());
  forLanes(b, [&](OpBuilder &ib, Value t) {
    Type index = ib.getIndexType();
    auto toIndex = [&](Value v) {
      return arith::IndexCastUIOp::create(ib, loc, index, v).getResult();
    };
    Value offset = toIndex(valueAt(ib, shuffle.getOffset(), t));
    Value width = toIndex(valueAt(ib, shuffle.getWidth(), t));
    Value laneId = arith::RemUIOp::create(ib, loc, t, c32);
    Value base = arith::SubIOp::create(ib, loc, t, laneId);
    Value partnerLane = arith::XOrIOp::create(ib, loc, laneId, offset);
    // Upstream's lowering: the partner is valid when it is below `width`.
    Value ok = arith::CmpIOp::create(ib, loc, arith::CmpIPredicate::ult,
                                     partnerLane, width);
    Value partner = arith::SelectOp::create(
        ib, loc, ok, arith::AddIOp::create(ib, loc, base, partnerLane), t);
    Value v = memref::LoadOp::create(ib, loc, value, ValueRange{partner});
    memref::StoreOp::create(ib, loc, v, result, ValueRange{t});
    memref::StoreOp::create(ib, loc, ok, valid, ValueRange{t});
  });
  lanes[shuffle.getShuffleResult()] = result;
  lanes[shuffle.getValid()] = valid;
  return success();
}

LogicalResult Lockstep::emulateMma(OpBuilder &b, NVVM::MmaOp mma) {
  auto shape = mma.getShapeAttr();
  auto types = mma.getMultiplicandAPtxType();
  if (shape.getM() != 16 || shape.getN() != 8 || shape.getK() != 16 ||
      !types || *types != NVVM::MMATypes::bf16 ||
      mma.getMultiplicandBPtxType() != NVVM::MMATypes::bf16 ||
      mma.getLayoutA() != NVVM::MMALayout::row ||
      mma.getLayoutB() != NVVM::MMALayout::col ||
      mma.getOperandA().size() != 4 || mma.getOperandB().size() != 2 ||
      mma.getOperandC().size() != 4 ||
      !mma.getOperandC()[0].getType().isF32())
    return mma.emitError("zb-gpu-emulate: only mma.sync m16n8k16 row.col "
                         "with bfloat16 operands and a float32 "
                         "accumulator is emulated");
  SmallVector<Value> args;
  for (Value v : mma->getOperands())
    args.push_back(asLanes(b, v));
  SmallVector<Value> d;
  for (int i = 0; i < 4; ++i) {
    d.push_back(laneArray(b.getF32Type()));
    args.push_back(d.back());
  }
  args.push_back(threads);
  func::CallOp::create(b, loc, pass.mmaFunction(loc), args);
  for (Operation *user : mma->getUsers()) {
    auto extract = dyn_cast<LLVM::ExtractValueOp>(user);
    if (!extract || extract.getPosition().size() != 1)
      return user->emitError("zb-gpu-emulate: an mma.sync result used "
                             "other than by llvm.extractvalue");
    lanes[extract.getResult()] = d[extract.getPosition()[0]];
  }
  return success();
}

FailureOr<func::FuncOp>
ZBGpuEmulatePass::emulateLockstep(gpu::GPUModuleOp gpuModule,
                                  gpu::GPUFuncOp kernel) {
  Location loc = kernel.getLoc();
  if (!kernel.getPrivateAttributions().empty())
    return kernel.emitError("zb-gpu-emulate: kernel '")
           << kernel.getName() << "' has private attributions";
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  SmallVector<Type> argTypes(6, b.getIndexType());
  llvm::append_range(argTypes, kernel.getArgumentTypes());
  std::string name =
      ("__zb_emu_" + gpuModule.getName() + "_" + kernel.getName()).str();
  auto fn = func::FuncOp::create(b, loc, name, b.getFunctionType(argTypes, {}));
  fn.setPrivate();
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Lockstep ls(*this, loc, b);
  ls.c0 = cst(b, loc, 0);
  ls.c1 = cst(b, loc, 1);
  ls.c32 = cst(b, loc, kSubgroupSize);
  for (int d = 0; d < 3; ++d) {
    ls.gridDims[d] = entry->getArgument(d);
    ls.blockDims[d] = entry->getArgument(3 + d);
  }
  ls.threads = arith::MulIOp::create(
      b, loc, arith::MulIOp::create(b, loc, ls.blockDims[0], ls.blockDims[1]),
      ls.blockDims[2]);
  for (unsigned i = 0, e = kernel.getNumArguments(); i < e; ++i)
    ls.uniform.map(kernel.getArgument(i), entry->getArgument(6 + i));
  EmulationScope s(loc);
  s.c0 = ls.c0;
  s.c1 = ls.c1;
  for (int d = 0; d < 3; ++d)
    s.grid[d] = ls.gridDims[d];
  loopNest(b, s, s.grid, ls.blockIds);
  // Lane arrays are allocated before the grid loops (the next operation).
  ls.allocs.setInsertionPoint(ls.threads.getDefiningOp()->getNextNode());
  SmallVector<Value> workgroupBuffers;
  for (BlockArgument attribution : kernel.getWorkgroupAttributions()) {
    auto type = cast<MemRefType>(attribution.getType());
    if (!type.hasStaticShape())
      return kernel.emitError("zb-gpu-emulate: dynamic workgroup memory");
    Value buffer = memref::AllocOp::create(
        b, loc, MemRefType::get(type.getShape(), type.getElementType()));
    ls.uniform.map(attribution, buffer);
    workgroupBuffers.push_back(buffer);
  }
  if (failed(ls.emulateBlock(b, kernel.getBody().front())))
    return failure();
  for (Value buffer : workgroupBuffers)
    memref::DeallocOp::create(b, loc, buffer);
  b.setInsertionPointToEnd(entry);
  for (Value a : ls.arrays)
    memref::DeallocOp::create(b, loc, a);
  func::ReturnOp::create(b, loc);
  return fn;
}

} // namespace
