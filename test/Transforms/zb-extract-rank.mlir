// RUN: zb-opt %s -split-input-file -zb-extract-rank=rank=0 | FileCheck %s --check-prefix=RANK0
// RUN: zb-opt %s -split-input-file -zb-extract-rank=rank=1 | FileCheck %s --check-prefix=RANK1
// RUN: zb-opt %s -split-input-file -zb-extract-rank=rank=2 -verify-diagnostics
// RUN: echo 'module {}' | not zb-opt -zb-extract-rank=rank=0 2>&1 | FileCheck %s --check-prefix=NONE

// A two-stage pipeline as zb-lower-pipeline leaves it: the stage functions
// carry their ports (zb.role, zb.index, zb.value), each rank has a step
// function marked zb.rank, the original model function is still there.

// Rank 0 keeps its step function (public, attributes kept) and the stage 0
// functions it calls (private, ports dropped); rank 1's step function, the
// stage 1 functions and @main are gone; the used runtime declaration stays.
// RANK0-LABEL: module {
// RANK0-NEXT:  func.func private @zbrt_action_begin(i32)
// RANK0-NEXT:  func.func private @stage0_forward(%{{.*}}: tensor<4xf32>, %{{.*}}: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
// RANK0:       func.func private @stage0_backward(%{{.*}}: tensor<4xf32>, %{{.*}}: tensor<4xf32>) -> tensor<4xf32> attributes {zb.stage = 0 : i64} {
// RANK0:       func.func @zb_rank0_step(%{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32>, %{{.*}}: memref<2x4xf32>)
// RANK0-SAME:    attributes {llvm.emit_c_interface, zb.rank = 0 : i64, zb.rank_args = [#zb.rank_arg<param, 1>, #zb.rank_arg<grad, 1>, #zb.rank_arg<input, 0>]}
// RANK0-NOT:   func.func
// RANK0:       }

// RANK1-LABEL: module {
// RANK1-NOT:   @stage0_
// RANK1:       func.func private @stage1_forward(%{{.*}}: tensor<4xf32>) -> tensor<f32> {
// RANK1-NOT:   func.func
// RANK1:       func.func @zb_rank1_step(%{{.*}}: memref<f32>)
// RANK1-SAME:    zb.rank = 1 : i64, zb.rank_args = [#zb.rank_arg<loss>]
// RANK1-NOT:   func.func
// RANK1:       }

