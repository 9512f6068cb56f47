"builtin.module"() <{sym_name = "jit_take_along_axis"}> ({
  "func.func"() <{arg_attrs = [{jax.arg_info = "params['emb']"}, {jax.arg_info = "params['out']"}, {jax.arg_info = "batch0"}, {jax.arg_info = "batch1"}], function_type = (tensor<32x8xf32>, tensor<8x32xf32>, tensor<2x8xi32>, tensor<2x8xi32>) -> tensor<f32>, res_attrs = [{jax.result_info = ""}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg9: tensor<32x8xf32>, %arg10: tensor<8x32xf32>, %arg11: tensor<2x8xi32>, %arg12: tensor<2x8xi32>):
    %74 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %75 = "stablehlo.broadcast_in_dim"(%74) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<2x8xi32>
    %76 = "stablehlo.compare"(%arg11, %75) <{compare_type = #stablehlo<comparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<2x8xi32>, tensor<2x8xi32>) -> tensor<2x8xi1>
    %77 = "stablehlo.constant"() <{value = dense<32> : tensor<i32>}> : () -> tensor<i32>
    %78 = "stablehlo.broadcast_in_dim"(%77) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<2x8xi32>
    %79 = "stablehlo.add"(%arg11, %78) : (tensor<2x8xi32>, tensor<2x8xi32>) -> tensor<2x8xi32>
    %80 = "stablehlo.select"(%76, %79, %arg11) : (tensor<2x8xi1>, tensor<2x8xi32>, tensor<2x8xi32>) -> tensor<2x8xi32>
    %81 = "stablehlo.broadcast_in_dim"(%80) <{broadcast_dimensions = array<i64: 0, 1>}> : (tensor<2x8xi32>) -> tensor<2x8x1xi32>
    %82 = "stablehlo.gather"(%arg9, %81) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2>, indices_are_sorted = false, slice_sizes = array<i64: 1, 8>}> : (tensor<32x8xf32>, tensor<2x8x1xi32>) -> tensor<2x8x8xf32>
    %83 = "stablehlo.tanh"(%82) : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
    %84 = "stablehlo.dot_general"(%83, %arg10) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}> : (tensor<2x8x8xf32>, tensor<8x32xf32>) -> tensor<2x8x32xf32>
    %85 = "func.call"(%84) <{callee = @log_softmax}> : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
    %86 = "stablehlo.broadcast_in_dim"(%arg12) <{broadcast_dimensions = array<i64: 0, 1>}> : (tensor<2x8xi32>) -> tensor<2x8x1xi32>
    %87 = "func.call"(%85, %86) <{callee = @take_along_axis}> : (tensor<2x8x32xf32>, tensor<2x8x1xi32>) -> tensor<2x8x1xf32>
    %88 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %89 = "stablehlo.reduce"(%87, %88) <{dimensions = array<i64: 0, 1, 2>}> ({
    ^bb0(%arg13: tensor<f32>, %arg14: tensor<f32>):
      %93 = "stablehlo.add"(%arg13, %arg14) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%93) : (tensor<f32>) -> ()
    }) : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<f32>
    %90 = "stablehlo.constant"() <{value = dense<1.600000e+01> : tensor<f32>}> : () -> tensor<f32>
    %91 = "stablehlo.divide"(%89, %90) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %92 = "stablehlo.negate"(%91) : (tensor<f32>) -> tensor<f32>
    "func.return"(%92) : (tensor<f32>) -> ()
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
}) {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32, zb.param_values = {params.emb = dense<"0x6CBF803D7F4687BDBDF2A33EDFD5563DA12189BEFD22393E79E9263FE673F23EFE27B4BE55F921BFEA8E9FBE6E45A93C4ECD94BFEC0AE0BD037A1FBFE075BBBE8F548BBE18F221BE3DC1523E1471053F979E83BD46E82E3F334AAABE21F9333ED249E73E8589403DF855BEBE32F6EBBE0A5B6ABED57AE13D2B3B01BF1F32D6BDE20BA3BDDB748A3E9ACFDB3D69F3353E5061A7BE70B984BD9EB2C83EC0283F3F0F2921BF41C8413FA5452C3F0604C83EBA66073E7EBA20BE6CA03A3FBFE97A3FF99B663F5255283F91FA363E2FAA1ABFFAF311BBBE0EA83E07E924BF704D4A3E18175C3EDB2FB23E2D9117BF5765A9BE71745FBE12BC15BF9BA35E3F03E87DBEB56E283E9F6304BE3DAF4A3F9701293F6623A23E4E068DBF551CD53C0F06AF3ED081003F282F9EBEAB37693FE20329BFE759A9BE705FEF3E7EEDC83C3327803F2D0BC13D0219A2BE015041BEADAA0BBF068B23BFA662A13E48C7943E1AB4253FD82DC1BEAC34583F7B2413BE3686493F1B965DBEA248BCBEBDC7FF3DA806043FB2DFA43D38E595BE16AD2BBF046533BFD3AF803ED55DFD3ED73CA8BDCA8409BFB17FDF3EF3E323BFA18BB6BE07FB9E3E500290BF3CD2453E6AE694BE09CE5F3D67091BBD13F7CE3D41B5B13E8524C2BEBDE2353F48E1B93EDDFED73E431A153F629FC93E8A15D83ED3D01A3D87A036BF43498ABDE9FEC4BE671C36BFED53043E758C91BEA2D003BF0F8105BFF76D093EDAA3373E4946293F5AFAE3BB015B053F6A7D333FA138133F246197BF82451D3FACE22D3E8FF8583E85113E3EBFF8433E438A233E7CC337BEC96873BFAF0E5FBD5FC1CDBECB420A3F34D913BE21F52A3DC77FD9BE27B882BE2BF5BCBBC6203EBF66F3193E693C59BDABC517BFA67C99BF6257833EEF5C18BEA2AE87BE85D2F1BD4982683F1AFCCBBC7165313D67583EBF02DC523F7EE0EA3E5291083F7B44C33CE3A9EA3EBEEC3D3EF6F99C3E79D89BBD5CA83CBF80B1033FC2AC77BFF5B1F5BD586ED1BD717C05BFA3F59C3E3B23CDBD35AD5FBE5914853E2B0274BE19CA313FEBF1333EC6DB72BEADDD78BF756427BF451D0B3F3546CFBCC5F510BE1256523FDA2D24BFABED95BE03F771BE331A963E71DDA9BEF4089DBE89754DBFA4B6BA3E265FCE3EA7E773BE9642A73D6E7525BF7E9171BEB260303FFFFC8A3DFFDC933F7785C9BE858D943EAE32C8BD70D9903E454D6CBBAEAA8FBE221CDEBEF239C43F16671EBDF81081BFB00AA6BE0394AD3E8D0080BE1A232E3F964E003FA9FE9BBD4AC671BE529D00BF0231B3BEF48F3CBFA8291A3F159C4B3F22C920BF634117BF995E62BF27BFF6BE39CEC6BF323612BF5301263FFDFB30BE08C6DA3E275A7ABE8C5D613FCDFFCB3DCE9543BEEA5AA33F2D2126BE0C511CBF7FC1CE3D7D119FBC537D083F33F0EBBEEE01CE3EB94DDA3E"> : tensor<32x8xf32>, params.out = dense<"0x8EEDAABE7029A73D29ACD4BEB821963F7E42B4BE60F967BE616D08BFCF3631BEAF8B40BBD48DC43EDA489CBE873BBEBD864F35BFA2D0D3BE275FB03F7547053F680BC8BED52F2BBFCCBFF9BE08B131BCBA3E8E3C6B8EBEBE79AE24BF8010363F5143673E61C73FBE03F5E1BD4F8F87BE2BE8BBBF1CE06C3D990709BFF65700BF3DE8A3BE2078BB3EF4D315BF899637BF58CDA33E521EC13EAE7CF5BE4BF98F3ED95015BEF8421A3E256721BF9238D53E64041A3F3B17A33E5EEF8E3EF56CF1BF4371053EB27250BC199396BD8F6DA1BE62C6E23C0D01533E3E0F07BED2386DBE93681D3FAB7C0DBF20DC033F540EB53DFAE6CDBE827814BEB384EBBE07D1AC3E2E20323E328A8EBE7D150DBF887A1A3E3917F53E082369BD4D32563EA18640BEB9610A3D092315BEB18C163E3A4041BFACE9A43E6C73EBBD7A9B373E213D2EBE6206243EBD4909BF3636183FC00D5ABFC70505BF7252F13D6A3E3B3F92660E3EB7DBFDBD5B6936BF08DEC3BD1DD522BC8E64583F99439F3E51B943BFC0B6813FBC3E4ABE4624E1BEFDC63C3FB2CCCBBC321C3CBE6F09E03DA24AD83E484BFE3EA20630BF3ECE7F3F8565F23EA42642BEB193D1BE3311F8BED6AD7C3D65E4A5BEC8CEC3BE5EAECF3E92A83A3E3E054ABEA7F7BB3E43062F3F75180CBF56719ABEAA4FF13E7D0CB83EBF23E83D38CA143F864A0BBF63543DBF6DD3DDBE66F87A3D58CCCBBEA87479BE9C99F9BE72D49EBEDE9C00BF88243C3EFB7DCB3E03FD75BE7C3DD4BD8DBE94BE1400883E0363363D550D4C3F6D380CBFED99393ED752633E9D8B38BE7E62953E832138BF789A873F1DC82BBF7D78EB3EF3800FBF2350133F1A0145BE9D39A23DFB7EDA3CDBE40C3FDEA124BE57E6BDBF3693C2BE151FBC3D0C8561BEFB12C53E3CF6013F7E5197BDB3AC3EBF532C313F7FA10A3F952F19BE33EE863FCE9F32BE248D11BF499D9FBD75F6093FF3FCEFBEBEC1793FBE82E5BE0555F43EE3618B3E22C19DBDE84E0A3F68F93FBFEAC42D3FC66C02BD09DD8ABEDFC9BF3EC5AA073F5011C53EBEEF7F3F3B550A3FF249243F86348ABE23295A3DA01F903E2B5811BCEF6F1A3E672A5A3E5F20D83E521850BDE21833BE7F0CD4BE9248E4BEE212163F9A192DBD3075C93E051026BFE41578BF9F4806BFACC4123FC3B6083FF7002A3E065BCDBE21F185BD107418BE59A030BE7363A0BF10A1DBBEE7ABC2BD4E1A423FD499A43D4F50333FF49349BE666001BE2090F9BFA2396D3E760E8C3EDBC2613FC43879BEE5D3403D7B9DB4BE978F16BF3E8EB6BEA6A330BEFE7E2D3F89F0903A2561CABE6C48913D07CBDE3D8B1DADBE7B55123F6BB571BF71ABDABDC541AA3EC2512BBF40F6383E857D253F9A47683E295758BFFD6ABABE1EBC1D3F66BF183E6387A1BB0BE5613EAA96B83EFA5DB5BE52AF14BEF557923D"> : tensor<8x32xf32>}} : () -> ()
