// RUN: zb-opt %s -split-input-file -convert-zb-to-linalg -mlir-print-local-scope | FileCheck %s

// One case per pattern of populateZBToLinalgPatterns
// (include/zb/Conversion/ZBToLinalg/ZBToLinalg.h). Affine maps are printed
// inline (-mlir-print-local-scope).

// CHECK-LABEL: func.func @elementwise(
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x5xf32>
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1 : tensor<4x5xf32>, tensor<4x5xf32>) outs(%[[E]] : tensor<4x5xf32>)
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK: arith.cmpf ugt
// CHECK: arith.select
func.func @elementwise(%a: tensor<4x5xf32>, %b: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %s = zb.add %a, %b : tensor<4x5xf32>
  %r = zb.relu %s : tensor<4x5xf32>
  return %r : tensor<4x5xf32>
}

// Bias broadcast along rows, then a reduction over rows.
// CHECK-LABEL: func.func @broadcast_reduce(
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<5xf32>)
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4xf32>)
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<4x5xf32>) outs(%[[Z]] : tensor<4xf32>)
// CHECK: arith.addf
func.func @broadcast_reduce(%bias: tensor<5xf32>) -> tensor<4xf32> {
  %b = zb.broadcast_in_dim %bias dims [1] : tensor<5xf32> -> tensor<4x5xf32>
  %s = zb.reduce_sum %b axes [1] : tensor<4x5xf32> -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// CHECK-LABEL: func.func @constant(
// CHECK: arith.constant dense<2.500000e+00> : tensor<3xf32>
func.func @constant() -> tensor<3xf32> {
  %c = zb.constant dense<2.5> : tensor<3xf32>
  return %c : tensor<3xf32>
}

// -----

// A size-1 dim broadcast to 4 reads index 0.
// CHECK-LABEL: func.func @broadcast_size_one(
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x5xf32>
// CHECK-NEXT: %[[R:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<1x5xf32>) outs(%[[E]] : tensor<4x5xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: linalg.yield %[[IN]] : f32
// CHECK: return %[[R]]
func.func @broadcast_size_one(%x: tensor<1x5xf32>) -> tensor<4x5xf32> {
  %b = zb.broadcast_in_dim %x dims [0, 1] : tensor<1x5xf32> -> tensor<4x5xf32>
  return %b : tensor<4x5xf32>
}

// -----

// Binary ops whose scalar form is one arith/math op.
// CHECK-LABEL: func.func @binary(
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<2x3xf32>, tensor<2x3xf32>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[V:.*]] = arith.addf %[[A]], %[[B]] : f32
// CHECK-NEXT: linalg.yield %[[V]] : f32
// CHECK: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: arith.subf %[[A]], %[[B]] : f32
// CHECK: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: arith.mulf %[[A]], %[[B]] : f32
// CHECK: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: arith.divf %[[A]], %[[B]] : f32
// CHECK: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: math.powf %[[A]], %[[B]] : f32
// CHECK: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: arith.maximumf %[[A]], %[[B]] : f32
func.func @binary(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = zb.add %a, %b : tensor<2x3xf32>
  %1 = zb.sub %a, %b : tensor<2x3xf32>
  %2 = zb.mul %a, %b : tensor<2x3xf32>
  %3 = zb.div %a, %b : tensor<2x3xf32>
  %4 = zb.pow %a, %b : tensor<2x3xf32>
  %5 = zb.max %a, %b : tensor<2x3xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// Unary ops whose scalar form is one arith/math op.
// CHECK-LABEL: func.func @unary(
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%arg0 : tensor<3xf32>)
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: arith.negf %[[X]] : f32
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: math.exp %[[X]] : f32
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: math.log %[[X]] : f32
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: math.tanh %[[X]] : f32
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: math.sqrt %[[X]] : f32
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: math.erf %[[X]] : f32
func.func @unary(%a: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %0 = zb.neg %a : tensor<3xf32>
  %1 = zb.exp %a : tensor<3xf32>
  %2 = zb.log %a : tensor<3xf32>
  %3 = zb.tanh %a : tensor<3xf32>
  %4 = zb.sqrt %a : tensor<3xf32>
  %5 = zb.erf %a : tensor<3xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// Scalar forms of several ops: rsqrt as 1 / sqrt (libm has no rsqrt),
// sigmoid, silu, and gelu exact (erf) and "tanh".
// CHECK-LABEL: func.func @composed_scalars(
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[S:.*]] = math.sqrt %[[X]] : f32
// CHECK-NEXT: %[[R:.*]] = arith.divf %[[ONE]], %[[S]] : f32
// CHECK-NEXT: linalg.yield %[[R]] : f32
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[N:.*]] = arith.negf %[[X]] : f32
// CHECK-NEXT: %[[E:.*]] = math.exp %[[N]] : f32
// CHECK-NEXT: %[[D:.*]] = arith.addf %[[ONE]], %[[E]] : f32
// CHECK-NEXT: %[[R:.*]] = arith.divf %[[ONE]], %[[D]] : f32
// CHECK-NEXT: linalg.yield %[[R]] : f32
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[N:.*]] = arith.negf %[[X]] : f32
// CHECK-NEXT: %[[E:.*]] = math.exp %[[N]] : f32
// CHECK-NEXT: %[[D:.*]] = arith.addf %[[ONE]], %[[E]] : f32
// CHECK-NEXT: %[[R:.*]] = arith.divf %[[X]], %[[D]] : f32
// CHECK-NEXT: linalg.yield %[[R]] : f32
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[C:.*]] = arith.constant 0.707106769 : f32
// CHECK-NEXT: %[[U:.*]] = arith.mulf %[[X]], %[[C]] : f32
// CHECK-NEXT: %[[ERF:.*]] = math.erf %[[U]] : f32
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[P:.*]] = arith.addf %[[ONE]], %[[ERF]] : f32
// CHECK-NEXT: %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT: %[[H:.*]] = arith.mulf %[[HALF]], %[[X]] : f32
// CHECK-NEXT: %[[R:.*]] = arith.mulf %[[H]], %[[P]] : f32
// CHECK-NEXT: linalg.yield %[[R]] : f32
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[X2:.*]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK-NEXT: %[[X3:.*]] = arith.mulf %[[X2]], %[[X]] : f32
// CHECK-NEXT: %[[K:.*]] = arith.constant 4.471500e-02 : f32
// CHECK-NEXT: %[[KX3:.*]] = arith.mulf %[[K]], %[[X3]] : f32
// CHECK-NEXT: %[[U:.*]] = arith.addf %[[X]], %[[KX3]] : f32
// CHECK-NEXT: %[[S:.*]] = arith.constant 0.797884583 : f32
// CHECK-NEXT: %[[SU:.*]] = arith.mulf %[[S]], %[[U]] : f32
// CHECK-NEXT: %[[T:.*]] = math.tanh %[[SU]] : f32
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT: %[[P:.*]] = arith.addf %[[ONE]], %[[T]] : f32
// CHECK-NEXT: %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT: %[[H:.*]] = arith.mulf %[[HALF]], %[[X]] : f32
// CHECK-NEXT: %[[R:.*]] = arith.mulf %[[H]], %[[P]] : f32
// CHECK-NEXT: linalg.yield %[[R]] : f32
func.func @composed_scalars(%a: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %0 = zb.rsqrt %a : tensor<3xf32>
  %1 = zb.sigmoid %a : tensor<3xf32>
  %2 = zb.silu %a : tensor<3xf32>
  %3 = zb.gelu %a : tensor<3xf32>
  %4 = zb.gelu %a {approximate = "tanh"} : tensor<3xf32>
  return %0, %1, %2, %3, %4 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// compare -> ordered arith.cmpf into an i1 tensor; select; cast by source
// type (signed / unsigned integer to float, float extension / truncation,
// same type: the element itself).
// CHECK-LABEL: func.func @compare_select_cast(
// CHECK: %[[ME:.*]] = tensor.empty() : tensor<3xi1>
// CHECK-NEXT: %[[M:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<3xf32>, tensor<3xf32>) outs(%[[ME]] : tensor<3xi1>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: i1):
// CHECK-NEXT: arith.cmpf olt, %[[A]], %[[B]] : f32
// CHECK: linalg.generic {{.*}} ins(%[[M]], %arg0, %arg1 : tensor<3xi1>, tensor<3xf32>, tensor<3xf32>)
// CHECK-NEXT: ^bb0(%[[C:.*]]: i1, %[[T:.*]]: f32, %[[F:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: arith.select %[[C]], %[[T]], %[[F]] : f32
// CHECK: ins(%arg2 : tensor<3xi64>)
// CHECK-NEXT: ^bb0(%[[I:.*]]: i64, %{{.*}}: f32):
// CHECK-NEXT: arith.sitofp %[[I]] : i64 to f32
// CHECK: ins(%arg3 : tensor<3xf64>)
// CHECK-NEXT: ^bb0(%[[D:.*]]: f64, %{{.*}}: f32):
// CHECK-NEXT: arith.truncf %[[D]] : f64 to f32
// CHECK: ins(%arg4 : tensor<3xi1>)
// CHECK-NEXT: ^bb0(%[[B1:.*]]: i1, %{{.*}}: f32):
// CHECK-NEXT: arith.uitofp %[[B1]] : i1 to f32
// CHECK: ins(%arg5 : tensor<3xf16>)
// CHECK-NEXT: ^bb0(%[[H:.*]]: f16, %{{.*}}: f32):
// CHECK-NEXT: arith.extf %[[H]] : f16 to f32
// CHECK: ins(%arg0 : tensor<3xf32>)
// CHECK-NEXT: ^bb0(%[[S:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: linalg.yield %[[S]] : f32
func.func @compare_select_cast(%a: tensor<3xf32>, %b: tensor<3xf32>, %i: tensor<3xi64>, %d: tensor<3xf64>, %m1: tensor<3xi1>, %h: tensor<3xf16>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %m = zb.compare "lt", %a, %b : tensor<3xf32> -> tensor<3xi1>
  %s = zb.select %m, %a, %b : tensor<3xi1>, tensor<3xf32>
  %c = zb.cast %i : tensor<3xi64> -> tensor<3xf32>
  %t = zb.cast %d : tensor<3xf64> -> tensor<3xf32>
  %u = zb.cast %m1 : tensor<3xi1> -> tensor<3xf32>
  %e = zb.cast %h : tensor<3xf16> -> tensor<3xf32>
  %same = zb.cast %a : tensor<3xf32> -> tensor<3xf32>
  return %s, %c, %t, %u, %e, %same : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// The fill value (default -inf) where key index > query index.
// CHECK-LABEL: func.func @causal_mask(
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg0 : tensor<2x4x4xf32>)
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[Q:.*]] = linalg.index 1 : index
// CHECK-NEXT: %[[K:.*]] = linalg.index 2 : index
// CHECK-NEXT: %[[FUT:.*]] = arith.cmpi ugt, %[[K]], %[[Q]] : index
// CHECK-NEXT: %[[FILL:.*]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT: %[[R:.*]] = arith.select %[[FUT]], %[[FILL]], %[[X]] : f32
// CHECK-NEXT: linalg.yield %[[R]] : f32
func.func @causal_mask(%a: tensor<2x4x4xf32>) -> tensor<2x4x4xf32> {
  %0 = zb.causal_mask %a : tensor<2x4x4xf32>
  return %0 : tensor<2x4x4xf32>
}

