"builtin.module"() ({
  "func.func"() <{function_type = (tensor<f32>) -> tensor<f32>, sym_name = "main"}> ({
  ^bb0(%arg0: tensor<f32>):
    %i = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %0:2 = "stablehlo.while"(%i, %arg0) ({
    ^bb0(%k: tensor<i32>, %a: tensor<f32>):
      %c = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
      %1 = "stablehlo.compare"(%k, %c) <{comparison_direction = #stablehlo<comparison_direction GE>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
      "stablehlo.return"(%1) : (tensor<i1>) -> ()
    }, {
    ^bb0(%k: tensor<i32>, %a: tensor<f32>):
      "stablehlo.return"(%k, %a) : (tensor<i32>, tensor<f32>) -> ()
    }) : (tensor<i32>, tensor<f32>) -> (tensor<i32>, tensor<f32>)
    "func.return"(%0#1) : (tensor<f32>) -> ()
  }) : () -> ()
}) : () -> ()
