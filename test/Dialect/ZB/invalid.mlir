// RUN: zb-opt %s -split-input-file -verify-diagnostics

func.func @constant_type(%x: tensor<2xf32>) {
  // expected-error @+1 {{value type 'tensor<2xf32>' does not match result type 'tensor<3xf32>'}}
  %c = "zb.constant"() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<3xf32>
  return
}

// -----

func.func @compare_predicate(%x: tensor<2xf32>) {
  // expected-error @+1 {{unknown predicate 'gtt'; expected one of eq, ne, lt, le, gt, ge}}
  %m = zb.compare "gtt", %x, %x : tensor<2xf32> -> tensor<2xi1>
  return
}

// -----

func.func @compare_shape(%x: tensor<2xf32>) {
  // expected-error @+1 {{result shape must match the operand shape}}
  %m = zb.compare "gt", %x, %x : tensor<2xf32> -> tensor<3xi1>
  return
}

// -----

func.func @select_shape(%c: tensor<3xi1>, %x: tensor<2xf32>) {
  // expected-error @+1 {{condition shape must match the result shape}}
  %y = zb.select %c, %x, %x : tensor<3xi1>, tensor<2xf32>
  return
}

// -----

func.func @gelu_approximate(%x: tensor<2xf32>) {
  // expected-error @+1 {{approximate must be "none" or "tanh", got "fast"}}
  %y = zb.gelu %x {approximate = "fast"} : tensor<2xf32>
  return
}

// -----

func.func @cast_shape(%x: tensor<2xi64>) {
  // expected-error @+1 {{shape must not change}}
  %y = zb.cast %x : tensor<2xi64> -> tensor<3xf32>
  return
}

// -----

func.func @matmul_rank(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{expects 2-D operands and result}}
  %y = zb.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return
}

// -----

func.func @matmul_contraction(%a: tensor<3x4xf32>, %b: tensor<5x6xf32>) {
  // expected-error @+1 {{contraction sizes differ: op(lhs) is 3x4, op(rhs) is 5x6}}
  %y = zb.matmul %a, %b : (tensor<3x4xf32>, tensor<5x6xf32>) -> tensor<3x6xf32>
  return
}

// -----

func.func @matmul_result(%a: tensor<3x4xf32>, %b: tensor<4x6xf32>) {
  // expected-error @+1 {{result must be 3x6}}
  %y = zb.matmul %a, %b : (tensor<3x4xf32>, tensor<4x6xf32>) -> tensor<6x3xf32>
  return
}

// -----

func.func @matmul_element(%a: tensor<3x4xf32>, %b: tensor<4x6xf64>) {
  // expected-error @+1 {{element types of operands and result must match}}
  %y = zb.matmul %a, %b : (tensor<3x4xf32>, tensor<4x6xf64>) -> tensor<3x6xf32>
  return
}

// -----

func.func @batch_matmul_rank(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{expects operands and result of the same rank >= 3}}
  %y = zb.batch_matmul %a, %b : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return
}

// -----

func.func @batch_matmul_batch(%a: tensor<2x3x4xf32>, %b: tensor<3x4x5xf32>) {
  // expected-error @+1 {{batch dimensions (all but the last two) of operands and result must match}}
  %y = zb.batch_matmul %a, %b : (tensor<2x3x4xf32>, tensor<3x4x5xf32>) -> tensor<2x3x5xf32>
  return
}

// -----

func.func @batch_matmul_contraction(%a: tensor<2x3x4xf32>, %b: tensor<2x3x4xf32>) {
  // expected-error @+1 {{contraction sizes differ: op(lhs) is 3x4, op(rhs) is 3x4}}
  %y = zb.batch_matmul %a, %b : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return
}

// -----

func.func @batch_matmul_result(%a: tensor<2x3x4xf32>, %b: tensor<2x3x4xf32>) {
  // expected-error @+1 {{result matrices must be 3x3}}
  %y = zb.batch_matmul %a, %b {transpose_rhs} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x4x4xf32>
  return
}

// -----

func.func @batch_matmul_element(%a: tensor<2x3x4xf32>, %b: tensor<2x4x3xf16>) {
  // expected-error @+1 {{element types of operands and result must match}}
  %y = zb.batch_matmul %a, %b : (tensor<2x3x4xf32>, tensor<2x4x3xf16>) -> tensor<2x3x3xf32>
  return
}

// -----

