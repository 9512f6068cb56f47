// RUN: zb-opt %s --split-input-file --zb-gpu-emulate --canonicalize --verify-diagnostics | FileCheck %s

// zb-gpu-emulate: every kernel becomes a host function that loops over the
// grid's blocks and, per block, over the threads once per phase (phases are
// cut at gpu.barrier and gpu.all_reduce); launches become calls, each after
// its memref arguments are announced to the runtime.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // No barrier: one phase; thread and block ids are the loop indices.
    gpu.func @scale(%x: memref<1000xf32>, %n: index) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %base = arith.muli %bid, %bdim : index
      %i = arith.addi %base, %tid : index
      %in = arith.cmpi ult, %i, %n : index
      scf.if %in {
        %v = memref.load %x[%i] : memref<1000xf32>
        %two = arith.constant 2.0 : f32
        %w = arith.mulf %v, %two : f32
        memref.store %w, %x[%i] : memref<1000xf32>
      }
      gpu.return
    }
    // A block reduction: each thread's partial is kept per thread, the
    // all-reduce combines them (upstream's butterfly, per 32-lane subgroup
    // and then across subgroups), thread 0 stores the total.
    gpu.func @row_sum(%x: memref<8x100xf32>, %y: memref<8xf32>) kernel {
      %row = gpu.block_id x
      %tid = gpu.thread_id x
      %c100 = arith.constant 100 : index
      %c128 = arith.constant 128 : index
      %zero = arith.constant -0.0 : f32
      %p = scf.for %r = %tid to %c100 step %c128 iter_args(%acc = %zero) -> (f32) {
        %v = memref.load %x[%row, %r] : memref<8x100xf32>
        %s = arith.addf %v, %acc : f32
        scf.yield %s : f32
      }
      %t = gpu.all_reduce add %p uniform {} : (f32) -> f32
      %c0 = arith.constant 0 : index
      %first = arith.cmpi eq, %tid, %c0 : index
      scf.if %first {
        memref.store %t, %y[%row] : memref<8xf32>
      }
      gpu.return
    }
    // Workgroup memory and a barrier: every thread stores before any loads.
    gpu.func @reverse(%x: memref<64xf32>) workgroup(%tile: memref<64xf32, #gpu.address_space<workgroup>>) kernel {
      %tid = gpu.thread_id x
      %v = memref.load %x[%tid] : memref<64xf32>
      memref.store %v, %tile[%tid] : memref<64xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %c63 = arith.constant 63 : index
      %j = arith.subi %c63, %tid : index
      %w = memref.load %tile[%j] : memref<64xf32, #gpu.address_space<workgroup>>
      memref.store %w, %x[%tid] : memref<64xf32>
      gpu.return
    }
  }
  func.func @main(%x: memref<1000xf32>, %a: memref<8x100xf32>, %s: memref<8xf32>, %r: memref<64xf32>) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %c256 = arith.constant 256 : index
    %c1000 = arith.constant 1000 : index
    gpu.launch_func @kernels::@scale blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1) args(%x : memref<1000xf32>, %c1000 : index)
    gpu.launch_func @kernels::@row_sum blocks in (%c8, %c1, %c1) threads in (%c128, %c1, %c1) args(%a : memref<8x100xf32>, %s : memref<8xf32>)
    gpu.launch_func @kernels::@reverse blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%r : memref<64xf32>)
    return
  }
}