// -----

// reduce_mean = sum times 1/count; reduce_max starts from -inf.
// CHECK-LABEL: func.func @reductions(
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[E:.*]] = tensor.empty() : tensor<2x4xf32>
// CHECK-NEXT: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[E]] : tensor<2x4xf32>)
// CHECK-NEXT: %[[SUM:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d2)>], iterator_types = ["parallel", "reduction", "parallel"]} ins(%arg0 : tensor<2x3x4xf32>) outs(%[[INIT]] : tensor<2x4xf32>)
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT: arith.addf %[[X]], %[[ACC]] : f32
// CHECK: %[[MEAN:.*]] = linalg.generic {{.*}} ins(%[[SUM]] : tensor<2x4xf32>)
// CHECK-NEXT: ^bb0(%[[S:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[THIRD:.*]] = arith.constant 0.333333343 : f32
// CHECK-NEXT: arith.mulf %[[S]], %[[THIRD]] : f32
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT: %[[E2:.*]] = tensor.empty() : tensor<3xf32>
// CHECK-NEXT: %[[INIT2:.*]] = linalg.fill ins(%[[NEGINF]] : f32) outs(%[[E2]] : tensor<3xf32>)
// CHECK-NEXT: %[[MAX:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1)>], iterator_types = ["reduction", "parallel", "reduction"]} ins(%arg0 : tensor<2x3x4xf32>) outs(%[[INIT2]] : tensor<3xf32>)
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT: arith.maximumf %[[X]], %[[ACC]] : f32
// CHECK: return %[[MEAN]], %[[MAX]]
func.func @reductions(%x: tensor<2x3x4xf32>) -> (tensor<2x4xf32>, tensor<3xf32>) {
  %0 = zb.reduce_mean %x axes [1] : tensor<2x3x4xf32> -> tensor<2x4xf32>
  %1 = zb.reduce_max %x axes [0, 2] : tensor<2x3x4xf32> -> tensor<3xf32>
  return %0, %1 : tensor<2x4xf32>, tensor<3xf32>
}

