// RUN: zb-opt %s -zb-decompose-attention -split-input-file | FileCheck %s

// The forward: S = scale q k^T + mask (broadcast), the causal mask, the
// softmax as zb.softmax decomposes (max, exp, sum, division), P v and
// lse = log(sum) + max. Under autocast (bfloat16 q, k, v; float32 lse) the
// scores are cast to float32 and P back to bfloat16 for the product.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: tensor<2x8x16xbf16>, %[[K:[a-z0-9]+]]: tensor<2x8x16xbf16>, %[[V:[a-z0-9]+]]: tensor<2x8x16xbf16>, %[[M:[a-z0-9]+]]: tensor<2x1x8xf32>)
// CHECK: %[[S:.*]] = zb.batch_matmul %[[Q]], %[[K]] {transpose_rhs} : (tensor<2x8x16xbf16>, tensor<2x8x16xbf16>) -> tensor<2x8x8xbf16>
// CHECK: %[[SF:.*]] = zb.cast %[[S]] : tensor<2x8x8xbf16> -> tensor<2x8x8xf32>
// CHECK: %[[C:.*]] = zb.constant dense<1.250000e-01> : tensor<2x8x8xf32>
// CHECK: %[[SS:.*]] = zb.mul %[[SF]], %[[C]]
// CHECK: %[[MB:.*]] = zb.broadcast_in_dim %[[M]] dims [0, 1, 2] : tensor<2x1x8xf32> -> tensor<2x8x8xf32>
// CHECK: %[[SM:.*]] = zb.add %[[SS]], %[[MB]]
// CHECK: %[[SC:.*]] = zb.causal_mask %[[SM]] {fill = 0xFFF0000000000000
// CHECK: %[[MAX:.*]] = zb.reduce_max %[[SC]] axes [2]
// A row of hidden keys (max -inf) gets max 0 and sum 1: P 0, lse -inf.
// CHECK: %[[NINF:.*]] = zb.constant dense<0xFF800000> : tensor<2x8xf32>
// CHECK: %[[HID:.*]] = zb.compare "eq", %[[MAX]], %[[NINF]]
// CHECK: %[[M0:.*]] = zb.select %[[HID]], %{{.*}}, %[[MAX]]
// CHECK: %[[MB2:.*]] = zb.broadcast_in_dim %[[M0]] dims [0, 1]
// CHECK: %[[D:.*]] = zb.sub %[[SC]], %[[MB2]]
// CHECK: %[[E:.*]] = zb.exp %[[D]]
// CHECK: %[[L:.*]] = zb.reduce_sum %[[E]] axes [2]
// CHECK: %[[L1:.*]] = zb.select %[[HID]], %{{.*}}, %[[L]]
// CHECK: %[[LB:.*]] = zb.broadcast_in_dim %[[L1]]
// CHECK: %[[P:.*]] = zb.div %[[E]], %[[LB]]
// CHECK: %[[PB:.*]] = zb.cast %[[P]] : tensor<2x8x8xf32> -> tensor<2x8x8xbf16>
// CHECK: %[[O:.*]] = zb.batch_matmul %[[PB]], %[[V]] : (tensor<2x8x8xbf16>, tensor<2x8x16xbf16>) -> tensor<2x8x16xbf16>
// CHECK: %[[LOG:.*]] = zb.log %[[L]]
// CHECK: %[[LSE:.*]] = zb.add %[[LOG]], %[[M0]] : tensor<2x8xf32>
// CHECK: return %[[O]], %[[LSE]]
func.func @forward(%q: tensor<2x8x16xbf16>, %k: tensor<2x8x16xbf16>, %v: tensor<2x8x16xbf16>,
                   %m: tensor<2x1x8xf32>) -> (tensor<2x8x16xbf16>, tensor<2x8xf32>) {
  %o, %l = zb.attention %q, %k, %v mask %m {causal, scale = 0.125 : f64}
      : (tensor<2x8x16xbf16>, tensor<2x8x16xbf16>, tensor<2x8x16xbf16>, tensor<2x1x8xf32>) -> (tensor<2x8x16xbf16>, tensor<2x8xf32>)
  return %o, %l : tensor<2x8x16xbf16>, tensor<2x8xf32>
}

// -----

