"builtin.module"() ({
  "func.func"() <{function_type = (tensor<4xf32>) -> tensor<f32>, sym_name = "main"}> ({
  ^bb0(%arg0: tensor<4xf32>):
    %c = "stablehlo.constant"() <{value = dense<[1.0, 2.0]> : tensor<2xf32>}> : () -> tensor<2xf32>
    %0 = "stablehlo.broadcast_in_dim"(%c) <{broadcast_dimensions = array<i64: 1>}> : (tensor<2xf32>) -> tensor<3x2xf32>
    %1 = "stablehlo.concatenate"(%0, %0) <{dimension = 1 : i64}> : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x9000xf32>
    %2 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    "func.return"(%2) : (tensor<f32>) -> ()
  }) : () -> ()
}) : () -> ()
