module @jit_loss {
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<f32> {
    %0 = stablehlo.tanh %arg0 : tensor<4xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    return %1 : tensor<f32>
  }
}
