// The 2-layer GPT of Inputs/gpt2.mlir (gen_gpt2.py) goes through zb-autodiff
// and is lowered to linalg; its gradients are checked against finite
// differences in unittests/Dialect/GPTGradientTest.cpp.
// RUN: zb-opt %S/Inputs/gpt2.mlir --zb-autodiff | FileCheck %s
// RUN: zb-opt %S/Inputs/gpt2.mlir --zb-autodiff --zb-split-backward --convert-zb-to-linalg | FileCheck %s --check-prefix=LINALG
// RUN: %python %S/Inputs/gen_gpt2.py | diff - %S/Inputs/gpt2.mlir

// CHECK-LABEL: func.func @main
// CHECK-SAME: -> (tensor<f64>, tensor<11x8xf64> {zb.grad_of = 2 : i64}, tensor<4x8xf64> {zb.grad_of = 3 : i64}
// The gradient of the q/k/v slices pads them back into the fused projection.
// CHECK: zb.pad %{{.*}} low [0, 16] high [0, 0] interior [0, 0]
// CHECK: zb.pad %{{.*}} low [0, 8] high [0, 8] interior [0, 0]
// CHECK: zb.pad %{{.*}} low [0, 0] high [0, 16] interior [0, 0]
// The embedding gradient is a scatter-add of the token rows (plus the tied head's matmul).
// CHECK: zb.scatter_add %{{.*}}, %arg0 {{.*}}: (tensor<2x4x8xf64>, tensor<2x4xi64>) -> tensor<11x8xf64>
// CHECK: return

// LINALG-LABEL: func.func @main
// LINALG-NOT: zb.{{[a-z_]+}} %
// LINALG: linalg.batch_matmul
// LINALG: scf.for
// LINALG-NOT: zb.{{[a-z_]+}} %
// LINALG: return
