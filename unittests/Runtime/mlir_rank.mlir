// A rank program written in upstream MLIR (memref + scf) and lowered with
// mlir-opt / mlir-translate / llc at build time: checks that the runtime's
// memref entry points (zbrt_*_memref, expanded by func-to-llvm) and zb-run's
// memref descriptors (argv -> _mlir_ciface_step) agree with what MLIR emits.
//
// One rank, 2 microbatches of 2 samples of 3 features; W is 3x2:
//   F(j): Y = X_j * W (zbrt_sgemm_memref); Y is sent to this same rank and
//         received back (zbrt_send_memref / zbrt_recv_memref, tag
//         zbrt_tag(0, 0, j)); loss += sum(received Y)
//   W(j): G = X_j^T * ones(2x2) (transA); grad W += G
// The step function is called `step` on purpose: glibc exports a `step`
// too, and zb-run must load rank programs so that their own symbols win
// (RTLD_DEEPBIND).
!mat = memref<?x?xf32, strided<[?, ?], offset: ?>>
!vec = memref<?xf32, strided<[?], offset: ?>>
module {
  func.func private @zbrt_sgemm_memref(!mat, !mat, !mat, i32, i32)
  func.func private @zbrt_send_memref(!vec, i32, i32)
  func.func private @zbrt_recv_memref(!vec, i32, i32)
  func.func private @zbrt_action_begin(i32, i32, i32)
  func.func private @zbrt_action_end(i32, i32, i32)

  func.func @step(%w: memref<3x2xf32>, %gw: memref<3x2xf32>,
                  %x: memref<2x2x3xf32>, %loss: memref<f32>)
      attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %kF = arith.constant 0 : i32
    %kW = arith.constant 2 : i32
    %i0 = arith.constant 0 : i32
    %i1 = arith.constant 1 : i32
    %i2048 = arith.constant 2048 : i32
    %f0 = arith.constant 0.0 : f32
    %f1 = arith.constant 1.0 : f32
    %y = memref.alloc() : memref<2x2xf32>
    %ones = memref.alloc() : memref<2x2xf32>
    %g = memref.alloc() : memref<3x2xf32>
    %r = memref.alloc() : memref<4xf32>
    scf.for %a = %c0 to %c2 step %c1 {
      scf.for %b = %c0 to %c2 step %c1 {
        memref.store %f1, %ones[%a, %b] : memref<2x2xf32>
      }
    }
    %wm = memref.cast %w : memref<3x2xf32> to !mat
    %ym = memref.cast %y : memref<2x2xf32> to !mat
    %onesm = memref.cast %ones : memref<2x2xf32> to !mat
    %gm = memref.cast %g : memref<3x2xf32> to !mat
    %yflat = memref.collapse_shape %y [[0, 1]]
        : memref<2x2xf32> into memref<4xf32>
    %yv = memref.cast %yflat : memref<4xf32> to !vec
    %rv = memref.cast %r : memref<4xf32> to !vec
    scf.for %j = %c0 to %c2 step %c1 {
      %ji = arith.index_cast %j : index to i32
      %tag = arith.muli %ji, %i2048 : i32
      %xj = memref.subview %x[%j, 0, 0] [1, 2, 3] [1, 1, 1]
          : memref<2x2x3xf32> to memref<2x3xf32, strided<[3, 1], offset: ?>>
      %xm = memref.cast %xj
          : memref<2x3xf32, strided<[3, 1], offset: ?>> to !mat

      func.call @zbrt_action_begin(%kF, %i0, %ji) : (i32, i32, i32) -> ()
      func.call @zbrt_sgemm_memref(%xm, %wm, %ym, %i0, %i0)
          : (!mat, !mat, !mat, i32, i32) -> ()
      func.call @zbrt_send_memref(%yv, %i0, %tag) : (!vec, i32, i32) -> ()
      func.call @zbrt_recv_memref(%rv, %i0, %tag) : (!vec, i32, i32) -> ()
      %sum = scf.for %k = %c0 to %c4 step %c1 iter_args(%acc = %f0) -> (f32) {
        %v = memref.load %r[%k] : memref<4xf32>
        %n = arith.addf %acc, %v : f32
        scf.yield %n : f32
      }
      %l = memref.load %loss[] : memref<f32>
      %l2 = arith.addf %l, %sum : f32
      memref.store %l2, %loss[] : memref<f32>
      func.call @zbrt_action_end(%kF, %i0, %ji) : (i32, i32, i32) -> ()

      func.call @zbrt_action_begin(%kW, %i0, %ji) : (i32, i32, i32) -> ()
      func.call @zbrt_sgemm_memref(%xm, %onesm, %gm, %i1, %i0)
          : (!mat, !mat, !mat, i32, i32) -> ()
      scf.for %a = %c0 to %c3 step %c1 {
        scf.for %b = %c0 to %c2 step %c1 {
          %gv = memref.load %g[%a, %b] : memref<3x2xf32>
          %acc = memref.load %gw[%a, %b] : memref<3x2xf32>
          %n = arith.addf %acc, %gv : f32
          memref.store %n, %gw[%a, %b] : memref<3x2xf32>
        }
      }
      func.call @zbrt_action_end(%kW, %i0, %ji) : (i32, i32, i32) -> ()
    }
    memref.dealloc %y : memref<2x2xf32>
    memref.dealloc %ones : memref<2x2xf32>
    memref.dealloc %g : memref<3x2xf32>
    memref.dealloc %r : memref<4xf32>
    return
  }
}