func.func @broadcast_dims_count(%x: tensor<4xf32>) {
  // expected-error @+1 {{expects one entry in dims per operand dimension (1), got 2}}
  %y = zb.broadcast_in_dim %x dims [0, 1] : tensor<4xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @broadcast_dims_range(%x: tensor<4xf32>) {
  // expected-error @+1 {{dims[0] = 2 is out of range}}
  %y = zb.broadcast_in_dim %x dims [2] : tensor<4xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @broadcast_dims_order(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{dims must be strictly increasing}}
  %y = zb.broadcast_in_dim %x dims [1, 0] : tensor<4x4xf32> -> tensor<4x4xf32>
  return
}

// -----

func.func @broadcast_size(%x: tensor<3xf32>) {
  // expected-error @+1 {{operand dimension 0 (size 3) cannot broadcast to result dimension 1 (size 4)}}
  %y = zb.broadcast_in_dim %x dims [1] : tensor<3xf32> -> tensor<2x4xf32>
  return
}

// -----

func.func @broadcast_element(%x: tensor<4xf32>) {
  // expected-error @+1 {{element type must not change}}
  %y = zb.broadcast_in_dim %x dims [1] : tensor<4xf32> -> tensor<2x4xf64>
  return
}

// -----

func.func @reshape_count(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{element count changes from 12 to 10}}
  %y = zb.reshape %x : tensor<4x3xf32> -> tensor<2x5xf32>
  return
}

// -----

func.func @reshape_element(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{element type must not change}}
  %y = zb.reshape %x : tensor<4x3xf32> -> tensor<12xf64>
  return
}

// -----

func.func @reshape_dynamic(%x: tensor<?x3xf32>) {
  // expected-error @+1 {{expects static shapes}}
  %y = zb.reshape %x : tensor<?x3xf32> -> tensor<12xf32>
  return
}

// -----

func.func @reduce_axis_range(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %y = zb.reduce_sum %x axes [2] : tensor<4x3xf32> -> tensor<4xf32>
  return
}

// -----

func.func @reduce_axis_order(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{axes must be strictly increasing}}
  %y = zb.reduce_max %x axes [1, 0] : tensor<4x3xf32> -> tensor<f32>
  return
}

// -----

func.func @reduce_shape(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{result shape must be the operand shape without the reduced axes}}
  %y = zb.reduce_mean %x axes [1] : tensor<4x3xf32> -> tensor<3xf32>
  return
}

// -----

func.func @reduce_element(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{element type must not change}}
  %y = zb.reduce_max %x axes [1] : tensor<4x3xf32> -> tensor<4xf64>
  return
}

// -----

func.func @transpose_count(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{permutation must have one entry per dimension (2), got 3}}
  %y = zb.transpose %x permutation [1, 0, 2] : tensor<4x3xf32> -> tensor<3x4xf32>
  return
}

// -----

func.func @transpose_perm(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{permutation must be a permutation of 0..1}}
  %y = zb.transpose %x permutation [1, 1] : tensor<4x3xf32> -> tensor<3x3xf32>
  return
}

// -----

func.func @transpose_shape(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{result dimension 0 must have the size of operand dimension 1 (3), got 4}}
  %y = zb.transpose %x permutation [1, 0] : tensor<4x3xf32> -> tensor<4x3xf32>
  return
}

// -----

func.func @transpose_element(%x: tensor<4x3xf32>) {
  // expected-error @+1 {{element type must not change}}
  %y = zb.transpose %x permutation [1, 0] : tensor<4x3xf32> -> tensor<3x4xf16>
  return
}

// -----

func.func @slice_count(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{start, limit and strides must have one entry per dimension (2)}}
  %y = zb.slice %x [0] to [4] strides [1] : tensor<4x6xf32> -> tensor<4x6xf32>
  return
}

// -----

func.func @slice_rank(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{result must have the operand's rank and element type}}
  %y = zb.slice %x [0, 0] to [4, 6] strides [1, 1] : tensor<4x6xf32> -> tensor<24xf32>
  return
}

// -----

func.func @slice_bounds(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{dimension 1: expected 0 <= start (2) <= limit (7) <= size (6)}}
  %y = zb.slice %x [0, 2] to [4, 7] strides [1, 1] : tensor<4x6xf32> -> tensor<4x5xf32>
  return
}

// -----

