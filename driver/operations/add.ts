/**
 * ADD: a + b with numpy-style broadcasting and a fused activation. Also home of
 * {@link binaryOperation}, the definition shared with MUL (NNAPI `broadcast::validate` /
 * `prepare`: float32 and quant8 since V1_0, float16 since V1_2, ranks at most 4).
 */
import {
  addFloat32,
  addQuant8,
  addQuant8Params,
  broadcastShape,
  type Quantization,
} from "../../kernels/elementwise_binary.ts";
import { float32Scratch, storeFloat32, toFloat32 } from "../../kernels/elementwise_unary.ts";
import type { FloatData } from "../../kernels/elementwise_unary.ts";
import { activationRangeFloat, activationRangeQuantized } from "../../kernels/fixed_point.ts";
import type { HalVersion, OperationType } from "../types.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  type OperationDefinition,
  OperationError,
  scalarOf,
} from "./operation.ts";

/** A float kernel of a broadcasting binary operation, clamping to [min, max]. */
export type BinaryFloatKernel = (
  a: Float32Array,
  aShape: readonly number[],
  b: Float32Array,
  bShape: readonly number[],
  out: Float32Array,
  outShape: readonly number[],
  min: number,
  max: number,
) => void;

/** What distinguishes ADD from MUL. */
export interface BinarySpec<P> {
  type: OperationType;
  float: BinaryFloatKernel;
  /** Fixed-point parameters from the scales, or a message saying why there are none. */
  quantParams(input1: Quantization, input2: Quantization, output: Quantization): P | string;
  quant(
    a: Uint8Array,
    aShape: readonly number[],
    b: Uint8Array,
    bShape: readonly number[],
    out: Uint8Array,
    outShape: readonly number[],
    params: P,
    min: number,
    max: number,
  ): void;
}

function checkActivation(code: number, where: string): void {
  check(
    Number.isInteger(code) && code >= 0 && code <= 3,
    `${where} is fused activation code ${code}, expected 0 (NONE), 1 (RELU), 2 (RELU1) or 3 (RELU6)`,
  );
}

function quantizationOf(operand: Quantization): Quantization {
  return { scale: operand.scale, zeroPoint: operand.zeroPoint };
}

/** Builds the definition of a broadcasting binary arithmetic operation. */
export function binaryOperation<P>(spec: BinarySpec<P>): OperationDefinition {
  return {
    type: spec.type,
    validate(signature) {
      checkArity(signature, [3], 1);
      const [input1, input2, activation] = signature.inputs;
      let version: HalVersion;
      if (input1.type === "TENSOR_FLOAT32" || input1.type === "TENSOR_QUANT8_ASYMM") {
        version = "V1_0";
      } else if (input1.type === "TENSOR_FLOAT16") {
        version = "V1_2";
      } else {
        throw new OperationError(
          `input 0 (operand ${input1.index}) has unsupported type ${input1.type}`,
        );
      }
      checkTypes(signature, [input1.type, input1.type, "INT32"], [input1.type]);
      checkRank(input1, "input 0", (r) => r <= 4, "at most 4");
      checkRank(input2, "input 1", (r) => r <= 4, "at most 4");
      if (activation.value) {
        checkActivation(Number(activation.value[0]), `input 2 (operand ${activation.index})`);
      }
      if (input1.type === "TENSOR_QUANT8_ASYMM") {
        const output = signature.outputs[0];
        const params = spec.quantParams(
          quantizationOf(input1),
          quantizationOf(input2),
          quantizationOf(output),
        );
        if (typeof params === "string") {
          throw new OperationError(
            `${params} (operands ${input1.index}, ${input2.index} -> ${output.index})`,
          );
        }
      }
      return version;
    },
    prepare(inputs) {
      const [a, b] = inputs;
      check(a.shape.length <= 4, `input 0 has rank ${a.shape.length}, expected at most 4`);
      check(b.shape.length <= 4, `input 1 has rank ${b.shape.length}, expected at most 4`);
      const shape = broadcastShape(a.shape, b.shape);
      check(
        shape !== null,
        `input shapes [${a.shape.join(",")}] and [${b.shape.join(",")}] cannot be broadcast`,
      );
      return [shape];
    },
    execute(inputs, outputs) {
      const [a, b, activationInput] = inputs;
      const output = outputs[0];
      const activation = scalarOf(activationInput);
      checkActivation(activation, "input 2");
      if (output.data!.length === 0) return;
      if (a.type === "TENSOR_QUANT8_ASYMM") {
        const params = spec.quantParams(
          quantizationOf(a),
          quantizationOf(b),
          quantizationOf(output),
        );
        if (typeof params === "string") throw new OperationError(params);
        const { min, max } = activationRangeQuantized(activation, output.scale, output.zeroPoint);
        spec.quant(
          a.data as Uint8Array,
          a.shape,
          b.data as Uint8Array,
          b.shape,
          output.data as Uint8Array,
          output.shape,
          params,
          min,
          max,
        );
        return;
      }
      const { min, max } = activationRangeFloat(activation);
      const out = output.data as FloatData;
      const result = float32Scratch(out);
      spec.float(
        toFloat32(a.data as FloatData),
        a.shape,
        toFloat32(b.data as FloatData),
        b.shape,
        result,
        output.shape,
        min,
        max,
      );
      storeFloat32(out, result);
    },
  };
}

/** ADD; quant8 rescales both inputs to twice the larger input scale with a left shift of 20. */
export const add: OperationDefinition = binaryOperation({
  type: "ADD",
  float: addFloat32,
  quantParams: (input1, input2, output) =>
    addQuant8Params(input1, input2, output) ??
      `output scale ${output.scale} is too small for input scales ${input1.scale} and ${input2.scale}`,
  quant: addQuant8,
});
