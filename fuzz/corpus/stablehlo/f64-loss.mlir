"builtin.module"() ({
  "func.func"() <{arg_attrs = [{jax.arg_info = "params['w']"}], function_type = (tensor<4xf64>) -> tensor<f64>, sym_name = "main"}> ({
  ^bb0(%arg0: tensor<4xf64>):
    %0 = "stablehlo.constant"() <{value = dense<0.0> : tensor<f64>}> : () -> tensor<f64>
    %1 = "stablehlo.reduce"(%arg0, %0) <{dimensions = array<i64: 0>}> ({
    ^bb1(%a: tensor<f64>, %b: tensor<f64>):
      %s = "stablehlo.add"(%a, %b) : (tensor<f64>, tensor<f64>) -> tensor<f64>
      "stablehlo.return"(%s) : (tensor<f64>) -> ()
    }) : (tensor<4xf64>, tensor<f64>) -> tensor<f64>
    "func.return"(%1) : (tensor<f64>) -> ()
  }) : () -> ()
}) : () -> ()
