// RUN: zb-opt %s -split-input-file -zb-expand-bf16 | FileCheck %s

// bf16 <-> f32 conversions become integer operations (no bf16 conversion
// routine needed by any target): extf is a 16-bit shift, truncf rounds to
// nearest even (adds 0x7FFF plus the kept lowest bit) and keeps NaN.
// CHECK-LABEL: func.func @convert
// CHECK-NOT: arith.extf
// CHECK-NOT: arith.truncf
// CHECK-DAG: arith.bitcast %{{.*}} : bf16 to i16
// CHECK-DAG: arith.shli
// CHECK-DAG: arith.constant 32767 : i32
// CHECK-DAG: arith.cmpf une
// CHECK: return
func.func @convert(%x: bf16, %y: f32) -> (f32, bf16) {
  %w = arith.extf %x : bf16 to f32
  %n = arith.truncf %y : f32 to bf16
  return %w, %n : f32, bf16
}

// -----

// Everything else, float32 conversions included, is left as it is.
// CHECK-LABEL: func.func @float32
// CHECK-NEXT: arith.maximumf
// CHECK-NEXT: arith.extf %{{.*}} : f32 to f64
// CHECK-NEXT: arith.truncf %{{.*}} : f64 to f32
func.func @float32(%a: f32, %b: f32, %c: f64) -> (f64, f32) {
  %m = arith.maximumf %a, %b : f32
  %e = arith.extf %m : f32 to f64
  %t = arith.truncf %c : f64 to f32
  return %e, %t : f64, f32
}
