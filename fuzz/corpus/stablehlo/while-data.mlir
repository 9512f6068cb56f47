"builtin.module"() ({
  "func.func"() <{function_type = (tensor<f32>) -> tensor<f32>, sym_name = "main"}> ({
  ^bb0(%arg0: tensor<f32>):
    %0:1 = "stablehlo.while"(%arg0) ({
    ^bb0(%a: tensor<f32>):
      %c = "stablehlo.constant"() <{value = dense<1.0e1> : tensor<f32>}> : () -> tensor<f32>
      %1 = "stablehlo.compare"(%a, %c) <{comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<f32>, tensor<f32>) -> tensor<i1>
      "stablehlo.return"(%1) : (tensor<i1>) -> ()
    }, {
    ^bb0(%a: tensor<f32>):
      %2 = "stablehlo.add"(%a, %a) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%2) : (tensor<f32>) -> ()
    }) : (tensor<f32>) -> tensor<f32>
    "func.return"(%0#0) : (tensor<f32>) -> ()
  }) : () -> ()
}) : () -> ()
