// RUN: zb-opt %s --zb-constant-globals | FileCheck %s
// RUN: zb-opt %s --zb-constant-globals --one-shot-bufferize="bufferize-function-boundaries" | FileCheck %s --check-prefix=BUF

// zb-constant-globals: every tensor constant gets its memref.global in
// program order (each made at the top of the module, so the last one made
// comes first), equal constants share one, and one-shot-bufferize reuses
// them instead of making its own in an order that depends on pointers.

// CHECK-LABEL: module
// CHECK:         memref.global "private" constant @__constant_2xi64_0 : memref<2xi64> = dense<[3, 4]> {alignment = 64 : i64}
// CHECK-NEXT:    memref.global "private" constant @__constant_2xi64 : memref<2xi64> = dense<[1, 2]> {alignment = 64 : i64}
// CHECK-NOT:     memref.global
// CHECK:         func.func @first
// BUF-COUNT-2:   memref.global
// BUF-NOT:       memref.global
// BUF-LABEL:     func.func @first
// BUF:             memref.get_global @__constant_2xi64 :
// BUF-LABEL:     func.func @second
// BUF:             memref.get_global @__constant_2xi64_0 :
// BUF:             memref.get_global @__constant_2xi64 :
func.func @first() -> tensor<2xi64> {
  %a = arith.constant dense<[1, 2]> : tensor<2xi64>
  return %a : tensor<2xi64>
}
func.func @second() -> (tensor<2xi64>, tensor<2xi64>) {
  %b = arith.constant dense<[3, 4]> : tensor<2xi64>
  %c = arith.constant dense<[1, 2]> : tensor<2xi64>
  // Scalars are left alone.
  %s = arith.constant 7 : i64
  return %b, %c : tensor<2xi64>, tensor<2xi64>
}