// The backward: S recomputed, P = exp(S - lse), dV = P^T dO, dP = dO V^T,
// Di = rowsum(dO * O) (minus the lse gradient), dS = P (dP - Di), then
// dQ = scale dS K and dK = scale dS^T Q.
// CHECK-LABEL: func.func @backward
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: tensor<2x8x16xf32>, %[[K:[a-z0-9]+]]: tensor<2x6x16xf32>, %[[V:[a-z0-9]+]]: tensor<2x6x4xf32>, %[[O:[a-z0-9]+]]: tensor<2x8x4xf32>, %[[LSE:[a-z0-9]+]]: tensor<2x8xf32>, %[[DO:[a-z0-9]+]]: tensor<2x8x4xf32>, %[[DL:[a-z0-9]+]]: tensor<2x8xf32>)
// CHECK: %[[S:.*]] = zb.batch_matmul %[[Q]], %[[K]] {transpose_rhs}
// CHECK: %[[SS:.*]] = zb.mul %[[S]]
// CHECK-NOT: zb.causal_mask
// CHECK: %[[NINF:.*]] = zb.constant dense<0xFF800000> : tensor<2x8xf32>
// CHECK: %[[HID:.*]] = zb.compare "eq", %[[LSE]], %[[NINF]]
// CHECK: %[[L0:.*]] = zb.select %[[HID]], %{{.*}}, %[[LSE]]
// CHECK: %[[LB:.*]] = zb.broadcast_in_dim %[[L0]] dims [0, 1] : tensor<2x8xf32> -> tensor<2x8x6xf32>
// CHECK: %[[D:.*]] = zb.sub %[[SS]], %[[LB]]
// CHECK: %[[P:.*]] = zb.exp %[[D]]
// CHECK: %[[DV:.*]] = zb.batch_matmul %[[P]], %[[DO]] {transpose_lhs} : (tensor<2x8x6xf32>, tensor<2x8x4xf32>) -> tensor<2x6x4xf32>
// CHECK: %[[DP:.*]] = zb.batch_matmul %[[DO]], %[[V]] {transpose_rhs} : (tensor<2x8x4xf32>, tensor<2x6x4xf32>) -> tensor<2x8x6xf32>
// CHECK: %[[OO:.*]] = zb.mul %[[DO]], %[[O]]
// CHECK: %[[DI:.*]] = zb.reduce_sum %[[OO]] axes [2]
// CHECK: %[[DI2:.*]] = zb.sub %[[DI]], %[[DL]]
// CHECK: %[[DIB:.*]] = zb.broadcast_in_dim %[[DI2]]
// CHECK: %[[T:.*]] = zb.sub %[[DP]], %[[DIB]]
// CHECK: %[[DS:.*]] = zb.mul %[[P]], %[[T]]
// CHECK: %[[DSS:.*]] = zb.mul %[[DS]]
// CHECK: %[[DQ:.*]] = zb.batch_matmul %[[DSS]], %[[K]] : (tensor<2x8x6xf32>, tensor<2x6x16xf32>) -> tensor<2x8x16xf32>
// CHECK: %[[DK:.*]] = zb.batch_matmul %[[DSS]], %[[Q]] {transpose_lhs} : (tensor<2x8x6xf32>, tensor<2x8x16xf32>) -> tensor<2x6x16xf32>
// CHECK: return %[[DQ]], %[[DK]], %[[DV]]
func.func @backward(%q: tensor<2x8x16xf32>, %k: tensor<2x6x16xf32>, %v: tensor<2x6x4xf32>,
                    %o: tensor<2x8x4xf32>, %lse: tensor<2x8xf32>, %do: tensor<2x8x4xf32>,
                    %dl: tensor<2x8xf32>) -> (tensor<2x8x16xf32>, tensor<2x6x16xf32>, tensor<2x6x4xf32>) {
  %dq, %dk, %dv = zb.attention_grad %q, %k, %v, %o, %lse, %do lse_grad(%dl : tensor<2x8xf32>) {scale = 0.25 : f64}
      : (tensor<2x8x16xf32>, tensor<2x6x16xf32>, tensor<2x6x4xf32>, tensor<2x8x4xf32>, tensor<2x8xf32>, tensor<2x8x4xf32>)
        -> (tensor<2x8x16xf32>, tensor<2x6x16xf32>, tensor<2x6x4xf32>)
  return %dq, %dk, %dv : tensor<2x8x16xf32>, tensor<2x6x16xf32>, tensor<2x6x4xf32>
}