// -----

// Reshapes go through 1-D; a scalar through tensor<1xf32>.
// CHECK-LABEL: func.func @reshape(
// CHECK-NEXT: %[[F:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1]] : tensor<2x6xf32> into tensor<12xf32>
// CHECK-NEXT: %[[R:.*]] = tensor.expand_shape %[[F]] {{\[\[}}0, 1]] output_shape [3, 4] : tensor<12xf32> into tensor<3x4xf32>
// CHECK-NEXT: %[[S1:.*]] = tensor.expand_shape %arg1 [] output_shape [1] : tensor<f32> into tensor<1xf32>
// CHECK-NEXT: %[[S:.*]] = tensor.expand_shape %[[S1]] {{\[\[}}0, 1]] output_shape [1, 1] : tensor<1xf32> into tensor<1x1xf32>
// CHECK-NEXT: %[[B1:.*]] = tensor.collapse_shape %arg2 {{\[\[}}0, 1]] : tensor<1x1xf32> into tensor<1xf32>
// CHECK-NEXT: %[[B:.*]] = tensor.collapse_shape %[[B1]] [] : tensor<1xf32> into tensor<f32>
// CHECK-NEXT: return %[[R]], %[[S]], %[[B]]
func.func @reshape(%x: tensor<2x6xf32>, %s: tensor<f32>, %o: tensor<1x1xf32>) -> (tensor<3x4xf32>, tensor<1x1xf32>, tensor<f32>) {
  %0 = zb.reshape %x : tensor<2x6xf32> -> tensor<3x4xf32>
  %1 = zb.reshape %s : tensor<f32> -> tensor<1x1xf32>
  %2 = zb.reshape %o : tensor<1x1xf32> -> tensor<f32>
  return %0, %1, %2 : tensor<3x4xf32>, tensor<1x1xf32>, tensor<f32>
}

