"""Writes a matmul-dominated MLP in the zb dialect: `layers` x (matmul with a
DxD weight, bias, relu), mean-square loss. Parameters are named w<l>, b<l>.

    gen_mlp.py [--layers 8] [--batch 4096] [--dim 4096] > mlp.mlir
"""
import argparse

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--layers", type=int, default=8)
p.add_argument("--batch", type=int, default=4096)
p.add_argument("--dim", type=int, default=4096)
a = p.parse_args()
N, D, L = a.batch, a.dim, a.layers
t = f"tensor<{N}x{D}xf32>"
args = [f"%x: {t}"]
for l in range(L):
    args += [f'%w{l}: tensor<{D}x{D}xf32> {{zb.param, zb.name = "w{l}"}}',
             f'%b{l}: tensor<{D}xf32> {{zb.param, zb.name = "b{l}"}}']
print("func.func @main(" + ",\n    ".join(args) + ") -> tensor<f32> {")
x = "%x"
for l in range(L):
    print(f"  %m{l} = zb.matmul {x}, %w{l} : ({t}, tensor<{D}x{D}xf32>) -> {t}")
    print(f"  %bb{l} = zb.broadcast_in_dim %b{l} dims [1] : tensor<{D}xf32> -> {t}")
    print(f"  %s{l} = zb.add %m{l}, %bb{l} : {t}")
    print(f"  %a{l} = zb.relu %s{l} : {t}")
    x = f"%a{l}"
print(f"  %q = zb.mul {x}, {x} : {t}")
print(f"  %l = zb.reduce_mean %q axes [0, 1] : {t} -> tensor<f32>")
print("  return %l : tensor<f32>")
print("}")