func.func @slice_stride(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{dimension 0: stride must be >= 1}}
  %y = zb.slice %x [0, 0] to [4, 6] strides [0, 1] : tensor<4x6xf32> -> tensor<4x6xf32>
  return
}

// -----

func.func @slice_size(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{result dimension 1 must have size 3, got 2}}
  %y = zb.slice %x [0, 0] to [4, 6] strides [1, 2] : tensor<4x6xf32> -> tensor<4x2xf32>
  return
}

// -----

func.func @pad_count(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{low, high and interior must have one entry per dimension (2)}}
  %y = zb.pad %x low [0] high [0] interior [0] : tensor<4x6xf32> -> tensor<4x6xf32>
  return
}

// -----

func.func @pad_rank(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{result must have the operand's rank and element type}}
  %y = zb.pad %x low [0, 0] high [0, 0] interior [0, 0] : tensor<4x6xf32> -> tensor<4x6xf64>
  return
}

// -----

func.func @pad_negative(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{dimension 1: padding amounts must be non-negative}}
  %y = zb.pad %x low [0, -1] high [0, 0] interior [0, 0] : tensor<4x6xf32> -> tensor<4x5xf32>
  return
}

// -----

func.func @pad_size(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{result dimension 1 must have size 13, got 12}}
  %y = zb.pad %x low [0, 1] high [0, 1] interior [0, 1] : tensor<4x6xf32> -> tensor<4x12xf32>
  return
}

// -----

func.func @concat_axis(%a: tensor<4x2xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %y = zb.concat %a, %b axis 2 : (tensor<4x2xf32>, tensor<4x3xf32>) -> tensor<4x5xf32>
  return
}

// -----

func.func @concat_empty() {
  // expected-error @+1 {{expects at least one input}}
  %y = "zb.concat"() {axis = 0 : i64} : () -> tensor<4x5xf32>
  return
}

// -----

func.func @concat_rank(%a: tensor<4x2xf32>, %b: tensor<4x3x1xf32>) {
  // expected-error @+1 {{input #1 must have rank 2 and element type 'f32'}}
  %y = zb.concat %a, %b axis 1 : (tensor<4x2xf32>, tensor<4x3x1xf32>) -> tensor<4x5xf32>
  return
}

// -----

func.func @concat_other_dim(%a: tensor<4x2xf32>, %b: tensor<3x3xf32>) {
  // expected-error @+1 {{input #1 differs in dimension 0 (size 3, expected 4)}}
  %y = zb.concat %a, %b axis 1 : (tensor<4x2xf32>, tensor<3x3xf32>) -> tensor<4x5xf32>
  return
}

// -----

func.func @concat_sum(%a: tensor<4x2xf32>, %b: tensor<4x3xf32>) {
  // expected-error @+1 {{sizes along axis 1 add up to 5, expected 6}}
  %y = zb.concat %a, %b axis 1 : (tensor<4x2xf32>, tensor<4x3xf32>) -> tensor<4x6xf32>
  return
}

// -----

func.func @split_sum(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{sizes along axis 1 add up to 5, expected 6}}
  %y:2 = zb.split %x axis 1 : tensor<4x6xf32> -> tensor<4x2xf32>, tensor<4x3xf32>
  return
}

// -----

func.func @split_other_dim(%x: tensor<4x6xf32>) {
  // expected-error @+1 {{result #0 differs in dimension 0 (size 2, expected 4)}}
  %y:2 = zb.split %x axis 1 : tensor<4x6xf32> -> tensor<2x3xf32>, tensor<4x3xf32>
  return
}

// -----

func.func @gather_shape(%t: tensor<10x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{expects result of shape indices.shape ++ table.shape[1:] = 'tensor<3x4xf32>', got 'tensor<3x5xf32>'}}
  %y = zb.gather %t, %i : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x5xf32>
  return
}

// -----

func.func @gather_rank(%t: tensor<f32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{the table must have rank >= 1}}
  %y = zb.gather %t, %i : (tensor<f32>, tensor<3xi64>) -> tensor<3xf32>
  return
}

// -----

func.func @gather_element(%t: tensor<10x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{element types of the table and result must match}}
  %y = zb.gather %t, %i : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf64>
  return
}

// -----

