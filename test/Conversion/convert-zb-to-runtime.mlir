// RUN: zb-opt %s -convert-zb-to-runtime | FileCheck %s

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
