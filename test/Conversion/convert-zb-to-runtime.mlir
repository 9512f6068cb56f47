// RUN: zb-opt %s -split-input-file -convert-zb-to-runtime | FileCheck %s

// One case per pattern of populateZBToRuntimePatterns
// (include/zb/Conversion/ZBToRuntime/ZBToRuntime.h); errors in
// convert-zb-to-runtime-invalid.mlir.

// CHECK-DAG: func.func private @zbrt_sgemm_memref(memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, i32, i32)
// CHECK-DAG: func.func private @zbrt_send_memref(memref<?xf32, strided<[?], offset: ?>>, i32, i32)
// CHECK-DAG: func.func private @zbrt_recv_memref(memref<?xf32, strided<[?], offset: ?>>, i32, i32)

// An f32 matmul becomes one OpenBLAS call on a fresh output buffer; the
// transposes are flags, no copies.
// CHECK-LABEL: func.func @mm(
// CHECK: %[[A:.*]] = bufferization.to_buffer %arg0 read_only : tensor<4x3xf32> to memref<4x3xf32, strided<[?, ?], offset: ?>>
// CHECK: %[[AC:.*]] = memref.cast %[[A]]
// CHECK: %[[B:.*]] = bufferization.to_buffer %arg1 read_only
// CHECK: %[[BC:.*]] = memref.cast %[[B]]
// CHECK: %[[C:.*]] = memref.alloc() : memref<4x5xf32>
// CHECK: %[[CC:.*]] = memref.cast %[[C]]
// CHECK: %[[F:.*]] = arith.constant 0 : i32
// CHECK: %[[T:.*]] = arith.constant 1 : i32
// CHECK: call @zbrt_sgemm_memref(%[[AC]], %[[BC]], %[[CC]], %[[F]], %[[T]])
// CHECK: %[[R:.*]] = bufferization.to_tensor %[[C]] restrict writable : memref<4x5xf32> to tensor<4x5xf32>
// CHECK: return %[[R]]
func.func @mm(%a: tensor<4x3xf32>, %b: tensor<5x3xf32>) -> tensor<4x5xf32> {
  %c = zb.matmul %a, %b {transpose_rhs} : (tensor<4x3xf32>, tensor<5x3xf32>) -> tensor<4x5xf32>
  return %c : tensor<4x5xf32>
}

// Tensors travel flattened to 1-D; scalars as one element.
// CHECK-LABEL: func.func @comm(
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1]] : tensor<2x3xf32> into tensor<6xf32>
// CHECK: bufferization.to_buffer %[[FLAT]] read_only
// CHECK: call @zbrt_send_memref
// CHECK: tensor.expand_shape %arg1 [] output_shape [1] : tensor<f32> into tensor<1xf32>
// CHECK: call @zbrt_send_memref
// CHECK: %[[BUF:.*]] = memref.alloc() : memref<8xf32>
// CHECK: call @zbrt_recv_memref
// CHECK: %[[RT:.*]] = bufferization.to_tensor %[[BUF]] restrict writable
// CHECK: %[[OUT:.*]] = tensor.expand_shape %[[RT]] {{\[\[}}0, 1]] output_shape [4, 2]
// CHECK: return %[[OUT]]
func.func @comm(%x: tensor<2x3xf32>, %s: tensor<f32>) -> tensor<4x2xf32> {
  zb.send %x to 1 tag 6 : tensor<2x3xf32>
  zb.send %s to 1 tag 8 : tensor<f32>
  %r = zb.recv from 1 tag 7 : tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}

// f64 matmuls stay (convert-zb-to-linalg lowers them).
// CHECK-LABEL: func.func @mm64(
// CHECK: zb.matmul
func.func @mm64(%a: tensor<2x2xf64>, %b: tensor<2x2xf64>) -> tensor<2x2xf64> {
  %c = zb.matmul %a, %b : (tensor<2x2xf64>, tensor<2x2xf64>) -> tensor<2x2xf64>
  return %c : tensor<2x2xf64>
}

// -----

