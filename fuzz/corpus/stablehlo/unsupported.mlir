"builtin.module"() ({
  "func.func"() <{function_type = (tensor<4x4xf32>) -> tensor<f32>, sym_name = "main"}> ({
  ^bb0(%arg0: tensor<4x4xf32>):
    %0 = "stablehlo.cholesky"(%arg0) <{lower = true}> : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %1 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    "func.return"(%1) : (tensor<f32>) -> ()
  }) : () -> ()
}) : () -> ()