// CHECK-LABEL: module {
// CHECK-NOT:     gpu.module
// CHECK:         func.func @main(%[[X:.*]]: memref<1000xf32>, %[[A:.*]]: memref<8x100xf32>, %[[S:.*]]: memref<8xf32>, %[[R:.*]]: memref<64xf32>)
// CHECK:           call @__zb_emu_kernels_scale(%c4, %c1, %c1, %c256, %c1, %c1, %[[X]], %c1000)
// Before a launch, each memref argument's aligned pointer goes to the
// runtime with the kernel's name and the argument's index (under the CUDA
// backend the driver stand-in checks that it is device memory).
// CHECK:           %[[RN:.*]] = memref.get_global @__zb_emu_name_kernels_row_sum : memref<8xi8>
// CHECK:           %[[RNP:.*]] = memref.extract_aligned_pointer_as_index %[[RN]]
// CHECK:           %[[NAME:.*]] = arith.index_cast %[[RNP]] : index to i64
// CHECK:           %[[AP:.*]] = memref.extract_aligned_pointer_as_index %[[A]]
// CHECK:           %[[API:.*]] = arith.index_cast %[[AP]] : index to i64
// CHECK:           call @zbrt_cuda_emulated_kernel_argument(%[[NAME]], %c0_i64, %[[API]])
// CHECK:           %[[SP:.*]] = memref.extract_aligned_pointer_as_index %[[S]]
// CHECK:           %[[SPI:.*]] = arith.index_cast %[[SP]] : index to i64
// CHECK:           call @zbrt_cuda_emulated_kernel_argument(%[[NAME]], %c1_i64, %[[SPI]])
// CHECK:           call @__zb_emu_kernels_row_sum(%c8, %c1, %c1, %c128, %c1, %c1, %[[A]], %[[S]])
// CHECK:           call @__zb_emu_kernels_reverse(%c1, %c1, %c1, %c64, %c1, %c1, %[[R]])

// CHECK-LABEL: func.func private @__zb_emu_kernels_scale(
// CHECK-SAME:      %[[GX:[a-z0-9]+]]: index, %[[GY:[a-z0-9]+]]: index, %[[GZ:[a-z0-9]+]]: index, %[[BX:[a-z0-9]+]]: index, %[[BY:[a-z0-9]+]]: index, %[[BZ:[a-z0-9]+]]: index, %[[KX:.*]]: memref<1000xf32>, %[[N:.*]]: index)
// CHECK:         scf.for %{{.*}} = %c0 to %[[GZ]]
// CHECK:           scf.for %{{.*}} = %c0 to %[[GY]]
// CHECK:             scf.for %[[BID:.*]] = %c0 to %[[GX]]
// CHECK:               scf.for %{{.*}} = %c0 to %[[BZ]]
// CHECK:                 scf.for %{{.*}} = %c0 to %[[BY]]
// CHECK:                   scf.for %[[TID:.*]] = %c0 to %[[BX]]
// CHECK:                     %[[BASE:.*]] = arith.muli %[[BID]], %[[BX]]
// CHECK:                     %[[I:.*]] = arith.addi %[[BASE]], %[[TID]]
// CHECK:                     arith.cmpi ult, %[[I]], %[[N]]
// CHECK:                       memref.load %[[KX]][%[[I]]]

// CHECK-LABEL: func.func private @__zb_emu_kernels_row_sum(
// CHECK-SAME:      %[[BX:arg3]]: index, %[[BY:arg4]]: index, %[[BZ:arg5]]: index,
// CHECK:         %[[T0:.*]] = arith.muli %[[BX]], %[[BY]]
// CHECK:         %[[THREADS:.*]] = arith.muli %[[T0]], %[[BZ]]
// CHECK:         %[[PARTIALS:.*]] = memref.alloc(%[[THREADS]]) : memref<?xf32>
// Phase 1: every thread's partial sum, stored at its linear index.
// CHECK:                   scf.for %[[TID:.*]] = %c0 to %[[BX]]
// CHECK:                     %[[P:.*]] = scf.for
// CHECK:                     memref.store %[[P]], %[[PARTIALS]][%{{.*}}]
// The all-reduce: each 32-lane subgroup, then the subgroups' results.
// CHECK:               %[[NSG:.*]] = arith.ceildivui %[[THREADS]], %c32
// CHECK:               scf.for %[[SG:.*]] = %c0 to %[[NSG]]
// CHECK:                 func.call @__zb_emu_subgroup_reduce_add_f32(%[[PARTIALS]],
// CHECK:               %[[TOTAL:.*]] = func.call @__zb_emu_subgroup_reduce_add_f32(%{{.*}}, %c0, %[[NSG]])
// Phase 2: thread 0 stores the total.
// CHECK:                   scf.for %[[TID2:.*]] = %c0 to %[[BX]]
// CHECK:                     arith.cmpi eq, %[[TID2]], %c0
// CHECK:                       memref.store %[[TOTAL]]
// CHECK:         memref.dealloc %[[PARTIALS]]