// batch_matmul: batch dims collapsed, one zbrt_sgemm_batched_memref call
// for all the matrices (cublasSgemmStridedBatched on a GPU), the result
// expanded back. The function is declared once for both ops.
// CHECK: func.func private @zbrt_sgemm_batched_memref(memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, i32, i32)
// CHECK-NOT: func.func private
// CHECK-LABEL: func.func @bmm(
// CHECK-NEXT: %[[AC:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2], [3]] : tensor<2x3x4x5xf32> into tensor<6x4x5xf32>
// CHECK-NEXT: %[[A:.*]] = bufferization.to_buffer %[[AC]] read_only : tensor<6x4x5xf32> to memref<6x4x5xf32, strided<[?, ?, ?], offset: ?>>
// CHECK-NEXT: %[[BC:.*]] = tensor.collapse_shape %arg1 {{\[\[}}0, 1], [2], [3]] : tensor<2x3x5x6xf32> into tensor<6x5x6xf32>
// CHECK-NEXT: %[[B:.*]] = bufferization.to_buffer %[[BC]] read_only
// CHECK-NEXT: %[[C:.*]] = memref.alloc() : memref<6x4x6xf32>
// CHECK-NEXT: %[[TA:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[TB:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[AM:.*]] = memref.cast %[[A]] : memref<6x4x5xf32, strided<[?, ?, ?], offset: ?>> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
// CHECK-NEXT: %[[BM:.*]] = memref.cast %[[B]]
// CHECK-NEXT: %[[CM:.*]] = memref.cast %[[C]] : memref<6x4x6xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
// CHECK-NEXT: call @zbrt_sgemm_batched_memref(%[[AM]], %[[BM]], %[[CM]], %[[TA]], %[[TB]])
// CHECK-NEXT: %[[T:.*]] = bufferization.to_tensor %[[C]] restrict writable : memref<6x4x6xf32> to tensor<6x4x6xf32>
// CHECK-NEXT: %[[R:.*]] = tensor.expand_shape %[[T]] {{\[\[}}0, 1], [2], [3]] output_shape [2, 3, 4, 6] : tensor<6x4x6xf32> into tensor<2x3x4x6xf32>
// Rank 3: no reshapes; transpose_rhs as a flag.
// CHECK-NEXT: bufferization.to_buffer %arg2 read_only : tensor<2x4x5xf32>
// CHECK-NEXT: bufferization.to_buffer %arg3 read_only : tensor<2x6x5xf32>
// CHECK-NEXT: %[[C3:.*]] = memref.alloc() : memref<2x4x6xf32>
// CHECK-NEXT: %[[F:.*]] = arith.constant 0 : i32
// CHECK-NEXT: %[[T1:.*]] = arith.constant 1 : i32
// CHECK: call @zbrt_sgemm_batched_memref(%{{.*}}, %{{.*}}, %{{.*}}, %[[F]], %[[T1]])
// CHECK: %[[R3:.*]] = bufferization.to_tensor %[[C3]] restrict writable : memref<2x4x6xf32> to tensor<2x4x6xf32>
// CHECK-NEXT: return %[[R]], %[[R3]]
func.func @bmm(%a: tensor<2x3x4x5xf32>, %b: tensor<2x3x5x6xf32>, %c: tensor<2x4x5xf32>, %d: tensor<2x6x5xf32>) -> (tensor<2x3x4x6xf32>, tensor<2x4x6xf32>) {
  %0 = zb.batch_matmul %a, %b : (tensor<2x3x4x5xf32>, tensor<2x3x5x6xf32>) -> tensor<2x3x4x6xf32>
  %1 = zb.batch_matmul %c, %d {transpose_rhs} : (tensor<2x4x5xf32>, tensor<2x6x5xf32>) -> tensor<2x4x6xf32>
  return %0, %1 : tensor<2x3x4x6xf32>, tensor<2x4x6xf32>
}

// -----

// f64 batch matmuls stay (convert-zb-to-linalg lowers them).
// CHECK-NOT: func.func private
// CHECK-LABEL: func.func @bmm64(
// CHECK-NEXT: zb.batch_matmul
func.func @bmm64(%a: tensor<2x2x2xf64>, %b: tensor<2x2x2xf64>) -> tensor<2x2x2xf64> {
  %c = zb.batch_matmul %a, %b : (tensor<2x2x2xf64>, tensor<2x2x2xf64>) -> tensor<2x2x2xf64>
  return %c : tensor<2x2x2xf64>
}

