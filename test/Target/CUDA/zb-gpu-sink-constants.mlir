// RUN: zb-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(zb-gpu-sink-constants))' | FileCheck %s
// RUN: zb-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(zb-gpu-sink-constants),gpu-kernel-outlining)' | FileCheck %s --check-prefix=OUTLINED

// zb-gpu-sink-constants: a constant global a launch reads (position ids of
// a GPT, folded at import) moves into the launch body with the views on it;
// gpu-kernel-outlining then copies the global into the kernel's gpu.module
// (a device global of the fatbin) and the kernel takes no host pointer.

// CHECK-LABEL: func.func @positions
// CHECK:         gpu.launch
// CHECK:           %[[G:.*]] = memref.get_global @ids : memref<1x32xi64>
// CHECK:           %[[V:.*]] = memref.collapse_shape %[[G]]
// CHECK:           memref.load %[[V]]
// OUTLINED-LABEL: gpu.module @positions_kernel
// OUTLINED:         gpu.func @positions_kernel(%{{.*}}: memref<32xf32>) kernel
// OUTLINED:           memref.get_global @ids
// OUTLINED:         memref.global "private" constant @ids : memref<1x32xi64>
memref.global "private" constant @ids : memref<1x32xi64> = dense<1>
func.func @positions(%out: memref<32xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %g = memref.get_global @ids : memref<1x32xi64>
  %v = memref.collapse_shape %g [[0, 1]] : memref<1x32xi64> into memref<32xi64>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %i = memref.load %v[%tx] : memref<32xi64>
    %f = arith.sitofp %i : i64 to f32
    memref.store %f, %out[%tx] : memref<32xf32>
    gpu.terminator
  }
  return
}

// -----

// A global that is not constant (the program may write it) and views of
// other buffers stay where they are.

// CHECK-LABEL: func.func @mutable
// CHECK:         %[[G:.*]] = memref.get_global @state : memref<4xf32>
// CHECK:         %[[S:.*]] = memref.subview %arg0[0] [4] [1]
// CHECK:         gpu.launch
// CHECK-NOT:       memref.get_global
// CHECK-NOT:       memref.subview
// CHECK:           memref.load %[[G]]
// CHECK:           memref.store %{{.*}}, %[[S]]
memref.global "private" @state : memref<4xf32> = dense<0.0>
func.func @mutable(%buf: memref<8xf32>) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %g = memref.get_global @state : memref<4xf32>
  %s = memref.subview %buf[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %x = memref.load %g[%tx] : memref<4xf32>
    memref.store %x, %s[%tx] : memref<4xf32, strided<[1]>>
    gpu.terminator
  }
  return
}

// -----

// A vector constant (a vectorised zero fill of bfloat16) moves into the
// body: the kernel takes no vector<8xbf16> argument.
// CHECK-LABEL: func.func @fill
// CHECK:         gpu.launch
// CHECK-NEXT:      %[[Z:.*]] = arith.constant dense<0.000000e+00> : vector<8xbf16>
// CHECK:           vector.store %[[Z]]
// OUTLINED-LABEL: gpu.module @fill_kernel
// OUTLINED:         gpu.func @fill_kernel(%{{.*}}: memref<4x8xbf16>, %{{.*}}: index) kernel
// OUTLINED:           arith.constant dense<0.000000e+00> : vector<8xbf16>
func.func @fill(%out: memref<4x8xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %z = arith.constant dense<0.0> : vector<8xbf16>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    vector.store %z, %out[%tx, %c0] : memref<4x8xbf16>, vector<8xbf16>
    gpu.terminator
  }
  return
}
