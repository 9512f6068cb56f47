//===- Symbols.h - zbrt functions that generated code calls -----*- C++ -*-===//
//
// The one list of the runtime functions that compiler-generated code calls by
// name, and of the entry point that zb-run looks up in a rank program. The
// compiler (lib/Conversion, lib/Transforms) takes the names from here instead
// of writing string literals.
//
// The tie to zbrt.h: every name is the stringified identifier of a function
// that zbrt.h declares, and a static_assert below checks that the identifier
// names a function declared there. Renaming a function in zbrt.h without
// renaming it here (or the other way round) is a compile error in every
// translation unit that includes this header. The argument types the compiler
// passes are described next to each declaration in zbrt.h (the "Memref forms"
// use MLIR's expanded memref calling convention).
//
// No MLIR dependency; C++17.
//
//===----------------------------------------------------------------------===//
#ifndef ZBRT_SYMBOLS_H
#define ZBRT_SYMBOLS_H

#include "zbrt/zbrt.h"

#include <type_traits>

/// X(Name, function): the zbrt.h functions that generated code calls.
///  - zbrt_sgemm_memref: f32 matmul (convert-zb-to-runtime, zb.matmul);
///  - zbrt_sgemm_batched_memref: f32 batched matmul (zb.batch_matmul, batch
///    dimensions collapsed into one);
///  - zbrt_gemm_bf16_memref, zbrt_gemm_bf16_batched_memref: the same
///    matmuls under --precision bf16 (bf16 operands and result, float32
///    accumulation);
///  - zbrt_{send,recv}_memref[_i64|_i32|_bf16]: zb.send / zb.recv of f32,
///    i64, i32, bf16 tensors (convert-zb-to-runtime);
///  - zbrt_action_{begin,end}: trace markers around every scheduled action
///    (zb-lower-pipeline);
///  - zbrt_validate_optimizer: the post-validation point of a step
///    (zb-lower-pipeline, from zb-schedule's validate_before);
///  - zbrt_gradients_ready: gradients final for the step (zb-lower-pipeline;
///    the data-parallel all-reduce of their bucket starts there);
///  - zbrt_cuda_emulated_kernel_argument: the device-memory check of each
///    argument of an emulated kernel launch (zb-gpu-emulate, --target
///    cuda-emu).
#define ZBRT_GENERATED_CODE_FUNCTIONS(X)                                       \
  X(SgemmMemref, zbrt_sgemm_memref)                                            \
  X(SgemmBatchedMemref, zbrt_sgemm_batched_memref)                             \
  X(GemmBf16Memref, zbrt_gemm_bf16_memref)                                     \
  X(GemmBf16BatchedMemref, zbrt_gemm_bf16_batched_memref)                      \
  X(SendMemref, zbrt_send_memref)                                              \
  X(RecvMemref, zbrt_recv_memref)                                              \
  X(SendMemrefI64, zbrt_send_memref_i64)                                       \
  X(RecvMemrefI64, zbrt_recv_memref_i64)                                       \
  X(SendMemrefI32, zbrt_send_memref_i32)                                       \
  X(RecvMemrefI32, zbrt_recv_memref_i32)                                       \
  X(SendMemrefBf16, zbrt_send_memref_bf16)                                     \
  X(RecvMemrefBf16, zbrt_recv_memref_bf16)                                     \
  X(ActionBegin, zbrt_action_begin)                                            \
  X(ActionEnd, zbrt_action_end)                                                \
  X(ValidateOptimizer, zbrt_validate_optimizer)                                \
  X(GradientsReady, zbrt_gradients_ready)                                      \
  X(CudaEmulatedKernelArgument, zbrt_cuda_emulated_kernel_argument)

namespace zbrt {
namespace symbols {

/// The prefix of zbrt's own functions, every name of the list above among
/// them (checked below; MLIR's _mlir_memref_to_llvm_* allocator hooks that
/// zbrt.h also defines keep MLIR's names): the compiler tells a runtime call
/// from a call of generated code by it (zb-gpu-check-device-memory).
inline constexpr const char FunctionPrefix[] = "zbrt_";

/// Whether `name` starts with FunctionPrefix.
constexpr bool hasFunctionPrefix(const char *name) {
  for (const char *p = FunctionPrefix; *p; ++p, ++name)
    if (*name != *p)
      return false;
  return true;
}

#define ZBRT_DEFINE_SYMBOL_NAME(Name, function)                                \
  static_assert(std::is_function<decltype(::function)>::value,                 \
                #function " must be a function declared in zbrt/zbrt.h");      \
  static_assert(hasFunctionPrefix(#function),                                  \
                #function " must start with zbrt_ (FunctionPrefix)");          \
  inline constexpr const char Name[] = #function;
ZBRT_GENERATED_CODE_FUNCTIONS(ZBRT_DEFINE_SYMBOL_NAME)
#undef ZBRT_DEFINE_SYMBOL_NAME

/// The entry point of a rank program, `void zb_rank_main(void **argv)`:
/// defined by the generated code (zb-emit-rank-entry), named in plan.json
/// (ranks[r].entry) and called by zb-run through dlsym. argv[i] points to
/// the memref descriptor of step argument i (docs/plan-json.md).
inline constexpr const char RankEntry[] = "zb_rank_main";
using RankEntryFn = void (*)(void **argv);

/// The NUL-terminated JSON string a rank program from zb-compile exports:
/// what it was compiled for (zb::formats::rankFingerprint); zb-run checks it
/// against plan.json before running.
inline constexpr const char RankFingerprint[] = "zb_rank_fingerprint";

} // namespace symbols
} // namespace zbrt

#endif // ZBRT_SYMBOLS_H