// CHECK-LABEL: func.func private @__zb_emu_subgroup_reduce_add_f32(
// CHECK-SAME:      %[[V:.*]]: memref<?xf32>, %[[BASE:.*]]: index, %[[WIDTH:.*]]: index) -> f32
// CHECK:         %[[ACTIVE:.*]] = arith.minui %[[WIDTH]], %c32
// XOR butterfly, offsets 1, 2, 4, 8, 16; accumulate(own, partner) when the
// partner lane is active.
// CHECK:         scf.for %[[L:.*]] = %c0 to %[[ACTIVE]]
// CHECK:           %[[PARTNER:.*]] = arith.xori %[[L]], %c1
// CHECK:           %[[OWN:.*]] = memref.load %{{.*}}[%[[L]]]
// CHECK:           %[[VALID:.*]] = arith.cmpi ult, %[[PARTNER]], %[[ACTIVE]]
// CHECK:           %[[OTHER:.*]] = memref.load %{{.*}}[%[[PARTNER]]]
// CHECK:           %[[SUM:.*]] = arith.addf %[[OWN]], %[[OTHER]]
// CHECK:           arith.select %[[VALID]], %[[SUM]], %[[OWN]]
// CHECK:         arith.xori %{{.*}}, %c2
// CHECK:         arith.xori %{{.*}}, %c4
// CHECK:         arith.xori %{{.*}}, %c8
// CHECK:         arith.xori %{{.*}}, %c16

// Workgroup memory is allocated per block; the barrier splits the threads'
// loop in two.
// CHECK-LABEL: func.func private @__zb_emu_kernels_reverse(
// CHECK:             %[[TILE:.*]] = memref.alloc() : memref<64xf32>
// CHECK:                 scf.for %[[T1:.*]] = %c0 to %arg3
// CHECK:                   memref.store %{{.*}}, %[[TILE]][%[[T1]]]
// CHECK:                 scf.for %[[T2:.*]] = %c0 to %arg3
// CHECK:                   %[[J:.*]] = arith.subi %c63, %[[T2]]
// CHECK:                   memref.load %[[TILE]][%[[J]]]
// CHECK:             memref.dealloc %[[TILE]]

// CHECK:         func.func private @zbrt_cuda_emulated_kernel_argument(i64, i64, i64)
// CHECK:         memref.global "private" constant @__zb_emu_name_kernels_row_sum : memref<8xi8> = dense<[114, 111, 119, 95, 115, 117, 109, 0]>

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @nested_barrier(%x: memref<64xf32>) kernel {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %first = arith.cmpi eq, %tid, %c0 : index
      scf.if %first {
        // expected-error @below {{zb-gpu-emulate: 'gpu.barrier' inside control flow (only top-level barriers and all-reductions are emulated)}}
        gpu.barrier
      }
      gpu.return
    }
  }
}

// -----

