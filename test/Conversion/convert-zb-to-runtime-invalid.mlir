// RUN: zb-opt %s -split-input-file -verify-diagnostics -convert-zb-to-runtime

// The runtime transfers f32, i64 and i32 tensors only.
func.func @send_f64(%x: tensor<4xf64>) {
  // expected-error @+2 {{can send f32, bf16, i64 and i32 tensors, not 'f64'}}
  // expected-error @+1 {{failed to legalize operation 'zb.send' that was explicitly marked illegal}}
  zb.send %x to 1 tag 0 : tensor<4xf64>
  return
}

// -----

func.func @recv_f16() -> tensor<4xf16> {
  // expected-error @+2 {{can receive f32, bf16, i64 and i32 tensors, not 'f16'}}
  // expected-error @+1 {{failed to legalize operation 'zb.recv' that was explicitly marked illegal}}
  %r = zb.recv from 1 tag 0 : tensor<4xf16>
  return %r : tensor<4xf16>
}
