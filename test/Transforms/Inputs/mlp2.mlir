// Two matmuls with a parameter each: two stages.
func.func @main(%x: tensor<4x3xf32>, %w1: tensor<3x5xf32> {zb.param}, %w2: tensor<5x2xf32> {zb.param}) -> tensor<f32> {
  %h = zb.matmul %x, %w1 : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %y = zb.matmul %h, %w2 : (tensor<4x5xf32>, tensor<5x2xf32>) -> tensor<4x2xf32>
  %l = zb.reduce_sum %y axes [0, 1] : tensor<4x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}
