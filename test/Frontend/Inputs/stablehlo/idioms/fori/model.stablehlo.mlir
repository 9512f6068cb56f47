"builtin.module"() <{sym_name = "jit_fori"}> ({
  "func.func"() <{arg_attrs = [{jax.arg_info = "params['emb']"}, {jax.arg_info = "params['layers']['b']"}, {jax.arg_info = "params['layers']['w']"}, {jax.arg_info = "params['out']"}, {jax.arg_info = "batch0"}, {jax.arg_info = "batch1"}], function_type = (tensor<32x8xf32>, tensor<3x8xf32>, tensor<3x8x8xf32>, tensor<8x32xf32>, tensor<2x8xi32>, tensor<2x8xi32>) -> tensor<f32>, res_attrs = [{jax.result_info = ""}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg13: tensor<32x8xf32>, %arg14: tensor<3x8xf32>, %arg15: tensor<3x8x8xf32>, %arg16: tensor<8x32xf32>, %arg17: tensor<2x8xi32>, %arg18: tensor<2x8xi32>):
    %122 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %123 = "stablehlo.broadcast_in_dim"(%122) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<2x8xi32>
    %124 = "stablehlo.compare"(%arg17, %123) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<2x8xi32>, tensor<2x8xi32>) -> tensor<2x8xi1>
    %125 = "stablehlo.constant"() <{value = dense<32> : tensor<i32>}> : () -> tensor<i32>
    %126 = "stablehlo.broadcast_in_dim"(%125) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<2x8xi32>
    %127 = "stablehlo.add"(%arg17, %126) : (tensor<2x8xi32>, tensor<2x8xi32>) -> tensor<2x8xi32>
    %128 = "stablehlo.select"(%124, %127, %arg17) : (tensor<2x8xi1>, tensor<2x8xi32>, tensor<2x8xi32>) -> tensor<2x8xi32>
    %129 = "stablehlo.broadcast_in_dim"(%128) <{broadcast_dimensions = array<i64: 0, 1>}> : (tensor<2x8xi32>) -> tensor<2x8x1xi32>
    %130 = "stablehlo.gather"(%arg13, %129) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 8>}> : (tensor<32x8xf32>, tensor<2x8x1xi32>) -> tensor<2x8x8xf32>
    %131 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %132 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %133:5 = "stablehlo.while"(%arg15, %arg14, %132, %131, %130) ({
    ^bb0(%arg26: tensor<3x8x8xf32>, %arg27: tensor<3x8xf32>, %arg28: tensor<i32>, %arg29: tensor<i32>, %arg30: tensor<2x8x8xf32>):
      %147 = "stablehlo.constant"() <{value = dense<3> : tensor<i32>}> : () -> tensor<i32>
      %148 = "stablehlo.compare"(%arg28, %147) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
      "stablehlo.return"(%148) : (tensor<i1>) -> ()
    }, {
    ^bb0(%arg21: tensor<3x8x8xf32>, %arg22: tensor<3x8xf32>, %arg23: tensor<i32>, %arg24: tensor<i32>, %arg25: tensor<2x8x8xf32>):
      %144:2 = "func.call"(%arg21, %arg22, %arg24, %arg25) <{callee = @None}> : (tensor<3x8x8xf32>, tensor<3x8xf32>, tensor<i32>, tensor<2x8x8xf32>) -> (tensor<i32>, tensor<2x8x8xf32>)
      %145 = "stablehlo.constant"() <{value = dense<1> : tensor<i32>}> : () -> tensor<i32>
      %146 = "stablehlo.add"(%arg23, %145) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      "stablehlo.return"(%arg21, %arg22, %146, %144#0, %144#1) : (tensor<3x8x8xf32>, tensor<3x8xf32>, tensor<i32>, tensor<i32>, tensor<2x8x8xf32>) -> ()
    }) : (tensor<3x8x8xf32>, tensor<3x8xf32>, tensor<i32>, tensor<i32>, tensor<2x8x8xf32>) -> (tensor<3x8x8xf32>, tensor<3x8xf32>, tensor<i32>, tensor<i32>, tensor<2x8x8xf32>)
    %134 = "stablehlo.dot_general"(%133#4, %arg16) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}> : (tensor<2x8x8xf32>, tensor<8x32xf32>) -> tensor<2x8x32xf32>
    %135 = "func.call"(%134) <{callee = @log_softmax}> : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
    %136 = "stablehlo.broadcast_in_dim"(%arg18) <{broadcast_dimensions = array<i64: 0, 1>}> : (tensor<2x8xi32>) -> tensor<2x8x1xi32>
    %137 = "func.call"(%135, %136) <{callee = @take_along_axis}> : (tensor<2x8x32xf32>, tensor<2x8x1xi32>) -> tensor<2x8x1xf32>
    %138 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %139 = "stablehlo.reduce"(%137, %138) <{dimensions = array<i64: 0, 1, 2>}> ({
    ^bb0(%arg19: tensor<f32>, %arg20: tensor<f32>):
      %143 = "stablehlo.add"(%arg19, %arg20) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%143) : (tensor<f32>) -> ()
    }) : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<f32>
    %140 = "stablehlo.constant"() <{value = dense<1.600000e+01> : tensor<f32>}> : () -> tensor<f32>
    %141 = "stablehlo.divide"(%139, %140) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %142 = "stablehlo.negate"(%141) : (tensor<f32>) -> tensor<f32>
    "func.return"(%142) : (tensor<f32>) -> ()
  }) : () -> ()
  "func.func"() <{function_type = (tensor<3x8x8xf32>, tensor<3x8xf32>, tensor<i32>, tensor<2x8x8xf32>) -> (tensor<i32>, tensor<2x8x8xf32>), res_attrs = [{}, {}], sym_name = "None", sym_visibility = "private"}> ({
  ^bb0(%arg9: tensor<3x8x8xf32>, %arg10: tensor<3x8xf32>, %arg11: tensor<i32>, %arg12: tensor<2x8x8xf32>):
    %74 = "stablehlo.constant"() <{value = dense<1> : tensor<i32>}> : () -> tensor<i32>
    %75 = "stablehlo.add"(%arg11, %74) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %76 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %77 = "stablehlo.compare"(%arg11, %76) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %78 = "stablehlo.convert"(%arg11) : (tensor<i32>) -> tensor<i32>
    %79 = "stablehlo.constant"() <{value = dense<3> : tensor<i32>}> : () -> tensor<i32>
    %80 = "stablehlo.add"(%78, %79) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %81 = "stablehlo.select"(%77, %80, %arg11) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %82 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %83 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %84 = "stablehlo.compare"(%82, %83) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %85 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %86 = "stablehlo.constant"() <{value = dense<8> : tensor<i32>}> : () -> tensor<i32>
    %87 = "stablehlo.add"(%85, %86) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %88 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %89 = "stablehlo.select"(%84, %87, %88) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %90 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %91 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %92 = "stablehlo.compare"(%90, %91) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %93 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %94 = "stablehlo.constant"() <{value = dense<8> : tensor<i32>}> : () -> tensor<i32>
    %95 = "stablehlo.add"(%93, %94) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %96 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %97 = "stablehlo.select"(%92, %95, %96) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %98 = "stablehlo.dynamic_slice"(%arg9, %81, %89, %97) <{slice_sizes = array<i64: 1, 8, 8>}> : (tensor<3x8x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x8x8xf32>
    %99 = "stablehlo.reshape"(%98) : (tensor<1x8x8xf32>) -> tensor<8x8xf32>
    %100 = "stablehlo.dot_general"(%arg12, %99) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}> : (tensor<2x8x8xf32>, tensor<8x8xf32>) -> tensor<2x8x8xf32>
    %101 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %102 = "stablehlo.compare"(%arg11, %101) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %103 = "stablehlo.convert"(%arg11) : (tensor<i32>) -> tensor<i32>
    %104 = "stablehlo.constant"() <{value = dense<3> : tensor<i32>}> : () -> tensor<i32>
    %105 = "stablehlo.add"(%103, %104) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %106 = "stablehlo.select"(%102, %105, %arg11) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %107 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %108 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %109 = "stablehlo.compare"(%107, %108) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %110 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %111 = "stablehlo.constant"() <{value = dense<8> : tensor<i32>}> : () -> tensor<i32>
    %112 = "stablehlo.add"(%110, %111) : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %113 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %114 = "stablehlo.select"(%109, %112, %113) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %115 = "stablehlo.dynamic_slice"(%arg10, %106, %114) <{slice_sizes = array<i64: 1, 8>}> : (tensor<3x8xf32>, tensor<i32>, tensor<i32>) -> tensor<1x8xf32>
    %116 = "stablehlo.reshape"(%115) : (tensor<1x8xf32>) -> tensor<8xf32>
    %117 = "stablehlo.broadcast_in_dim"(%116) <{broadcast_dimensions = array<i64: 2>}> : (tensor<8xf32>) -> tensor<1x1x8xf32>
    %118 = "stablehlo.broadcast_in_dim"(%117) <{broadcast_dimensions = array<i64: 0, 1, 2>}> : (tensor<1x1x8xf32>) -> tensor<2x8x8xf32>
    %119 = "stablehlo.add"(%100, %118) : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
    %120 = "stablehlo.tanh"(%119) : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
    %121 = "stablehlo.add"(%arg12, %120) : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
    "func.return"(%75, %121) : (tensor<i32>, tensor<2x8x8xf32>) -> ()
  }) : () -> ()
  "func.func"() <{arg_attrs = [{}], function_type = (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>, res_attrs = [{}], sym_name = "log_softmax", sym_visibility = "private"}> ({
  ^bb0(%arg4: tensor<2x8x32xf32>):
    %57 = "stablehlo.constant"() <{value = dense<0xFF800000> : tensor<f32>}> : () -> tensor<f32>
    %58 = "stablehlo.reduce"(%arg4, %57) <{dimensions = array<i64: 2>}> ({
    ^bb0(%arg7: tensor<f32>, %arg8: tensor<f32>):
      %73 = "stablehlo.maximum"(%arg7, %arg8) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%73) : (tensor<f32>) -> ()
    }) : (tensor<2x8x32xf32>, tensor<f32>) -> tensor<2x8xf32>
    %59 = "stablehlo.constant"() <{value = dense<0xFF800000> : tensor<f32>}> : () -> tensor<f32>
    %60 = "stablehlo.broadcast_in_dim"(%59) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<2x8xf32>
    %61 = "stablehlo.maximum"(%60, %58) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
    %62 = "stablehlo.broadcast_in_dim"(%61) <{broadcast_dimensions = array<i64: 0, 1>}> : (tensor<2x8xf32>) -> tensor<2x8x1xf32>
    %63 = "stablehlo.broadcast_in_dim"(%62) <{broadcast_dimensions = array<i64: 0, 1, 2>}> : (tensor<2x8x1xf32>) -> tensor<2x8x32xf32>
    %64 = "stablehlo.subtract"(%arg4, %63) : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
    %65 = "stablehlo.exponential"(%64) : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
    %66 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %67 = "stablehlo.reduce"(%65, %66) <{dimensions = array<i64: 2>}> ({
    ^bb0(%arg5: tensor<f32>, %arg6: tensor<f32>):
      %72 = "stablehlo.add"(%arg5, %arg6) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%72) : (tensor<f32>) -> ()
    }) : (tensor<2x8x32xf32>, tensor<f32>) -> tensor<2x8xf32>
    %68 = "stablehlo.broadcast_in_dim"(%67) <{broadcast_dimensions = array<i64: 0, 1>}> : (tensor<2x8xf32>) -> tensor<2x8x1xf32>
    %69 = "stablehlo.log"(%68) : (tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
    %70 = "stablehlo.broadcast_in_dim"(%69) <{broadcast_dimensions = array<i64: 0, 1, 2>}> : (tensor<2x8x1xf32>) -> tensor<2x8x32xf32>
    %71 = "stablehlo.subtract"(%64, %70) : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
    "func.return"(%71) : (tensor<2x8x32xf32>) -> ()
  }) : () -> ()
  "func.func"() <{arg_attrs = [{}, {}], function_type = (tensor<2x8x32xf32>, tensor<2x8x1xi32>) -> tensor<2x8x1xf32>, res_attrs = [{}], sym_name = "take_along_axis", sym_visibility = "private"}> ({
  ^bb0(%arg0: tensor<2x8x32xf32>, %arg1: tensor<2x8x1xi32>):
    %0 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %1 = "stablehlo.broadcast_in_dim"(%0) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<2x8x1xi32>
    %2 = "stablehlo.compare"(%arg1, %1) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<2x8x1xi32>, tensor<2x8x1xi32>) -> tensor<2x8x1xi1>
    %3 = "stablehlo.constant"() <{value = dense<32> : tensor<i32>}> : () -> tensor<i32>
    %4 = "stablehlo.broadcast_in_dim"(%3) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<2x8x1xi32>
    %5 = "stablehlo.add"(%arg1, %4) : (tensor<2x8x1xi32>, tensor<2x8x1xi32>) -> tensor<2x8x1xi32>
    %6 = "stablehlo.select"(%2, %5, %arg1) : (tensor<2x8x1xi1>, tensor<2x8x1xi32>, tensor<2x8x1xi32>) -> tensor<2x8x1xi32>
    %7 = "stablehlo.reshape"(%6) : (tensor<2x8x1xi32>) -> tensor<2x8x1x1xi32>
    %8 = "stablehlo.constant"() <{value = dense<2> : tensor<1xi32>}> : () -> tensor<1xi32>
    %9 = "stablehlo.constant"() <{value = dense<2> : tensor<1xi32>}> : () -> tensor<1xi32>
    %10 = "stablehlo.constant"() <{value = dense<2> : tensor<i32>}> : () -> tensor<i32>
    %11 = "stablehlo.broadcast_in_dim"(%10) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<1xi32>
    %12 = "stablehlo.constant"() <{value = dense<8> : tensor<i32>}> : () -> tensor<i32>
    %13 = "stablehlo.broadcast_in_dim"(%12) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<1xi32>
    %14 = "stablehlo.constant"() <{value = dense<32> : tensor<i32>}> : () -> tensor<i32>
    %15 = "stablehlo.broadcast_in_dim"(%14) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<1xi32>
    %16 = "stablehlo.concatenate"(%11, %13, %15) <{dimension = 0 : i64}> : (tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<3xi32>
    %17 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %18 = "stablehlo.broadcast_in_dim"(%17) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<1xi32>
    %19 = "stablehlo.compare"(%8, %18) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<1xi32>, tensor<1xi32>) -> tensor<1xi1>
    %20 = "stablehlo.constant"() <{value = dense<3> : tensor<i32>}> : () -> tensor<i32>
    %21 = "stablehlo.broadcast_in_dim"(%20) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<1xi32>
    %22 = "stablehlo.add"(%8, %21) : (tensor<1xi32>, tensor<1xi32>) -> tensor<1xi32>
    %23 = "stablehlo.select"(%19, %22, %8) : (tensor<1xi1>, tensor<1xi32>, tensor<1xi32>) -> tensor<1xi32>
    %24 = "stablehlo.broadcast_in_dim"(%23) <{broadcast_dimensions = array<i64: 0>}> : (tensor<1xi32>) -> tensor<1x1xi32>
    %25 = "stablehlo.gather"(%16, %24) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<3xi32>, tensor<1x1xi32>) -> tensor<1xi32>
    %26 = "stablehlo.constant"() <{value = dense<1> : tensor<i32>}> : () -> tensor<i32>
    %27 = "stablehlo.broadcast_in_dim"(%26) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<1xi32>
    %28 = "stablehlo.constant"() <{value = dense<1> : tensor<i32>}> : () -> tensor<i32>
    %29 = "stablehlo.broadcast_in_dim"(%28) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<1xi32>
    %30 = "stablehlo.constant"() <{value = dense<1> : tensor<i32>}> : () -> tensor<i32>
    %31 = "stablehlo.broadcast_in_dim"(%30) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<1xi32>
    %32 = "stablehlo.concatenate"(%27, %29, %31) <{dimension = 0 : i64}> : (tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<3xi32>
    %33 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %34 = "stablehlo.broadcast_in_dim"(%33) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<1xi32>
    %35 = "stablehlo.compare"(%9, %34) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<1xi32>, tensor<1xi32>) -> tensor<1xi1>
    %36 = "stablehlo.constant"() <{value = dense<3> : tensor<i32>}> : () -> tensor<i32>
    %37 = "stablehlo.broadcast_in_dim"(%36) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<1xi32>
    %38 = "stablehlo.add"(%9, %37) : (tensor<1xi32>, tensor<1xi32>) -> tensor<1xi32>
    %39 = "stablehlo.select"(%35, %38, %9) : (tensor<1xi1>, tensor<1xi32>, tensor<1xi32>) -> tensor<1xi32>
    %40 = "stablehlo.broadcast_in_dim"(%39) <{broadcast_dimensions = array<i64: 0>}> : (tensor<1xi32>) -> tensor<1x1xi32>
    %41 = "stablehlo.gather"(%32, %40) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<3xi32>, tensor<1x1xi32>) -> tensor<1xi32>
    %42 = "stablehlo.subtract"(%25, %41) : (tensor<1xi32>, tensor<1xi32>) -> tensor<1xi32>
    %43 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %44 = "stablehlo.broadcast_in_dim"(%43) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<2x8x1x1xi32>
    %45 = "stablehlo.compare"(%7, %44) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction GE>}> : (tensor<2x8x1x1xi32>, tensor<2x8x1x1xi32>) -> tensor<2x8x1x1xi1>
    %46 = "stablehlo.broadcast_in_dim"(%42) <{broadcast_dimensions = array<i64: 3>}> : (tensor<1xi32>) -> tensor<1x1x1x1xi32>
    %47 = "stablehlo.broadcast_in_dim"(%46) <{broadcast_dimensions = array<i64: 0, 1, 2, 3>}> : (tensor<1x1x1x1xi32>) -> tensor<2x8x1x1xi32>
    %48 = "stablehlo.compare"(%7, %47) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LE>}> : (tensor<2x8x1x1xi32>, tensor<2x8x1x1xi32>) -> tensor<2x8x1x1xi1>
    %49 = "stablehlo.and"(%45, %48) : (tensor<2x8x1x1xi1>, tensor<2x8x1x1xi1>) -> tensor<2x8x1x1xi1>
    %50 = "stablehlo.constant"() <{value = dense<true> : tensor<i1>}> : () -> tensor<i1>
    %51 = "stablehlo.reduce"(%49, %50) <{dimensions = array<i64: 3>}> ({
    ^bb0(%arg2: tensor<i1>, %arg3: tensor<i1>):
      %56 = "stablehlo.and"(%arg2, %arg3) : (tensor<i1>, tensor<i1>) -> tensor<i1>
      "stablehlo.return"(%56) : (tensor<i1>) -> ()
    }) : (tensor<2x8x1x1xi1>, tensor<i1>) -> tensor<2x8x1xi1>
    %52 = "stablehlo.gather"(%arg0, %7) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [2], operand_batching_dims = [0, 1], start_indices_batching_dims = [0, 1], start_index_map = [2], index_vector_dim = 3>, indices_are_sorted = false, slice_sizes = array<i64: 1, 1, 1>}> : (tensor<2x8x32xf32>, tensor<2x8x1x1xi32>) -> tensor<2x8x1xf32>
    %53 = "stablehlo.constant"() <{value = dense<0x7FC00000> : tensor<f32>}> : () -> tensor<f32>
    %54 = "stablehlo.broadcast_in_dim"(%53) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<2x8x1xf32>
    %55 = "stablehlo.select"(%51, %52, %54) : (tensor<2x8x1xi1>, tensor<2x8x1xf32>, tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
    "func.return"(%55) : (tensor<2x8x1xf32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32, zb.param_values = {params.emb = dense<"0x6CBF803D7F4687BDBDF2A33EDFD5563DA12189BEFD22393E79E9263FE673F23EFE27B4BE55F921BFEA8E9FBE6E45A93C4ECD94BFEC0AE0BD037A1FBFE075BBBE8F548BBE18F221BE3DC1523E1471053F979E83BD46E82E3F334AAABE21F9333ED249E73E8589403DF855BEBE32F6EBBE0A5B6ABED57AE13D2B3B01BF1F32D6BDE20BA3BDDB748A3E9ACFDB3D69F3353E5061A7BE70B984BD9EB2C83EC0283F3F0F2921BF41C8413FA5452C3F0604C83EBA66073E7EBA20BE6CA03A3FBFE97A3FF99B663F5255283F91FA363E2FAA1ABFFAF311BBBE0EA83E07E924BF704D4A3E18175C3EDB2FB23E2D9117BF5765A9BE71745FBE12BC15BF9BA35E3F03E87DBEB56E283E9F6304BE3DAF4A3F9701293F6623A23E4E068DBF551CD53C0F06AF3ED081003F282F9EBEAB37693FE20329BFE759A9BE705FEF3E7EEDC83C3327803F2D0BC13D0219A2BE015041BEADAA0BBF068B23BFA662A13E48C7943E1AB4253FD82DC1BEAC34583F7B2413BE3686493F1B965DBEA248BCBEBDC7FF3DA806043FB2DFA43D38E595BE16AD2BBF046533BFD3AF803ED55DFD3ED73CA8BDCA8409BFB17FDF3EF3E323BFA18BB6BE07FB9E3E500290BF3CD2453E6AE694BE09CE5F3D67091BBD13F7CE3D41B5B13E8524C2BEBDE2353F48E1B93EDDFED73E431A153F629FC93E8A15D83ED3D01A3D87A036BF43498ABDE9FEC4BE671C36BFED53043E758C91BEA2D003BF0F8105BFF76D093EDAA3373E4946293F5AFAE3BB015B053F6A7D333FA138133F246197BF82451D3FACE22D3E8FF8583E85113E3EBFF8433E438A233E7CC337BEC96873BFAF0E5FBD5FC1CDBECB420A3F34D913BE21F52A3DC77FD9BE27B882BE2BF5BCBBC6203EBF66F3193E693C59BDABC517BFA67C99BF6257833EEF5C18BEA2AE87BE85D2F1BD4982683F1AFCCBBC7165313D67583EBF02DC523F7EE0EA3E5291083F7B44C33CE3A9EA3EBEEC3D3EF6F99C3E79D89BBD5CA83CBF80B1033FC2AC77BFF5B1F5BD586ED1BD717C05BFA3F59C3E3B23CDBD35AD5FBE5914853E2B0274BE19CA313FEBF1333EC6DB72BEADDD78BF756427BF451D0B3F3546CFBCC5F510BE1256523FDA2D24BFABED95BE03F771BE331A963E71DDA9BEF4089DBE89754DBFA4B6BA3E265FCE3EA7E773BE9642A73D6E7525BF7E9171BEB260303FFFFC8A3DFFDC933F7785C9BE858D943EAE32C8BD70D9903E454D6CBBAEAA8FBE221CDEBEF239C43F16671EBDF81081BFB00AA6BE0394AD3E8D0080BE1A232E3F964E003FA9FE9BBD4AC671BE529D00BF0231B3BEF48F3CBFA8291A3F159C4B3F22C920BF634117BF995E62BF27BFF6BE39CEC6BF323612BF5301263FFDFB30BE08C6DA3E275A7ABE8C5D613FCDFFCB3DCE9543BEEA5AA33F2D2126BE0C511CBF7FC1CE3D7D119FBC537D083F33F0EBBEEE01CE3EB94DDA3E"> : tensor<32x8xf32>, params.layers.b = dense<[[-0.333843648, 0.0816220045, -0.415375978, 1.17290401, -0.352069795, -0.226537228, -5.329190e-01, -0.173060641], [-0.00293801329, 0.383894563, -0.305243313, -0.0928869768, -0.708244681, -0.413701117, 1.37790382, 0.520621598], [-0.390712023, -0.668698608, -0.487791419, -0.0108454302, 0.0173638947, -0.372180313, -0.643287241, 0.71118927]]> : tensor<3x8xf32>, params.layers.w = dense<"0x5143673E61C73FBE03F5E1BD4F8F87BE2BE8BBBF1CE06C3D990709BFF65700BF3DE8A3BE2078BB3EF4D315BF899637BF58CDA33E521EC13EAE7CF5BE4BF98F3ED95015BEF8421A3E256721BF9238D53E64041A3F3B17A33E5EEF8E3EF56CF1BF4371053EB27250BC199396BD8F6DA1BE62C6E23C0D01533E3E0F07BED2386DBE93681D3FAB7C0DBF20DC033F540EB53DFAE6CDBE827814BEB384EBBE07D1AC3E2E20323E328A8EBE7D150DBF887A1A3E3917F53E082369BD4D32563EA18640BEB9610A3D092315BEB18C163E3A4041BFACE9A43E6C73EBBD7A9B373E213D2EBE6206243EBD4909BF3636183FC00D5ABFC70505BF7252F13D6A3E3B3F92660E3EB7DBFDBD5B6936BF08DEC3BD1DD522BC8E64583F99439F3E51B943BFC0B6813FBC3E4ABE4624E1BEFDC63C3FB2CCCBBC321C3CBE6F09E03DA24AD83E484BFE3EA20630BF3ECE7F3F8565F23EA42642BEB193D1BE3311F8BED6AD7C3D65E4A5BEC8CEC3BE5EAECF3E92A83A3E3E054ABEA7F7BB3E43062F3F75180CBF56719ABEAA4FF13E7D0CB83EBF23E83D38CA143F864A0BBF63543DBF6DD3DDBE66F87A3D58CCCBBEA87479BE9C99F9BE72D49EBEDE9C00BF88243C3EFB7DCB3E03FD75BE7C3DD4BD8DBE94BE1400883E0363363D550D4C3F6D380CBFED99393ED752633E9D8B38BE7E62953E832138BF789A873F1DC82BBF7D78EB3EF3800FBF2350133F1A0145BE9D39A23DFB7EDA3CDBE40C3FDEA124BE57E6BDBF3693C2BE151FBC3D0C8561BEFB12C53E3CF6013F7E5197BDB3AC3EBF532C313F7FA10A3F952F19BE33EE863FCE9F32BE248D11BF499D9FBD75F6093FF3FCEFBEBEC1793FBE82E5BE0555F43EE3618B3E22C19DBDE84E0A3F68F93FBFEAC42D3FC66C02BD09DD8ABEDFC9BF3EC5AA073F5011C53EBEEF7F3F3B550A3FF249243F86348ABE23295A3DA01F903E2B5811BCEF6F1A3E672A5A3E5F20D83E521850BDE21833BE7F0CD4BE9248E4BEE212163F9A192DBD3075C93E051026BFE41578BF9F4806BFACC4123FC3B6083FF7002A3E065BCDBE21F185BD107418BE59A030BE7363A0BF10A1DBBE"> : tensor<3x8x8xf32>, params.out = dense<"0xE7ABC2BD4E1A423FD499A43D4F50333FF49349BE666001BE2090F9BFA2396D3E760E8C3EDBC2613FC43879BEE5D3403D7B9DB4BE978F16BF3E8EB6BEA6A330BEFE7E2D3F89F0903A2561CABE6C48913D07CBDE3D8B1DADBE7B55123F6BB571BF71ABDABDC541AA3EC2512BBF40F6383E857D253F9A47683E295758BFFD6ABABE1EBC1D3F66BF183E6387A1BB0BE5613EAA96B83EFA5DB5BE52AF14BEF557923DD0408BBE86A788BDA920263F0BC3F7BEE29C763F5B8E703FFC515BBF3F6890BD45752F3E73C8C2BE74B7BDBE1A1DF3BDC63ABD3EC6E682BE1AD1693F7977143EFE1252BD5781393FF753A03E28133D3E3B8B29BEAE30683F8AD3CF3E104BD0BDA9E149BF81F33E3E136612BF1EA45BBFF2EC0EBEFB1C103E5828243F879D103E4C57CE3EB9E91CBF679538BC81627E3D2ABCDC3E38B16D3D1ED8CD3E341381BEDE45373E5E69543EA7F81FBF66C0B33D8F0624BE27B973BF245AF53E8A4539BE3C36DABEA92F41BE61848D3D2E03413F65EAA9BD65DF713E73D12F3FC596883EB6C6083F1AF973BE7D63C53E3E78EDBC4F86093FA47400BF1991C7BECC65223F3DCAC8BDB1C937BE4ADE1E3DE882B0BE0E7D2A3F90E41FBF5D369ABDCCA3313E58E855BDB762CDBEC14EDEBE4CCD593EC9E603BF2970A53E4B1743BF5F138EBEA0B5943C844620BF2FEAA63EB6DE17BC109E04BFEE6A42BF3C6548BFF808D13C021314BF60B42EBF7EC6ECBD92C2913FC5190E3EA64EC33ED7D2D93D8571C83E54EA2BBF116C5CBEC7CF053E49C612BCDF99C4BDDB76AABECA4A04BED431C6BE50FF9ABFA7E518BFC888733E554E473F6523683FC725463DCAB4E43E3E71E83EE637B1BE185659BF67077D3CCD8F61BFD0CD23BE90AD9B3ED6C435BF2A48843CEAB81E3F2A18393EE0B6853E2420E83EBCD15D3FA70E9B3D49601D3F266B03BDB8D18BBE3730213E8D169BBE99B892BEE4949BBE3BE892BF1C10583D5BC521BFEAAF5BBD9498393F476085BE1DC18ABE95942E3FB2DA8B3EAEFDF93EBCE835BE6282BF3EBFA8AFBE730EADBE77A3983EFC2E99BEE161C43E5C11993FD9D357BF7790C0BEF3600F3F5F8F94BD989E143FC94901BFF2A5293E6F2B9ABD58BD8F3D0A88293E2B291CBF567D09BF6D1A333F1C20163E1BCC593DB287B4BCBD8C363EBCF513BF41C0FFBE20FA263FE4E79A3D51ADD93ECC0C9BBE8A38303F55C8303EDA65763E87798C3ECC08CCBEF1CF6EBF229309BFF9B4503FD07C263FAD9F31BE52751ABE80AF043FA373ACBD264E26BF51FD213FC050743EB60BA1BF745A20BE481E933DFC65763E85CD9B3DF9BFA2BE14136DBD11F0163ED53709BEC5693EBE4944203FE254F2BEE0EC32BE500082BF027D8A3E2409D43EA2698C3E96ECEA3E50A4613E2D5E2F3E31A9723EA7DC08BE211B183F0A7832BE592E3BBF6B8BD93E"> : tensor<8x32xf32>}} : () -> ()