// expected-error @below {{zb-extract-rank: no step function for rank 2 (the module has ranks 0, 1)}}
module {
  func.func private @zbrt_action_begin(i32)
  func.func private @zbrt_unused(i32)
  func.func @main(%x: tensor<4xf32>, %w: tensor<4xf32> {zb.param}) -> tensor<f32> {
    %h = zb.mul %x, %w : tensor<4xf32>
    %l = zb.reduce_sum %h axes [0] : tensor<4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
  func.func @stage0_forward(%w: tensor<4xf32> {zb.index = 1 : i64, zb.role = #zb.role<param>}, %x: tensor<4xf32> {zb.index = 0 : i64, zb.role = #zb.role<batch>}) -> (tensor<4xf32> {zb.role = #zb.role<act>, zb.value = 0 : i64}, tensor<4xf32> {zb.role = #zb.role<saved>, zb.value = 1 : i64}) {
    %h = zb.mul %x, %w : tensor<4xf32>
    return %h, %x : tensor<4xf32>, tensor<4xf32>
  }
  func.func @stage0_backward(%x: tensor<4xf32> {zb.role = #zb.role<saved>, zb.value = 1 : i64}, %g: tensor<4xf32> {zb.role = #zb.role<grad>, zb.value = 0 : i64}) -> (tensor<4xf32> {zb.index = 1 : i64, zb.role = #zb.role<param_grad>}) attributes {zb.stage = 0 : i64} {
    %dw = zb.mul %x, %g : tensor<4xf32>
    return %dw : tensor<4xf32>
  }
  func.func @stage1_forward(%h: tensor<4xf32> {zb.role = #zb.role<act>, zb.value = 0 : i64}) -> (tensor<f32> {zb.role = #zb.role<loss>}) {
    %l = zb.reduce_sum %h axes [0] : tensor<4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
  func.func @zb_rank0_step(%w: memref<4xf32>, %dw: memref<4xf32>, %x: memref<2x4xf32>) attributes {llvm.emit_c_interface, zb.rank = 0 : i64, zb.rank_args = [#zb.rank_arg<param, 1>, #zb.rank_arg<grad, 1>, #zb.rank_arg<input, 0>]} {
    %c0 = arith.constant 0 : i32
    call @zbrt_action_begin(%c0) : (i32) -> ()
    %wt = bufferization.to_tensor %w restrict : memref<4xf32> to tensor<4xf32>
    %xt = bufferization.to_tensor %x restrict : memref<2x4xf32> to tensor<2x4xf32>
    %x0 = tensor.extract_slice %xt[0, 0] [1, 4] [1, 1] : tensor<2x4xf32> to tensor<4xf32>
    %f:2 = call @stage0_forward(%wt, %x0) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    zb.send %f#0 to 1 tag 0 : tensor<4xf32>
    %g = zb.recv from 1 tag 3 : tensor<4xf32>
    %b = call @stage0_backward(%f#1, %g) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    bufferization.materialize_in_destination %b in restrict writable %dw : (tensor<4xf32>, memref<4xf32>) -> ()
    return
  }
  func.func @zb_rank1_step(%loss: memref<f32>) attributes {llvm.emit_c_interface, zb.rank = 1 : i64, zb.rank_args = [#zb.rank_arg<loss>]} {
    %h = zb.recv from 0 tag 0 : tensor<4xf32>
    %l = call @stage1_forward(%h) : (tensor<4xf32>) -> tensor<f32>
    %g = zb.broadcast_in_dim %l dims [] : tensor<f32> -> tensor<4xf32>
    zb.send %g to 0 tag 3 : tensor<4xf32>
    bufferization.materialize_in_destination %l in restrict writable %loss : (tensor<f32>, memref<f32>) -> ()
    return
  }
}

// -----

// A function that both ranks call stays in both; the step functions may come
// in any order; attributes of other dialects on arguments stay.
// RANK0-LABEL: module {
// RANK0-NEXT:  func.func private @shared(%{{.*}}: tensor<2xf32> {llvm.noalias}) -> tensor<2xf32> {
// RANK0-NEXT:    return
// RANK0-NEXT:  }
// RANK0-NEXT:  func.func @zb_rank0_step(%{{.*}}: memref<2xf32>) attributes {zb.rank = 0 : i64, zb.rank_args = [#zb.rank_arg<param, 0>]} {
// RANK0-NOT:   func.func

// RANK1-LABEL: module {
// RANK1-NEXT:  func.func private @shared(
// RANK1-NEXT:    return
// RANK1-NEXT:  }
// RANK1-NEXT:  func.func @zb_rank1_step(
// RANK1-NOT:   func.func

// expected-error @below {{zb-extract-rank: no step function for rank 2 (the module has ranks 0, 1)}}
module {
  func.func @shared(%t: tensor<2xf32> {llvm.noalias, zb.role = #zb.role<param>, zb.index = 0 : i64}) -> tensor<2xf32> {
    return %t : tensor<2xf32>
  }
  func.func @zb_rank1_step(%p: memref<2xf32>) attributes {zb.rank = 1 : i64, zb.rank_args = [#zb.rank_arg<param, 0>]} {
    %t = bufferization.to_tensor %p restrict : memref<2xf32> to tensor<2xf32>
    %r = call @shared(%t) : (tensor<2xf32>) -> tensor<2xf32>
    return
  }
  func.func @zb_rank0_step(%p: memref<2xf32>) attributes {zb.rank = 0 : i64, zb.rank_args = [#zb.rank_arg<param, 0>]} {
    %t = bufferization.to_tensor %p restrict : memref<2xf32> to tensor<2xf32>
    %r = call @shared(%t) : (tensor<2xf32>) -> tensor<2xf32>
    return
  }
}

// NONE: error: zb-extract-rank: no step function for rank 0 (the module has none: run zb-lower-pipeline first)
