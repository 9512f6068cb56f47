// RUN: zb-opt %s -split-input-file -convert-zb-to-runtime -convert-zb-to-linalg -mlir-print-local-scope | FileCheck %s

// --precision bf16 lowerings (zb-autocast's bfloat16 ops).

// A bf16 matmul is one runtime GEMM on bf16 buffers (float32 accumulation
// inside: zbrt_gemm_bf16_memref), the batched one likewise.
// CHECK-DAG: func.func private @zbrt_gemm_bf16_memref(memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>, memref<?x?xbf16, strided<[?, ?], offset: ?>>, i32, i32)
// CHECK-DAG: func.func private @zbrt_gemm_bf16_batched_memref(memref<?x?x?xbf16, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xbf16, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xbf16, strided<[?, ?, ?], offset: ?>>, i32, i32)
// CHECK-LABEL: func.func @gemms
// CHECK: memref.alloc() : memref<4x5xbf16>
// CHECK: call @zbrt_gemm_bf16_memref
// CHECK: memref.alloc() : memref<2x4x4xbf16>
// CHECK: call @zbrt_gemm_bf16_batched_memref
func.func @gemms(%a: tensor<4x3xbf16>, %b: tensor<3x5xbf16>,
                 %q: tensor<2x4x3xbf16>) -> (tensor<4x5xbf16>, tensor<2x4x4xbf16>) {
  %c = zb.matmul %a, %b : (tensor<4x3xbf16>, tensor<3x5xbf16>) -> tensor<4x5xbf16>
  %s = zb.batch_matmul %q, %q {transpose_rhs} : (tensor<2x4x3xbf16>, tensor<2x4x3xbf16>) -> tensor<2x4x4xbf16>
  return %c, %s : tensor<4x5xbf16>, tensor<2x4x4xbf16>
}

// -----

// bf16 tensors cross stages as 2-byte elements.
// CHECK-DAG: func.func private @zbrt_send_memref_bf16(memref<?xbf16, strided<[?], offset: ?>>, i32, i32)
// CHECK-DAG: func.func private @zbrt_recv_memref_bf16(memref<?xbf16, strided<[?], offset: ?>>, i32, i32)
// CHECK-LABEL: func.func @messages
// CHECK: call @zbrt_send_memref_bf16
// CHECK: call @zbrt_recv_memref_bf16
func.func @messages(%x: tensor<2x3xbf16>) -> tensor<2x3xbf16> {
  zb.send %x to 1 tag 7 : tensor<2x3xbf16>
  %y = zb.recv from 1 tag 8 : tensor<2x3xbf16>
  return %y : tensor<2x3xbf16>
}

// -----

// An op on bf16 computes its whole scalar form in f32 and rounds once: one
// extf per operand, the GELU arithmetic in f32, one truncf.
// CHECK-LABEL: func.func @gelu
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[IN:.*]]: bf16, %{{.*}}: bf16):
// CHECK-NEXT: %[[X:.*]] = arith.extf %[[IN]] : bf16 to f32
// CHECK-NOT: bf16
// CHECK: math.erf %{{.*}} : f32
// CHECK-NOT: bf16
// CHECK: %[[R:.*]] = arith.truncf %{{.*}} : f32 to bf16
// CHECK-NEXT: linalg.yield %[[R]] : bf16
func.func @gelu(%x: tensor<8xbf16>) -> tensor<8xbf16> {
  %y = zb.gelu %x : tensor<8xbf16>
  return %y : tensor<8xbf16>
}

// -----

// A reduction of bf16 (a bf16 linear layer's bias gradient) accumulates in
// f32 and rounds once at the end.
// CHECK-LABEL: func.func @bias_gradient
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<5xf32>)
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]{{.*}} ins(%arg0 : tensor<4x5xbf16>) outs(%{{.*}} : tensor<5xf32>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.addf %{{.*}} : f32
// CHECK: linalg.generic
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @bias_gradient(%g: tensor<4x5xbf16>) -> tensor<5xbf16> {
  %s = zb.reduce_sum %g axes [0] : tensor<4x5xbf16> -> tensor<5xbf16>
  return %s : tensor<5xbf16>
}
