// A linear layer with a bias, ReLU and a second linear layer: three parameters.
func.func @main(%x: tensor<4x3xf32>, %w1: tensor<3x5xf32> {zb.param}, %b1: tensor<5xf32> {zb.param}, %w2: tensor<5x2xf32> {zb.param}) -> tensor<f32> {
  %h = zb.matmul %x, %w1 : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %bb = zb.broadcast_in_dim %b1 dims [1] : tensor<5xf32> -> tensor<4x5xf32>
  %a = zb.add %h, %bb : tensor<4x5xf32>
  %r = zb.relu %a : tensor<4x5xf32>
  %y = zb.matmul %r, %w2 : (tensor<4x5xf32>, tensor<5x2xf32>) -> tensor<4x2xf32>
  %l = zb.reduce_sum %y axes [0, 1] : tensor<4x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}
