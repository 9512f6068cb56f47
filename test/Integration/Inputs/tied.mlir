// A weight tied between the first and the last layer (like GPT-2's token
// embedding and LM head): %w is used by the first matmul and, transposed, by
// the last one. Cut into 2 or 3 stages, the first and the last stage each
// hold a copy of %w and exchange their gradient contributions every step.
func.func @main(%x: tensor<4x6xf32> {zb.name = "x"},
                %w: tensor<6x5xf32> {zb.param, zb.name = "w"},
                %v: tensor<5x5xf32> {zb.param, zb.name = "v"}) -> tensor<f32> {
  %h = zb.matmul %x, %w : (tensor<4x6xf32>, tensor<6x5xf32>) -> tensor<4x5xf32>
  %a = zb.tanh %h : tensor<4x5xf32>
  %m = zb.matmul %a, %v : (tensor<4x5xf32>, tensor<5x5xf32>) -> tensor<4x5xf32>
  %b = zb.tanh %m : tensor<4x5xf32>
  %y = zb.matmul %b, %w {transpose_rhs} : (tensor<4x5xf32>, tensor<6x5xf32>) -> tensor<4x6xf32>
  %d = zb.sub %y, %x : tensor<4x6xf32>
  %q = zb.mul %d, %d : tensor<4x6xf32>
  %l = zb.reduce_sum %q axes [0, 1] : tensor<4x6xf32> -> tensor<f32>
  return %l : tensor<f32>
}
