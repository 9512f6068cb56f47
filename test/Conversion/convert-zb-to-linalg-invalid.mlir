// RUN: zb-opt %s -split-input-file -verify-diagnostics -convert-zb-to-linalg

// zb.send / zb.recv are left to convert-zb-to-runtime, which must run first.
func.func @send_left(%x: tensor<4xf32>) {
  // expected-error @+1 {{'zb.send' op cannot be lowered to linalg (run convert-zb-to-runtime first for send/recv)}}
  zb.send %x to 1 tag 0 : tensor<4xf32>
  return
}

// -----

func.func @recv_left() -> tensor<4xf32> {
  // expected-error @+1 {{'zb.recv' op cannot be lowered to linalg (run convert-zb-to-runtime first for send/recv)}}
  %r = zb.recv from 1 tag 0 : tensor<4xf32>
  return %r : tensor<4xf32>
}
