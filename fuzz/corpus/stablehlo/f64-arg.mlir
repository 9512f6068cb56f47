"builtin.module"() ({
  "func.func"() <{arg_attrs = [{jax.arg_info = "params['w']"}], function_type = (tensor<4xf64>) -> tensor<f32>, sym_name = "main"}> ({
  ^bb0(%arg0: tensor<4xf64>):
    %0 = "stablehlo.convert"(%arg0) : (tensor<4xf64>) -> tensor<4xf32>
    %1 = "stablehlo.constant"() <{value = dense<0.0> : tensor<f32>}> : () -> tensor<f32>
    %2 = "stablehlo.reduce"(%0, %1) <{dimensions = array<i64: 0>}> ({
    ^bb1(%a: tensor<f32>, %b: tensor<f32>):
      %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%s) : (tensor<f32>) -> ()
    }) : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    "func.return"(%2) : (tensor<f32>) -> ()
  }) : () -> ()
}) : () -> ()
