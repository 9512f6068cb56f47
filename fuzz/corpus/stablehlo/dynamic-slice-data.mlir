"builtin.module"() ({
  "func.func"() <{function_type = (tensor<4x8xf32>, tensor<i32>) -> tensor<f32>, sym_name = "main"}> ({
  ^bb0(%arg0: tensor<4x8xf32>, %arg1: tensor<i32>):
    %c = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %0 = "stablehlo.dynamic_slice"(%arg0, %arg1, %c) <{slice_sizes = array<i64: 1, 8>}> : (tensor<4x8xf32>, tensor<i32>, tensor<i32>) -> tensor<1x8xf32>
    %1 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    "func.return"(%1) : (tensor<f32>) -> ()
  }) : () -> ()
}) : () -> ()