// -----

// transpose, strided slice, pad (interior padding as stride), concat.
// CHECK-LABEL: func.func @shape_ops(
// CHECK-NEXT: %[[TE:.*]] = tensor.empty() : tensor<3x2xf32>
// CHECK-NEXT: %[[T:.*]] = linalg.transpose ins(%arg0 : tensor<2x3xf32>) outs(%[[TE]] : tensor<3x2xf32>) permutation = [1, 0]
// CHECK-NEXT: %[[S:.*]] = tensor.extract_slice %arg0[1, 0] [1, 2] [1, 2] : tensor<2x3xf32> to tensor<1x2xf32>
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[PE:.*]] = tensor.empty() : tensor<3x8xf32>
// CHECK-NEXT: %[[PF:.*]] = linalg.fill ins(%[[Z]] : f32) outs(%[[PE]] : tensor<3x8xf32>)
// CHECK-NEXT: %[[P:.*]] = tensor.insert_slice %arg0 into %[[PF]][1, 0] [2, 3] [1, 2] : tensor<2x3xf32> into tensor<3x8xf32>
// CHECK-NEXT: %[[CE:.*]] = tensor.empty() : tensor<2x8xf32>
// CHECK-NEXT: %[[C0:.*]] = tensor.insert_slice %arg0 into %[[CE]][0, 0] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<2x8xf32>
// CHECK-NEXT: %[[C:.*]] = tensor.insert_slice %arg1 into %[[C0]][0, 3] [2, 5] [1, 1] : tensor<2x5xf32> into tensor<2x8xf32>
// CHECK-NEXT: return %[[T]], %[[S]], %[[P]], %[[C]]
func.func @shape_ops(%x: tensor<2x3xf32>, %y: tensor<2x5xf32>) -> (tensor<3x2xf32>, tensor<1x2xf32>, tensor<3x8xf32>, tensor<2x8xf32>) {
  %0 = zb.transpose %x permutation [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  %1 = zb.slice %x [1, 0] to [2, 3] strides [1, 2] : tensor<2x3xf32> -> tensor<1x2xf32>
  %2 = zb.pad %x low [1, 0] high [0, 3] interior [0, 1] : tensor<2x3xf32> -> tensor<3x8xf32>
  %3 = zb.concat %x, %y axis 1 : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  return %0, %1, %2, %3 : tensor<3x2xf32>, tensor<1x2xf32>, tensor<3x8xf32>, tensor<2x8xf32>
}

// -----

// CHECK-LABEL: func.func @split(
// CHECK-NEXT: %[[A:.*]] = tensor.extract_slice %arg0[0, 0] [2, 3] [1, 1] : tensor<2x8xf32> to tensor<2x3xf32>
// CHECK-NEXT: %[[B:.*]] = tensor.extract_slice %arg0[0, 3] [2, 5] [1, 1] : tensor<2x8xf32> to tensor<2x5xf32>
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @split(%x: tensor<2x8xf32>) -> (tensor<2x3xf32>, tensor<2x5xf32>) {
  %0:2 = zb.split %x axis 1 : tensor<2x8xf32> -> tensor<2x3xf32>, tensor<2x5xf32>
  return %0#0, %0#1 : tensor<2x3xf32>, tensor<2x5xf32>
}

// -----

// gather reads the table with tensor.extract at (index, trailing dims).
// CHECK-LABEL: func.func @gather(
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%arg1 : tensor<2x3xi64>)
// CHECK-NEXT: ^bb0(%[[ID:.*]]: i64, %{{.*}}: f32):
// CHECK-NEXT: %[[ROW:.*]] = arith.index_cast %[[ID]] : i64 to index
// CHECK-NEXT: %[[COL:.*]] = linalg.index 2 : index
// CHECK-NEXT: %[[V:.*]] = tensor.extract %arg0[%[[ROW]], %[[COL]]] : tensor<10x4xf32>
// CHECK-NEXT: linalg.yield %[[V]] : f32
func.func @gather(%table: tensor<10x4xf32>, %ids: tensor<2x3xi64>) -> tensor<2x3x4xf32> {
  %0 = zb.gather %table, %ids : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @one_hot(
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<3xi32>)
// CHECK-NEXT: ^bb0(%[[ID:.*]]: i32, %{{.*}}: f32):
// CHECK-NEXT: %[[C:.*]] = linalg.index 1 : index
// CHECK-NEXT: %[[I:.*]] = arith.index_cast %[[ID]] : i32 to index
// CHECK-NEXT: %[[EQ:.*]] = arith.cmpi eq, %[[I]], %[[C]] : index
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[R:.*]] = arith.select %[[EQ]], %[[ONE]], %[[ZERO]] : f32
// CHECK-NEXT: linalg.yield %[[R]] : f32
func.func @one_hot(%ids: tensor<3xi32>) -> tensor<3x10xf32> {
  %0 = zb.one_hot %ids : tensor<3xi32> -> tensor<3x10xf32>
  return %0 : tensor<3x10xf32>
}

