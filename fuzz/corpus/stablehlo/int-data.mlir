"builtin.module"() ({
  "func.func"() <{function_type = (tensor<64x32xf32>, tensor<4xi32>) -> tensor<f32>, sym_name = "main"}> ({
  ^bb0(%arg0: tensor<64x32xf32>, %arg1: tensor<4xi32>):
    %c = "stablehlo.constant"() <{value = dense<2> : tensor<4xi32>}> : () -> tensor<4xi32>
    %0 = "stablehlo.multiply"(%arg1, %c) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
    %1 = "stablehlo.reshape"(%0) : (tensor<4xi32>) -> tensor<4x1xi32>
    %2 = "stablehlo.gather"(%arg0, %1) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 32>}> : (tensor<64x32xf32>, tensor<4x1xi32>) -> tensor<4x32xf32>
    %3 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    "func.return"(%3) : (tensor<f32>) -> ()
  }) : () -> ()
}) : () -> ()
