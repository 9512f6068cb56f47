//===- ZBInterfaces.td - zb op interfaces ------------------*- tablegen -*-===//
#ifndef ZB_DIALECT_ZB_IR_ZBINTERFACES_TD
#define ZB_DIALECT_ZB_IR_ZBINTERFACES_TD

include "mlir/IR/OpBase.td"

def ZB_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::zb";
  let description = [{
    Reverse-mode gradient rule of a single-result op. The rule builds the
    gradient of *one operand at a time*, so that for `zb.matmul` the
    input gradient (`dA = dC * B^T`, part of B) and the weight gradient
    (`dB = A^T * dC`, part of W) are independent pieces of IR
    (Zero Bubble paper, Section 2: splitting backward into B and W).
  }];
  let methods = [
    InterfaceMethod<[{
        Builds, at the builder's insertion point, the gradient of the loss with
        respect to operand `operandIndex`, given `resultGrad`, the gradient with
        respect to the op's result (same type as the result). Returns a value
        of the operand's type, or a null Value if the operand is not
        differentiable (for example an integer or boolean operand).
      }],
      "::mlir::Value", "buildOperandGradient",
      (ins "::mlir::OpBuilder &":$builder, "unsigned":$operandIndex,
           "::mlir::Value":$resultGrad)>
  ];
}

def ZB_MultiResultGradientOpInterface
    : OpInterface<"MultiResultGradientOpInterface"> {
  let cppNamespace = "::zb";
  let description = [{
    Reverse-mode gradient rule of an op with several results (`zb.split`).
    Like GradientOpInterface, the gradient of each operand is built
    separately.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds the gradient of the loss with respect to operand
        `operandIndex`, given `resultGrads`, one entry per result (the
        gradient with respect to that result, of its type, or a null Value
        when the result does not reach the loss: its gradient is zero).
        Returns a value of the operand's type, or a null Value if the operand
        is not differentiable.
      }],
      "::mlir::Value", "buildOperandGradient",
      (ins "::mlir::OpBuilder &":$builder, "unsigned":$operandIndex,
           "::mlir::ValueRange":$resultGrads)>
  ];
}

#endif // ZB_DIALECT_ZB_IR_ZBINTERFACES_TD
