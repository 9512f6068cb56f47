// RUN: zb-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(zb-gpu-vectorize-elementwise))' | FileCheck %s
// RUN: zb-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(zb-gpu-vectorize-elementwise{alignment=0}))' | FileCheck %s --check-prefix=EMU

// A bias add over 16x64: iteration (i, k) handles columns 4k .. 4k+3; the
// row-indexed loads and the store become vector<4> accesses (16-byte
// aligned), the per-element add is repeated per lane.
// CHECK-LABEL: func.func @bias
// CHECK:         %[[Q:c16_[0-9]+]] = arith.constant 16 : index
// CHECK-NEXT:    scf.parallel (%[[I:[a-z0-9]+]], %[[K:[a-z0-9]+]]) = ({{.*}}) to (%{{.+}}, %[[Q]])
// CHECK:           %[[BASE:.+]] = arith.muli %[[K]], %{{.+}} : index
// CHECK:           %[[A:.+]] = vector.load %{{.+}}[%[[I]], %[[BASE]]] {alignment = 16 : i64} : memref<16x64xf32>, vector<4xf32>
// CHECK:           %[[B:.+]] = vector.load %{{.+}}[%[[BASE]]] {alignment = 16 : i64} : memref<64xf32>, vector<4xf32>
// CHECK-COUNT-4:   arith.addf
// CHECK:           %[[V:.+]] = vector.from_elements
// CHECK:           vector.store %[[V]], %{{.+}}[%[[I]], %[[BASE]]] {alignment = 16 : i64} : memref<16x64xf32>, vector<4xf32>
// EMU-LABEL: func.func @bias
// EMU:         vector.load %{{.+}} : memref<16x64xf32>, vector<4xf32>
// EMU-NOT:     alignment
func.func @bias(%a: memref<16x64xf32>, %b: memref<64xf32>, %o: memref<16x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c16, %c64) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<16x64xf32>
    %y = memref.load %b[%j] : memref<64xf32>
    %s = arith.addf %x, %y : f32
    memref.store %s, %o[%i, %j] : memref<16x64xf32>
    scf.reduce
  }
  return
}

// -----

// A transpose: the load's last index is the outer variable (per lane, 4
// scalar loads), the store's is the inner one (one vector store).
// CHECK-LABEL: func.func @transpose
// CHECK:         scf.parallel
// CHECK-COUNT-4:   memref.load %{{.+}} : memref<64x16xf32>
// CHECK:           vector.store %{{.+}} : memref<16x64xf32>, vector<4xf32>
func.func @transpose(%a: memref<64x16xf32>, %o: memref<16x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c16, %c64) step (%c1, %c1) {
    %x = memref.load %a[%j, %i] : memref<64x16xf32>
    memref.store %x, %o[%i, %j] : memref<16x64xf32>
    scf.reduce
  }
  return
}

// -----

// Left alone: an innermost size that is not a multiple of 4, a view whose
// rows are not 16-byte aligned (offset 2) as the only access, and 64-bit
// elements.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT:     vector.
// CHECK:         return
func.func @left_alone(%a: memref<16x6xf32>, %v: memref<16x64xf32, strided<[64, 1], offset: 2>>, %d: memref<16x64xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %f = arith.constant 1.0 : f32
  %g = arith.constant 1.0 : f64
  scf.parallel (%i, %j) = (%c0, %c0) to (%c16, %c6) step (%c1, %c1) {
    memref.store %f, %a[%i, %j] : memref<16x6xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c16, %c64) step (%c1, %c1) {
    memref.store %f, %v[%i, %j] : memref<16x64xf32, strided<[64, 1], offset: 2>>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c16, %c64) step (%c1, %c1) {
    memref.store %g, %d[%i, %j] : memref<16x64xf64>
    scf.reduce
  }
  return
}

// -----

// bf16 storage (--precision bf16): a loop whose vectorised accesses are all
// 16-bit takes 8 lanes, one 16-byte vector<8xbf16> per access.
// CHECK-LABEL: func.func @bf16_add
// CHECK:           vector.load %{{.+}} {alignment = 16 : i64} : memref<4x64xbf16>, vector<8xbf16>
// CHECK:           vector.load %{{.+}} {alignment = 16 : i64} : memref<4x64xbf16>, vector<8xbf16>
// CHECK-COUNT-8:   arith.addf
// CHECK:           vector.store %{{.+}} {alignment = 16 : i64} : memref<4x64xbf16>, vector<8xbf16>
func.func @bf16_add(%a: memref<4x64xbf16>, %b: memref<4x64xbf16>, %o: memref<4x64xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c64) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<4x64xbf16>
    %y = memref.load %b[%i, %j] : memref<4x64xbf16>
    %xf = arith.extf %x : bf16 to f32
    %yf = arith.extf %y : bf16 to f32
    %s = arith.addf %xf, %yf : f32
    %r = arith.truncf %s : f32 to bf16
    memref.store %r, %o[%i, %j] : memref<4x64xbf16>
    scf.reduce
  }
  return
}

// -----

// A cast from f32 to bf16 mixes the widths: 4 lanes, the f32 load 16 bytes,
// the bf16 store vector<4xbf16> of 8 bytes (aligned to 8).
// CHECK-LABEL: func.func @to_bf16
// CHECK:           vector.load %{{.+}} {alignment = 16 : i64} : memref<4x64xf32>, vector<4xf32>
// CHECK-COUNT-4:   arith.truncf
// CHECK:           vector.store %{{.+}} {alignment = 8 : i64} : memref<4x64xbf16>, vector<4xbf16>
func.func @to_bf16(%a: memref<4x64xf32>, %o: memref<4x64xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c64) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<4x64xf32>
    %r = arith.truncf %x : f32 to bf16
    memref.store %r, %o[%i, %j] : memref<4x64xbf16>
    scf.reduce
  }
  return
}
