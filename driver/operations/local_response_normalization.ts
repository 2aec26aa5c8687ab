/**
 * LOCAL_RESPONSE_NORMALIZATION: x * (bias + alpha * sum of squares within `radius`
 * along an axis) ^ -beta (the last axis unless HAL 1.2's optional axis input says otherwise).
 */
import { float32Scratch, storeFloat32, toFloat32 } from "../../kernels/elementwise_unary.ts";
import type { FloatData } from "../../kernels/elementwise_unary.ts";
import { localResponseNormalizationFloat32 } from "../../kernels/normalization_kernels.ts";
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

/** LOCAL_RESPONSE_NORMALIZATION on float tensors (float16 since V1_2). */
export const localResponseNormalization: OperationDefinition = {
  type: "LOCAL_RESPONSE_NORMALIZATION",
  validate(signature) {
    checkArity(signature, [5, 6], 1);
    const input = signature.inputs[0];
    let version: HalVersion;
    let scalarType: OperandType;
    if (input.type === "TENSOR_FLOAT32") {
      version = "V1_0";
      scalarType = "FLOAT32";
    } else if (input.type === "TENSOR_FLOAT16") {
      version = "V1_2";
      scalarType = "FLOAT16";
    } else {
      throw new OperationError(
        `input 0 (operand ${input.index}) has unsupported type ${input.type}`,
      );
    }
    const rank = input.dimensions.length;
    checkRank(input, "input 0", (r) => r <= 4, "at most 4");
    const expected: OperandType[] = [input.type, "INT32", scalarType, scalarType, scalarType];
    if (signature.inputs.length === 6) {
      expected.push("INT32");
      version = "V1_2";
    } else if (rank !== 4) {
      version = "V1_2";
    }
    checkTypes(signature, expected, [input.type]);
    checkConstantAxis(signature.inputs, 5, rank);
    return version;
  },
  prepare(inputs) {
    const shape = inputs[0].shape;
    check(
      shape.length >= 1 && shape.length <= 4,
      `input 0 has rank ${shape.length}, expected 1 to 4`,
    );
    const axis = inputs.length === 6 ? knownScalar(inputs[5]) : undefined;
    if (axis !== undefined) resolveAxis(axis, shape.length, "input 5");
    return [[...shape]];
  },
  execute(inputs, outputs) {
    const input = inputs[0];
    const output = outputs[0];
    const axis = resolveAxis(
      inputs.length === 6 ? scalarOf(inputs[5]) : -1,
      input.shape.length,
      "input 5",
    );
    if (output.data!.length === 0) return;
    const params = {
      radius: scalarOf(inputs[1]),
      bias: scalarOf(inputs[2]),
      alpha: scalarOf(inputs[3]),
      beta: scalarOf(inputs[4]),
    };
    const out = output.data as FloatData;
    const result = float32Scratch(out);
    localResponseNormalizationFloat32(
      toFloat32(input.data as FloatData),
      splitAtAxis(input.shape, axis),
      params,
      result,
    );
    storeFloat32(out, result);
  },
};
