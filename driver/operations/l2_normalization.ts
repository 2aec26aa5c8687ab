/**
 * L2_NORMALIZATION: x / sqrt(sum x^2) along an axis (the last one unless HAL 1.2's optional
 * axis input says otherwise).
 */
import { float32Scratch, storeFloat32, toFloat32 } from "../../kernels/elementwise_unary.ts";
import type { FloatData } from "../../kernels/elementwise_unary.ts";
import {
  l2NormalizationFloat32,
  l2NormalizationQuant8,
} from "../../kernels/normalization_kernels.ts";
import { splitAtAxis } from "../../kernels/softmax_kernels.ts";
import type { HalVersion, OperandType } from "../types.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  type OperationDefinition,
  OperationError,
  scalarOf,
} from "./operation.ts";
import { checkConstantAxis, knownScalar, resolveAxis } from "./softmax.ts";

/** L2_NORMALIZATION; quant8 (V1_2) output has scale 1/128 and zero point 128. */
export const l2Normalization: OperationDefinition = {
  type: "L2_NORMALIZATION",
  validate(signature) {
    checkArity(signature, [1, 2], 1);
    const input = signature.inputs[0];
    let version: HalVersion;
    if (input.type === "TENSOR_FLOAT32") version = "V1_0";
    else if (input.type === "TENSOR_FLOAT16" || input.type === "TENSOR_QUANT8_ASYMM") {
      version = "V1_2";
    } else {
      throw new OperationError(
        `input 0 (operand ${input.index}) has unsupported type ${input.type}`,
      );
    }
    const rank = input.dimensions.length;
    checkRank(input, "input 0", (r) => r <= 4, "at most 4");
    const expected: OperandType[] = [input.type];
    if (signature.inputs.length === 2) {
      expected.push("INT32");
      version = "V1_2";
    } else if (rank !== 4) {
      version = "V1_2";
    }
    checkTypes(signature, expected, [input.type]);
    checkConstantAxis(signature.inputs, 1, rank);
    if (input.type === "TENSOR_QUANT8_ASYMM") {
      const output = signature.outputs[0];
      check(
        output.scale === 1 / 128 && output.zeroPoint === 128,
        `output 0 (operand ${output.index}) must have scale 1/128 and zero point 128, ` +
          `has ${output.scale} and ${output.zeroPoint}`,
      );
    }
    return version;
  },
  prepare(inputs) {
    const shape = inputs[0].shape;
    check(
      shape.length >= 1 && shape.length <= 4,
      `input 0 has rank ${shape.length}, expected 1 to 4`,
    );
    const axis = inputs.length === 2 ? knownScalar(inputs[1]) : undefined;
    if (axis !== undefined) resolveAxis(axis, shape.length, "input 1");
    return [[...shape]];
  },
  execute(inputs, outputs) {
    const input = inputs[0];
    const output = outputs[0];
    const axis = resolveAxis(
      inputs.length === 2 ? scalarOf(inputs[1]) : -1,
      input.shape.length,
      "input 1",
    );
    if (output.data!.length === 0) return;
    const split = splitAtAxis(input.shape, axis);
    if (input.type === "TENSOR_QUANT8_ASYMM") {
      l2NormalizationQuant8(
        input.data as Uint8Array,
        input.zeroPoint,
        split,
        output.data as Uint8Array,
      );
      return;
    }
    const out = output.data as FloatData;
    const result = float32Scratch(out);
    l2NormalizationFloat32(toFloat32(input.data as FloatData), split, result);
    storeFloat32(out, result);
  },
};