// -----

// Integer tensors (token ids relayed between stages) use the _i64 / _i32
// entries; a rank-0 receive is reshaped from one element.
// CHECK-DAG: func.func private @zbrt_send_memref_i64(memref<?xi64, strided<[?], offset: ?>>, i32, i32)
// CHECK-DAG: func.func private @zbrt_send_memref_i32(memref<?xi32, strided<[?], offset: ?>>, i32, i32)
// CHECK-DAG: func.func private @zbrt_recv_memref_i64(memref<?xi64, strided<[?], offset: ?>>, i32, i32)
// CHECK-DAG: func.func private @zbrt_recv_memref_i32(memref<?xi32, strided<[?], offset: ?>>, i32, i32)
// CHECK-LABEL: func.func @int_comm(
// CHECK-NEXT: %[[F:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1]] : tensor<2x4xi64> into tensor<8xi64>
// CHECK-NEXT: %[[B:.*]] = bufferization.to_buffer %[[F]] read_only : tensor<8xi64> to memref<8xi64, strided<[?], offset: ?>>
// CHECK-NEXT: %[[BC:.*]] = memref.cast %[[B]] : memref<8xi64, strided<[?], offset: ?>> to memref<?xi64, strided<[?], offset: ?>>
// CHECK-NEXT: %[[P:.*]] = arith.constant 1 : i32
// CHECK-NEXT: %[[T:.*]] = arith.constant 3 : i32
// CHECK-NEXT: call @zbrt_send_memref_i64(%[[BC]], %[[P]], %[[T]])
// CHECK-NEXT: %[[B2:.*]] = bufferization.to_buffer %arg1 read_only : tensor<3xi32>
// CHECK-NEXT: %[[B2C:.*]] = memref.cast %[[B2]]
// CHECK-NEXT: arith.constant 1 : i32
// CHECK-NEXT: arith.constant 5 : i32
// CHECK-NEXT: call @zbrt_send_memref_i32(%[[B2C]],
// CHECK-NEXT: %[[R:.*]] = memref.alloc() : memref<8xi64>
// CHECK-NEXT: %[[RC:.*]] = memref.cast %[[R]] : memref<8xi64> to memref<?xi64, strided<[?], offset: ?>>
// CHECK-NEXT: arith.constant 1 : i32
// CHECK-NEXT: arith.constant 4 : i32
// CHECK-NEXT: call @zbrt_recv_memref_i64(%[[RC]],
// CHECK-NEXT: %[[RT:.*]] = bufferization.to_tensor %[[R]] restrict writable : memref<8xi64> to tensor<8xi64>
// CHECK-NEXT: %[[S:.*]] = memref.alloc() : memref<1xi32>
// CHECK-NEXT: %[[SC:.*]] = memref.cast %[[S]]
// CHECK-NEXT: arith.constant 1 : i32
// CHECK-NEXT: arith.constant 6 : i32
// CHECK-NEXT: call @zbrt_recv_memref_i32(%[[SC]],
// CHECK-NEXT: %[[ST:.*]] = bufferization.to_tensor %[[S]] restrict writable : memref<1xi32> to tensor<1xi32>
// CHECK-NEXT: %[[SS:.*]] = tensor.collapse_shape %[[ST]] [] : tensor<1xi32> into tensor<i32>
// CHECK-NEXT: return %[[RT]], %[[SS]]
func.func @int_comm(%ids: tensor<2x4xi64>, %m: tensor<3xi32>) -> (tensor<8xi64>, tensor<i32>) {
  zb.send %ids to 1 tag 3 : tensor<2x4xi64>
  zb.send %m to 1 tag 5 : tensor<3xi32>
  %r = zb.recv from 1 tag 4 : tensor<8xi64>
  %s = zb.recv from 1 tag 6 : tensor<i32>
  return %r, %s : tensor<8xi64>, tensor<i32>
}