// -----

// scatter_add: zeros, then an scf.for over the flattened indices adding each
// update row into row idx[n] (in index order).
// CHECK-LABEL: func.func @scatter_add(
// CHECK-NEXT: %[[IDX:.*]] = tensor.collapse_shape %arg1 {{\[\[}}0, 1]] : tensor<2x3xi64> into tensor<6xi64>
// CHECK-NEXT: %[[UF:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1, 2]] : tensor<2x3x4xf32> into tensor<24xf32>
// CHECK-NEXT: %[[UPD:.*]] = tensor.expand_shape %[[UF]] {{\[\[}}0, 1]] output_shape [6, 4] : tensor<24xf32> into tensor<6x4xf32>
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[E:.*]] = tensor.empty() : tensor<10x4xf32>
// CHECK-NEXT: %[[INIT:.*]] = linalg.fill ins(%[[Z]] : f32) outs(%[[E]] : tensor<10x4xf32>)
// CHECK-NEXT: %[[LB:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[UB:.*]] = arith.constant 6 : index
// CHECK-NEXT: %[[STEP:.*]] = arith.constant 1 : index
// CHECK-NEXT: %[[LOOP:.*]] = scf.for %[[N:.*]] = %[[LB]] to %[[UB]] step %[[STEP]] iter_args(%[[ACC:.*]] = %[[INIT]]) -> (tensor<10x4xf32>) {
// CHECK-NEXT: %[[I:.*]] = tensor.extract %[[IDX]][%[[N]]] : tensor<6xi64>
// CHECK-NEXT: %[[ROW:.*]] = arith.index_cast %[[I]] : i64 to index
// CHECK-NEXT: %[[CUR:.*]] = tensor.extract_slice %[[ACC]][%[[ROW]], 0] [1, 4] [1, 1] : tensor<10x4xf32> to tensor<1x4xf32>
// CHECK-NEXT: %[[U:.*]] = tensor.extract_slice %[[UPD]][%[[N]], 0] [1, 4] [1, 1] : tensor<6x4xf32> to tensor<1x4xf32>
// CHECK-NEXT: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[U]] : tensor<1x4xf32>) outs(%[[CUR]] : tensor<1x4xf32>)
// CHECK-NEXT: ^bb0(%[[UE:.*]]: f32, %[[AE:.*]]: f32):
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[AE]], %[[UE]] : f32
// CHECK-NEXT: linalg.yield %[[S]] : f32
// CHECK-NEXT: } -> tensor<1x4xf32>
// CHECK-NEXT: %[[NEXT:.*]] = tensor.insert_slice %[[SUM]] into %[[ACC]][%[[ROW]], 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<10x4xf32>
// CHECK-NEXT: scf.yield %[[NEXT]] : tensor<10x4xf32>
// CHECK-NEXT: }
// CHECK-NEXT: %[[RF:.*]] = tensor.collapse_shape %[[LOOP]] {{\[\[}}0, 1]] : tensor<10x4xf32> into tensor<40xf32>
// CHECK-NEXT: %[[R:.*]] = tensor.expand_shape %[[RF]] {{\[\[}}0, 1]] output_shape [10, 4] : tensor<40xf32> into tensor<10x4xf32>
// CHECK-NEXT: return %[[R]]
func.func @scatter_add(%upd: tensor<2x3x4xf32>, %ids: tensor<2x3xi64>) -> tensor<10x4xf32> {
  %0 = zb.scatter_add %upd, %ids : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<10x4xf32>
  return %0 : tensor<10x4xf32>
}