// A kernel with warp collectives (gpu.shuffle, nvvm.mma.sync) runs in
// lock-step: each value a per-thread array, each operation a loop over the
// block's threads; the shuffle reads its partner lane's value.
// CHECK-LABEL: func.func private @__zb_emu_kernels_shuffle(
// CHECK: memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step
// CHECK: arith.xori
// CHECK: arith.cmpi ult
// CHECK: memref.load %{{.*}}[%{{.*}}] : memref<?xf32>
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @shuffle(%x: memref<64xf32>) kernel {
      %tid = gpu.thread_id x
      %v = memref.load %x[%tid] : memref<64xf32>
      %c1 = arith.constant 1 : i32
      %c32 = arith.constant 32 : i32
      %s, %ok = gpu.shuffle xor %v, %c1, %c32 : f32
      memref.store %s, %x[%tid] : memref<64xf32>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @shuffle_down(%x: memref<64xf32>) kernel {
      %tid = gpu.thread_id x
      %v = memref.load %x[%tid] : memref<64xf32>
      %c1 = arith.constant 1 : i32
      %c32 = arith.constant 32 : i32
      // expected-error @below {{zb-gpu-emulate: only xor shuffles are emulated}}
      %s, %ok = gpu.shuffle down %v, %c1, %c32 : f32
      memref.store %s, %x[%tid] : memref<64xf32>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @divergent_loop(%x: memref<64xf32>) kernel {
      %tid = gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %v = memref.load %x[%tid] : memref<64xf32>
      // expected-error @below {{zb-gpu-emulate: a loop whose bounds differ between threads, in a lock-step kernel}}
      %r = scf.for %i = %c0 to %tid step %c1 iter_args(%a = %v) -> f32 {
        %w = arith.constant 32 : i32
        %o = arith.constant 1 : i32
        %s, %ok = gpu.shuffle xor %a, %o, %w : f32
        scf.yield %s : f32
      }
      memref.store %r, %x[%tid] : memref<64xf32>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @branch(%x: memref<64xf32>) kernel {
      %tid = gpu.thread_id x
      %v = memref.load %x[%tid] : memref<64xf32>
      %c1 = arith.constant 1 : i32
      %c32 = arith.constant 32 : i32
      %s, %ok = gpu.shuffle xor %v, %c1, %c32 : f32
      // expected-error @below {{zb-gpu-emulate: 'scf.if' in a lock-step kernel (one with warp shuffles or mma.sync) is not emulated}}
      scf.if %ok {
        memref.store %s, %x[%tid] : memref<64xf32>
      }
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @mma_f16(%x: memref<64xi32>, %y: memref<64xf16>) kernel {
      %tid = gpu.thread_id x
      %c = memref.load %y[%tid] : memref<64xf16>
      %cv = vector.broadcast %c : f16 to vector<2xf16>
      // expected-error @below {{zb-gpu-emulate: only mma.sync m16n8k16 row.col with bfloat16 operands and a float32 accumulator is emulated}}
      %d = nvvm.mma.sync A[%cv, %cv, %cv, %cv] B[%cv, %cv] C[%cv, %cv]
             {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>,
              multiplicandAPtxType = #nvvm.mma_type<f16>, multiplicandBPtxType = #nvvm.mma_type<f16>,
              shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, vector<2xf16>) -> !llvm.struct<(vector<2xf16>, vector<2xf16>)>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // expected-error @+1 {{zb-gpu-emulate: a value of type 'memref<1xf32, strided<[1], offset: ?>>' lives across a barrier in kernel 'view_across_barrier'}}
    gpu.func @view_across_barrier(%x: memref<64xf32>) kernel {
      %c0 = arith.constant 0 : index
      %tid = gpu.thread_id x
      %v = memref.subview %x[%tid] [1] [1] : memref<64xf32> to memref<1xf32, strided<[1], offset: ?>>
      gpu.barrier
      %f = arith.constant 1.0 : f32
      memref.store %f, %v[%c0] : memref<1xf32, strided<[1], offset: ?>>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%x: memref<64xf32>) kernel {
      gpu.return
    }
  }
  func.func @async(%x: memref<64xf32>) {
    %c1 = arith.constant 1 : index
    %t = gpu.wait async
    // expected-error @below {{zb-gpu-emulate: asynchronous gpu.launch_func; emulate before gpu-async-region}}
    %d = gpu.launch_func async [%t] @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<64xf32>)
    return
  }
}
