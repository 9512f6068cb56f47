// balance=layers: equal numbers of transformer blocks per stage, cut at block
// boundaries, embedding in the first stage, final norm / head / loss in the
// last. The GPT of gen_gpt2.py --names (4 blocks, parameters attn_w0 ..
// fc2_b3) in 2 and 4 stages; the tied wte has a copy in the first and the
// last stage.
// RUN: %python %S/../Dialect/ZB/Inputs/gen_gpt2.py --layers 4 --dtype f32 --names > %t.gpt.mlir
// RUN: zb-opt %t.gpt.mlir -zb-autodiff -zb-split-backward -zb-partition-stages="num-stages=2 balance=layers" | FileCheck %s --check-prefix=TWO
// RUN: zb-opt %t.gpt.mlir -zb-autodiff -zb-split-backward -zb-partition-stages="num-stages=2 virtual-stages=2 balance=layers" | FileCheck %s --check-prefix=FOUR
// RUN: not zb-opt %t.gpt.mlir -zb-autodiff -zb-split-backward -zb-partition-stages="num-stages=5 balance=layers" 2>&1 | FileCheck %s --check-prefix=FEW
// RUN: not zb-opt %t.gpt.mlir -zb-autodiff -zb-split-backward -zb-partition-stages="balance=flops" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: zb-opt %s -zb-autodiff -zb-split-backward -zb-partition-stages="num-stages=2 balance=layers" | FileCheck %s --check-prefix=ATTR

// TWO: #zb.value<"wte", index = {{[0-9]+}}, type = tensor<{{[^>]*}}>, stages = [0, 1]>
// TWO: #zb.value<"wpe", index = {{[0-9]+}}, type = tensor<{{[^>]*}}>, stages = [0]>
// TWO: #zb.value<"ln1_w0", index = {{[0-9]+}}, type = tensor<{{[^>]*}}>, stages = [0]>
// TWO: #zb.value<"fc2_b1", index = {{[0-9]+}}, type = tensor<{{[^>]*}}>, stages = [0]>
// TWO: #zb.value<"ln1_w2", index = {{[0-9]+}}, type = tensor<{{[^>]*}}>, stages = [1]>
// TWO: #zb.value<"fc2_b3", index = {{[0-9]+}}, type = tensor<{{[^>]*}}>, stages = [1]>
// TWO: #zb.value<"lnf_w", index = {{[0-9]+}}, type = tensor<{{[^>]*}}>, stages = [1]>
// TWO: #zb.value<"lnf_b", index = {{[0-9]+}}, type = tensor<{{[^>]*}}>, stages = [1]>

// FOUR: #zb.value<"wte", index = {{[0-9]+}}, type = tensor<{{[^>]*}}>, stages = [0, 3]>
// FOUR: #zb.value<"wpe", index = {{[0-9]+}}, type = tensor<{{[^>]*}}>, stages = [0]>
// FOUR: #zb.value<"fc2_b0", index = {{[0-9]+}}, type = tensor<{{[^>]*}}>, stages = [0]>
// FOUR: #zb.value<"ln1_w1", index = {{[0-9]+}}, type = tensor<{{[^>]*}}>, stages = [1]>
// FOUR: #zb.value<"fc2_b1", index = {{[0-9]+}}, type = tensor<{{[^>]*}}>, stages = [1]>
// FOUR: #zb.value<"ln1_w2", index = {{[0-9]+}}, type = tensor<{{[^>]*}}>, stages = [2]>
// FOUR: #zb.value<"fc2_b2", index = {{[0-9]+}}, type = tensor<{{[^>]*}}>, stages = [2]>
// FOUR: #zb.value<"ln1_w3", index = {{[0-9]+}}, type = tensor<{{[^>]*}}>, stages = [3]>
// FOUR: #zb.value<"lnf_b", index = {{[0-9]+}}, type = tensor<{{[^>]*}}>, stages = [3]>

// FEW: error: balance=layers: found 4 layers (zb.layer attributes or numbered parameter names), fewer than the 5 stages
// BAD: error: zb-partition-stages: unknown balance 'flops' (expected cost or layers)

// Layers from zb.layer attributes (the parameter names carry no numbers); ops
// without one carry the layer of the op before them (the tanh of layer 1).
// ATTR: params = [#zb.value<"in_proj", index = 1, type = tensor<3x3xf32>, stages = [0]>, #zb.value<"mid_a", index = 2, type = tensor<3x3xf32>, stages = [0]>, #zb.value<"mid_b", index = 3, type = tensor<3x3xf32>, stages = [1]>, #zb.value<"out_proj", index = 4, type = tensor<3x3xf32>, stages = [1]>]
// ATTR-LABEL: func.func @stage0_forward(
// ATTR-COUNT-2: zb.tanh
// ATTR-LABEL: func.func @stage1_forward(
func.func @main(%x: tensor<4x3xf32>, %w0: tensor<3x3xf32> {zb.param, zb.name = "in_proj"},
                %w1: tensor<3x3xf32> {zb.param, zb.name = "mid_a"},
                %w2: tensor<3x3xf32> {zb.param, zb.name = "mid_b"},
                %w3: tensor<3x3xf32> {zb.param, zb.name = "out_proj"}) -> tensor<f32> {
  %h0 = zb.matmul %x, %w0 {zb.layer = 0} : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %a0 = zb.tanh %h0 : tensor<4x3xf32>
  %h1 = zb.matmul %a0, %w1 {zb.layer = 1} : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %a1 = zb.tanh %h1 : tensor<4x3xf32>
  %h2 = zb.matmul %a1, %w2 {zb.layer = 2} : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %a2 = zb.tanh %h2 : tensor<4x3xf32>
  %h3 = zb.matmul %a2, %w3 {zb.layer = 3} : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %l = zb.reduce_sum %h3 axes [0, 1] : tensor<4x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}