// -----

// matmul: transposes as linalg.transpose, a zero-filled init, linalg.matmul
// (any element type; convert-zb-to-runtime takes f32 ones first on the CPU).
// CHECK-LABEL: func.func @matmul(
// CHECK-NEXT: %[[AE:.*]] = tensor.empty() : tensor<4x3xf32>
// CHECK-NEXT: %[[AT:.*]] = linalg.transpose ins(%arg0 : tensor<3x4xf32>) outs(%[[AE]] : tensor<4x3xf32>) permutation = [1, 0]
// CHECK-NEXT: %[[BE:.*]] = tensor.empty() : tensor<3x5xf32>
// CHECK-NEXT: %[[BT:.*]] = linalg.transpose ins(%arg1 : tensor<5x3xf32>) outs(%[[BE]] : tensor<3x5xf32>) permutation = [1, 0]
// CHECK-DAG: %[[CE:.*]] = tensor.empty() : tensor<4x5xf32>
// CHECK-DAG: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[Z]] : f32) outs(%[[CE]] : tensor<4x5xf32>)
// CHECK-NEXT: %[[C:.*]] = linalg.matmul ins(%[[AT]], %[[BT]] : tensor<4x3xf32>, tensor<3x5xf32>) outs(%[[INIT]] : tensor<4x5xf32>)
// CHECK-NEXT: return %[[C]]
func.func @matmul(%a: tensor<3x4xf32>, %b: tensor<5x3xf32>) -> tensor<4x5xf32> {
  %0 = zb.matmul %a, %b {transpose_lhs, transpose_rhs} : (tensor<3x4xf32>, tensor<5x3xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// batch_matmul: batch dims collapsed, linalg.batch_matmul, expanded back.
// CHECK-LABEL: func.func @batch_matmul(
// CHECK-NEXT: %[[A:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2], [3]] : tensor<2x3x4x5xf64> into tensor<6x4x5xf64>
// CHECK-NEXT: %[[B:.*]] = tensor.collapse_shape %arg1 {{\[\[}}0, 1], [2], [3]] : tensor<2x3x6x5xf64> into tensor<6x6x5xf64>
// CHECK-NEXT: %[[BE:.*]] = tensor.empty() : tensor<6x5x6xf64>
// CHECK-NEXT: %[[BT:.*]] = linalg.transpose ins(%[[B]] : tensor<6x6x5xf64>) outs(%[[BE]] : tensor<6x5x6xf64>) permutation = [0, 2, 1]
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0.000000e+00 : f64
// CHECK-NEXT: %[[CE:.*]] = tensor.empty() : tensor<6x4x6xf64>
// CHECK-NEXT: %[[INIT:.*]] = linalg.fill ins(%[[Z]] : f64) outs(%[[CE]] : tensor<6x4x6xf64>)
// CHECK-NEXT: %[[C:.*]] = linalg.batch_matmul ins(%[[A]], %[[BT]] : tensor<6x4x5xf64>, tensor<6x5x6xf64>) outs(%[[INIT]] : tensor<6x4x6xf64>)
// CHECK-NEXT: %[[R:.*]] = tensor.expand_shape %[[C]] {{\[\[}}0, 1], [2], [3]] output_shape [2, 3, 4, 6] : tensor<6x4x6xf64> into tensor<2x3x4x6xf64>
// CHECK-NEXT: return %[[R]]
func.func @batch_matmul(%p: tensor<2x3x4x5xf64>, %q: tensor<2x3x6x5xf64>) -> tensor<2x3x4x6xf64> {
  %0 = zb.batch_matmul %p, %q {transpose_rhs} : (tensor<2x3x4x5xf64>, tensor<2x3x6x5xf64>) -> tensor<2x3x4x6xf64>
  return %0 : tensor<2x3x4x6xf64>
}

// -----

// Composites are decomposed into zb ops, which are then lowered like the
// others. softmax: exp(x - max) / sum(exp(x - max)).
// CHECK-LABEL: func.func @softmax(
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[MI:.*]] = linalg.fill ins(%[[NEGINF]] : f32)
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<2x3xf32>) outs(%[[MI]] : tensor<2xf32>)
// CHECK: arith.maximumf
// CHECK: %[[MAXB:.*]] = linalg.generic {{.*}} ins(%[[MAX]] : tensor<2xf32>) outs(%{{.*}} : tensor<2x3xf32>)
// CHECK: %[[SH:.*]] = linalg.generic {{.*}} ins(%arg0, %[[MAXB]] : tensor<2x3xf32>, tensor<2x3xf32>)
// CHECK: arith.subf
// CHECK: %[[EX:.*]] = linalg.generic {{.*}} ins(%[[SH]] : tensor<2x3xf32>)
// CHECK: math.exp
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%[[EX]] : tensor<2x3xf32>)
// CHECK: arith.addf
// CHECK: %[[SUMB:.*]] = linalg.generic {{.*}} ins(%[[SUM]] : tensor<2xf32>)
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[EX]], %[[SUMB]] : tensor<2x3xf32>, tensor<2x3xf32>)
// CHECK: arith.divf
// CHECK: return %[[R]]
func.func @softmax(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = zb.softmax %x axis 1 : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// layer_norm: (x - mean) * rsqrt(biased var + eps) * weight + bias.
// CHECK-LABEL: func.func @layer_norm(
// CHECK: %[[S:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<2x3xf32>)
// CHECK: %[[MEAN:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<2xf32>)
// CHECK: arith.constant 0.333333343 : f32
// CHECK: %[[MEANB:.*]] = linalg.generic {{.*}} ins(%[[MEAN]] : tensor<2xf32>)
// CHECK: %[[XC:.*]] = linalg.generic {{.*}} ins(%arg0, %[[MEANB]] :
// CHECK: arith.subf
// CHECK: %[[SQ:.*]] = linalg.generic {{.*}} ins(%[[XC]], %[[XC]] :
// CHECK: arith.mulf
// CHECK: %[[VS:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%[[SQ]] :
// CHECK: %[[VAR:.*]] = linalg.generic {{.*}} ins(%[[VS]] :
// CHECK: %[[EPS:.*]] = arith.constant dense<9.99999974E-6> : tensor<2xf32>
// CHECK: %[[VE:.*]] = linalg.generic {{.*}} ins(%[[VAR]], %[[EPS]] :
// CHECK: arith.addf
// CHECK: %[[RSTD:.*]] = linalg.generic {{.*}} ins(%[[VE]] :
// CHECK: math.sqrt
// CHECK: arith.divf
// CHECK: %[[RSTDB:.*]] = linalg.generic {{.*}} ins(%[[RSTD]] :
// CHECK: %[[XHAT:.*]] = linalg.generic {{.*}} ins(%[[XC]], %[[RSTDB]] :
// CHECK: arith.mulf
// CHECK-DAG: %[[BB:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], {{.*}} ins(%arg2 : tensor<3xf32>)
// CHECK-DAG: %[[WB:.*]] = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], {{.*}} ins(%arg1 : tensor<3xf32>)
// CHECK: %[[SC:.*]] = linalg.generic {{.*}} ins(%[[XHAT]], %[[WB]] :
// CHECK: arith.mulf
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[SC]], %[[BB]] :
// CHECK: arith.addf
// CHECK: return %[[R]]
func.func @layer_norm(%x: tensor<2x3xf32>, %w: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = zb.layer_norm %x, %w, %b : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// rms_norm: x * rsqrt(mean(x^2) + eps) * weight.
// CHECK-LABEL: func.func @rms_norm(
// CHECK: %[[SQ:.*]] = linalg.generic {{.*}} ins(%arg0, %arg0 :
// CHECK: arith.mulf
// CHECK: %[[S:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%[[SQ]] :
// CHECK: %[[MS:.*]] = linalg.generic {{.*}} ins(%[[S]] :
// CHECK: %[[EPS:.*]] = arith.constant dense<9.99999997E-7> : tensor<2xf32>
// CHECK: %[[ME:.*]] = linalg.generic {{.*}} ins(%[[MS]], %[[EPS]] :
// CHECK: %[[RSTD:.*]] = linalg.generic {{.*}} ins(%[[ME]] :
// CHECK: math.sqrt
// CHECK-DAG: %[[WB:.*]] = linalg.generic {{.*}} ins(%arg1 : tensor<3xf32>)
// CHECK-DAG: %[[RSTDB:.*]] = linalg.generic {{.*}} ins(%[[RSTD]] : tensor<2xf32>)
// CHECK: %[[XN:.*]] = linalg.generic {{.*}} ins(%arg0, %[[RSTDB]] :
// CHECK: arith.mulf
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[XN]], %[[WB]] :
// CHECK: arith.mulf
// CHECK: return %[[R]]
func.func @rms_norm(%x: tensor<2x3xf32>, %w: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = zb.rms_norm %x, %w : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// cross_entropy: mean over samples of logsumexp(x) - x[target], the max
// subtracted inside the log-sum-exp.
// CHECK-LABEL: func.func @cross_entropy(
// CHECK: %[[M:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<2x3xf32>)
// CHECK: arith.maximumf
// CHECK: %[[MB:.*]] = linalg.generic {{.*}} ins(%[[M]] :
// CHECK: %[[SH:.*]] = linalg.generic {{.*}} ins(%arg0, %[[MB]] :
// CHECK: arith.subf
// CHECK: %[[EX:.*]] = linalg.generic {{.*}} ins(%[[SH]] :
// CHECK: math.exp
// CHECK: %[[SE:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%[[EX]] :
// CHECK: %[[LOG:.*]] = linalg.generic {{.*}} ins(%[[SE]] :
// CHECK: math.log
// CHECK: %[[LSE:.*]] = linalg.generic {{.*}} ins(%[[LOG]], %[[M]] :
// CHECK: arith.addf
// x[target] read once per row (a target outside [0, C) picks 0):
// CHECK: %[[PICK:.*]] = linalg.generic {{.*}}iterator_types = ["parallel"]} ins(%arg1 : tensor<2xi64>)
// CHECK: %[[I:.*]] = arith.index_cast
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[I]], %c3 : index
// CHECK: %[[COL:.*]] = arith.select %[[IN]], %[[I]], %c0 : index
// CHECK: %[[ROW:.*]] = linalg.index 0 : index
// CHECK: %[[V:.*]] = tensor.extract %arg0[%[[ROW]], %[[COL]]] : tensor<2x3xf32>
// CHECK: arith.select %[[IN]], %[[V]], %{{.*}} : f32
// CHECK: %[[PS:.*]] = linalg.generic {{.*}} ins(%[[LSE]], %[[PICK]] :
// CHECK: arith.subf
// CHECK: %[[TOT:.*]] = linalg.generic {{.*}}iterator_types = ["reduction"]} ins(%[[PS]] : tensor<2xf32>)
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[TOT]] : tensor<f32>)
// CHECK: arith.constant 5.000000e-01 : f32
// CHECK: return %[[R]]
func.func @cross_entropy(%x: tensor<2x3xf32>, %t: tensor<2xi64>) -> tensor<f32> {
  %0 = zb.cross_entropy %x, %t : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}
