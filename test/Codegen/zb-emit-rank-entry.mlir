// RUN: zb-opt %s -zb-emit-rank-entry | FileCheck %s
// RUN: not zb-opt %s -zb-emit-rank-entry="step-function=missing" 2>&1 | FileCheck %s --check-prefix=MISSING

// zb_rank_main(void **argv) loads argv[i] and forwards it to the step
// function's C interface.
// CHECK-LABEL: llvm.func @zb_rank_main(%arg0: !llvm.ptr)
// CHECK: %[[S0:.*]] = llvm.getelementptr %arg0[0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[A0:.*]] = llvm.load %[[S0]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[S1:.*]] = llvm.getelementptr %arg0[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[A1:.*]] = llvm.load %[[S1]] : !llvm.ptr -> !llvm.ptr
// CHECK: llvm.call @_mlir_ciface_zb_rank0_step(%[[A0]], %[[A1]])
// CHECK: llvm.return
// MISSING: error: zb-emit-rank-entry: no C interface of a step function found
module {
  llvm.func @_mlir_ciface_zb_rank0_step(%a: !llvm.ptr, %b: !llvm.ptr) {
    llvm.return
  }
}
