// A residual connection: %h is used two stages later when cut into 4 stages,
// so it is relayed through stage 1 (and its gradient back through stage 2).
func.func @main(%x: tensor<4x4xf32>, %w1: tensor<4x4xf32> {zb.param}, %w2: tensor<4x4xf32> {zb.param}) -> tensor<f32> {
  %h = zb.matmul %x, %w1 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = zb.matmul %h, %w2 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %z = zb.add %y, %h : tensor<4x4xf32>
  %l = zb.reduce_sum %z axes [0, 1] : tensor<4x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
