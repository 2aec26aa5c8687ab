/**
 * RELU: max(0, x). Also home of {@link unaryOperation}, the shared definition of the
 * one-input elementwise operations (RELU, RELU1, RELU6, LOGISTIC, TANH, FLOOR): NNAPI's
 * `activation::validate/prepare` (float32 and quant8 since V1_0, float16 since V1_2, rank
 * at most 4, output shape = input shape).
 */
import { clampFloat32, clampQuant8, FLOAT32_MAX } from "../../kernels/activation_functions.ts";
import { float32Scratch, storeFloat32, toFloat32 } from "../../kernels/elementwise_unary.ts";
import type { FloatData } from "../../kernels/elementwise_unary.ts";
import { activationRangeQuantized } from "../../kernels/fixed_point.ts";
import type { Tensor } from "../tensor.ts";
import type { HalVersion, OperationType } from "../types.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  type DeclaredOperand,
  type OperationDefinition,
  OperationError,
} from "./operation.ts";

/** The quantized (TENSOR_QUANT8_ASYMM) form of a unary operation. */
export interface UnaryQuant8Form {
  /** The HAL version that introduced the quant8 form. */
  since: HalVersion;
  /** Checks the quantization of the declared input and output (throws OperationError). */
  validate(input: DeclaredOperand, output: DeclaredOperand): void;
  /** Runs on uint8 tensors (outputs carry their final scale and zero point). */
  execute(input: Tensor, output: Tensor): void;
}

/** What distinguishes one unary elementwise operation from another. */
export interface UnarySpec {
  type: OperationType;
  /** The float kernel; float16 tensors run it on float32 copies, as NNAPI does. */
  float(input: Float32Array, output: Float32Array): void;
  quant8?: UnaryQuant8Form;
}

/** Builds the definition of a one-input, one-output elementwise operation. */
export function unaryOperation(spec: UnarySpec): OperationDefinition {
  return {
    type: spec.type,
    validate(signature) {
      checkArity(signature, [1], 1);
      const input = signature.inputs[0];
      let version: HalVersion;
      if (input.type === "TENSOR_FLOAT32") version = "V1_0";
      else if (input.type === "TENSOR_FLOAT16") version = "V1_2";
      else if (input.type === "TENSOR_QUANT8_ASYMM" && spec.quant8) version = spec.quant8.since;
      else {
        throw new OperationError(
          `input 0 (operand ${input.index}) has unsupported type ${input.type}`,
        );
      }
      checkTypes(signature, [input.type], [input.type]);
      checkRank(input, "input 0", (r) => r <= 4, "at most 4");
      if (input.type === "TENSOR_QUANT8_ASYMM") spec.quant8!.validate(input, signature.outputs[0]);
      return version;
    },
    prepare(inputs) {
      const shape = inputs[0].shape;
      check(shape.length <= 4, `input 0 has rank ${shape.length}, expected at most 4`);
      return [[...shape]];
    },
    execute(inputs, outputs) {
      const input = inputs[0];
      const output = outputs[0];
      if (output.data!.length === 0) return;
      if (input.type === "TENSOR_QUANT8_ASYMM") {
        spec.quant8!.execute(input, output);
        return;
      }
      const out = output.data as FloatData;
      const result = float32Scratch(out);
      spec.float(toFloat32(input.data as FloatData), result);
      storeFloat32(out, result);
    },
  };
}

/** Quant8 form of the RELU family: the output keeps the input's quantization. */
export function clampQuant8Form(activation: number): UnaryQuant8Form {
  return {
    since: "V1_0",
    validate(input, output) {
      check(
        output.scale === input.scale && output.zeroPoint === input.zeroPoint,
        `output 0 (operand ${output.index}) must have the input's scale ${input.scale} and ` +
          `zero point ${input.zeroPoint}, has ${output.scale} and ${output.zeroPoint}`,
      );
    },
    execute(input, output) {
      const { min, max } = activationRangeQuantized(activation, input.scale, input.zeroPoint);
      clampQuant8(input.data as Uint8Array, output.data as Uint8Array, min, max);
    },
  };
}

/** RELU: max(0, x) (NNAPI clamps to the largest float, so +inf becomes FLT_MAX). */
export const relu: OperationDefinition = unaryOperation({
  type: "RELU",
  float: (input, output) => clampFloat32(input, output, 0, FLOAT32_MAX),
  quant8: clampQuant8Form(1),
});