func.func @gather_index_type(%t: tensor<10x4xf32>, %i: tensor<3xf32>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %y = zb.gather %t, %i : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @scatter_add_shape(%u: tensor<3x5xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{expects updates of shape indices.shape ++ table.shape[1:] = 'tensor<3x4xf32>', got 'tensor<3x5xf32>'}}
  %y = zb.scatter_add %u, %i : (tensor<3x5xf32>, tensor<3xi64>) -> tensor<10x4xf32>
  return
}

// -----

func.func @one_hot_shape(%i: tensor<3xi64>) {
  // expected-error @+1 {{result shape must be the indices' shape followed by the number of classes}}
  %y = zb.one_hot %i : tensor<3xi64> -> tensor<4x10xf32>
  return
}

// -----

func.func @softmax_axis(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %y = zb.softmax %x axis 2 : tensor<3x4xf32>
  return
}

// -----

func.func @layer_norm_rank(%x: tensor<f32>, %w: tensor<1xf32>) {
  // expected-error @+1 {{expects an input of rank >= 1}}
  %y = zb.layer_norm %x, %w, %w : (tensor<f32>, tensor<1xf32>, tensor<1xf32>) -> tensor<f32>
  return
}

// -----

func.func @layer_norm_result(%x: tensor<3x4xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{result type must be the input type 'tensor<3x4xf32>'}}
  %y = zb.layer_norm %x, %w, %w : (tensor<3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @layer_norm_weight(%x: tensor<3x4xf32>, %w: tensor<4xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{weight and bias must be 1-D of the last dimension's size and element type: 'tensor<4xf32>', got 'tensor<3xf32>'}}
  %y = zb.layer_norm %x, %w, %b : (tensor<3x4xf32>, tensor<4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @layer_norm_epsilon(%x: tensor<3x4xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{epsilon must be non-negative}}
  %y = zb.layer_norm %x, %w, %w {epsilon = -1.0 : f64} : (tensor<3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @rms_norm_weight(%x: tensor<3x4xf32>, %w: tensor<4x1xf32>) {
  // expected-error @+1 {{weight and bias must be 1-D of the last dimension's size and element type}}
  %y = zb.rms_norm %x, %w : (tensor<3x4xf32>, tensor<4x1xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @cross_entropy_rank(%x: tensor<f32>, %t: tensor<i64>) {
  // expected-error @+1 {{expects logits of rank >= 1 (classes last)}}
  %y = zb.cross_entropy %x, %t : (tensor<f32>, tensor<i64>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_targets(%x: tensor<4x10xf32>, %t: tensor<5xi64>) {
  // expected-error @+1 {{targets must have the shape of the logits without the class dimension, got 'tensor<5xi64>' for logits 'tensor<4x10xf32>'}}
  %y = zb.cross_entropy %x, %t : (tensor<4x10xf32>, tensor<5xi64>) -> tensor<f32>
  return
}

// -----

func.func @cross_entropy_result(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{result must be a 0-d tensor of the logits' element type or a wider float type, got 'tensor<4xf32>' for logits 'tensor<4x10xf32>'}}
  %y = zb.cross_entropy %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @cross_entropy_narrower_result(%x: tensor<4x10xf32>, %t: tensor<4xi64>) {
  // expected-error @+1 {{result must be a 0-d tensor of the logits' element type or a wider float type, got 'tensor<bf16>' for logits 'tensor<4x10xf32>'}}
  %y = zb.cross_entropy %x, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<bf16>
  return
}

// -----

func.func @cross_entropy_same_width(%x: tensor<4x10xbf16>, %t: tensor<4xi64>) {
  // expected-error @+1 {{result must be a 0-d tensor of the logits' element type or a wider float type, got 'tensor<f16>' for logits 'tensor<4x10xbf16>'}}
  %y = zb.cross_entropy %x, %t : (tensor<4x10xbf16>, tensor<4xi64>) -> tensor<f16>
  return
}

// -----

func.func @cross_entropy_lse_shape(%x: tensor<4x10xbf16>, %t: tensor<4xi64>) {
  // expected-error @+1 {{lse must have the targets' shape and the result's element type, got 'tensor<4x1xf32>' for targets 'tensor<4xi64>' and result 'tensor<f32>'}}
  %y, %lse = zb.cross_entropy %x, %t : (tensor<4x10xbf16>, tensor<4xi64>) -> tensor<f32>, tensor<4x1xf32>
  return
}

// -----

func.func @cross_entropy_lse_type(%x: tensor<4x10xbf16>, %t: tensor<4xi64>) {
  // expected-error @+1 {{lse must have the targets' shape and the result's element type, got 'tensor<4xbf16>' for targets 'tensor<4xi64>' and result 'tensor<f32>'}}
  %y, %lse = zb.cross_entropy %x, %t : (tensor<4x10xbf16>, tensor<4xi64>) -> tensor<f32>, tensor<4xbf16>
  return
}

// -----

func.func @causal_mask_rank(%x: tensor<4xf32>) {
  // expected-error @+1 {{expects rank >= 2 (queries x keys last)}}
  %y = zb.causal_mask %x : tensor<4xf32>
  return
}

// -----

func.func @send_peer(%x: tensor<4xf32>) {
  // expected-error @+1 {{peer rank must be non-negative}}
  zb.send %x to -1 tag 0 : tensor<4xf32>
  return
}

// -----

func.func @send_dynamic(%x: tensor<?xf32>) {
  // expected-error @+1 {{expects a statically shaped tensor}}
  zb.send %x to 1 tag 0 : tensor<?xf32>
  return
}

// -----

func.func @recv_peer() {
  // expected-error @+1 {{peer rank must be non-negative}}
  %x = zb.recv from -2 tag 0 : tensor<4xf32>
  return
}

// -----

func.func @recv_dynamic() {
  // expected-error @+1 {{expects a statically shaped tensor}}
  %x = zb.recv from 1 tag 0 : tensor<?xf32>
  return
}

// -----

func.func @attention_rank(%q: tensor<8x16xf32>, %v: tensor<8x16xf32>) {
  // expected-error @+1 {{expects query, key and value of one rank >= 3}}
  %o, %l = zb.attention %q, %q, %v {scale = 1.0 : f64} : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8xf32>)
  return
}

// -----

func.func @attention_head_size(%q: tensor<2x8x16xf32>, %k: tensor<2x8x8xf32>, %v: tensor<2x8x16xf32>) {
  // expected-error @+1 {{query and key must have the same head size}}
  %o, %l = zb.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x8x16xf32>, tensor<2x8x8xf32>, tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>)
  return
}

// -----

func.func @attention_keys(%q: tensor<2x8x16xf32>, %k: tensor<2x8x16xf32>, %v: tensor<2x6x16xf32>) {
  // expected-error @+1 {{key and value must have the same number of keys}}
  %o, %l = zb.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x6x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>)
  return
}

// -----

func.func @attention_scale(%q: tensor<2x8x16xf32>) {
  // expected-error @+1 {{scale must be positive and finite, got -1}}
  %o, %l = zb.attention %q, %q, %q {scale = -1.0 : f64} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>)
  return
}

// -----

func.func @attention_mask(%q: tensor<2x8x16xf32>, %m: tensor<2x4x8xf32>) {
  // expected-error @+1 {{mask must have the scores' rank with each dimension theirs or 1, scores 'tensor<2x8x8xf32>', got 'tensor<2x4x8xf32>'}}
  %o, %l = zb.attention %q, %q, %q mask %m {scale = 1.0 : f64} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x4x8xf32>) -> (tensor<2x8x16xf32>, tensor<2x8xf32>)
  return
}

// -----

func.func @attention_result(%q: tensor<2x8x16xf32>) {
  // expected-error @+1 {{result must be 'tensor<2x8x16xf32>', got 'tensor<2x8x16xbf16>'}}
  %o, %l = zb.attention %q, %q, %q {scale = 1.0 : f64} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> (tensor<2x8x16xbf16>, tensor<2x8xf32>)
  return
}

// -----

func.func @attention_lse(%q: tensor<2x8x16xf32>) {
  // expected-error @+1 {{lse must have the shape 'tensor<2x8xf32>' ([batch..., Tq]), got 'tensor<2x16xf32>'}}
  %o, %l = zb.attention %q, %q, %q {scale = 1.0 : f64} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x16xf32>)
  return
}

// -----

func.func @attention_grad_types(%q: tensor<2x8x16xf32>, %l: tensor<2x8xf32>, %dl: tensor<2x8xbf16>) {
  // expected-error @+1 {{lse_grad must have lse's type 'tensor<2x8xf32>', got 'tensor<2x8xbf16>'}}
  %dq, %dk, %dv = zb.attention_grad %q, %q, %q, %q, %l, %q lse_grad(%dl : tensor<2x8xbf16>) {scale = 1.0 : f64} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8xf32>, tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>)
  return
}
