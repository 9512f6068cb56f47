"builtin.module"() ({
  "func.func"() <{function_type = (tensor<64x32xf32>, tensor<4x2xi32>) -> tensor<f32>, sym_name = "main"}> ({
  ^bb0(%arg0: tensor<64x32xf32>, %arg1: tensor<4x2xi32>):
    %0 = "stablehlo.gather"(%arg0, %arg1) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0, 1], start_index_map = [0, 1], index_vector_dim = 1>, slice_sizes = array<i64: 1, 1>}> : (tensor<64x32xf32>, tensor<4x2xi32>) -> tensor<4xf32>
    %1 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    "func.return"(%1) : (tensor<f32>) -> ()
  }) : () -> ()
}) : () -> ()
