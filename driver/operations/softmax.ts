/**
 * SOFTMAX: exp(beta * (x - max)) / sum along an axis (the last one unless HAL 1.2's
 * optional axis input says otherwise). Also exports the axis helpers the normalization
 * operations share.
 */
import {
  softmaxFloat32,
  softmaxQuant8,
  softmaxQuant8Params,
  splitAtAxis,
} from "../../kernels/softmax_kernels.ts";
import { float32Scratch, storeFloat32, toFloat32 } from "../../kernels/elementwise_unary.ts";
import type { FloatData } from "../../kernels/elementwise_unary.ts";
import type { HalVersion, OperandType } from "../types.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  type DeclaredOperand,
  type OperationDefinition,
  OperationError,
  type PrepareInput,
  scalarOf,
} from "./operation.ts";

/** The value of a scalar input when it is already known (a constant at preparation). */
export function knownScalar(input: PrepareInput | DeclaredOperand): number | undefined {
  return input.value ? Number(input.value[0]) : undefined;
}

/** Checks an axis against a rank (negative axes count from the end) and makes it >= 0. */
export function resolveAxis(axis: number, rank: number, where: string): number {
  check(
    Number.isInteger(axis) && axis >= -rank && axis < rank,
    `${where} is axis ${axis}, out of range for rank ${rank}`,
  );
  return axis < 0 ? axis + rank : axis;
}

/** Checks the axis input at `position` when it is a constant and the input rank is known. */
export function checkConstantAxis(
  inputs: readonly DeclaredOperand[],
  position: number,
  rank: number,
): void {
  const operand = inputs[position];
  const axis = operand && knownScalar(operand);
  if (axis !== undefined && rank !== 0) {
    resolveAxis(axis, rank, `input ${position} (operand ${operand.index})`);
  }
}

function checkBeta(beta: number, where: string): void {
  check(beta > 0, `${where} is beta ${beta}, expected > 0`);
}

/** SOFTMAX; quant8 output has scale 1/256 and zero point 0. */
export const softmax: OperationDefinition = {
  type: "SOFTMAX",
  validate(signature) {
    checkArity(signature, [2, 3], 1);
    const input = signature.inputs[0];
    let version: HalVersion;
    let betaType: OperandType;
    if (input.type === "TENSOR_FLOAT32" || input.type === "TENSOR_QUANT8_ASYMM") {
      version = "V1_0";
      betaType = "FLOAT32";
    } else if (input.type === "TENSOR_FLOAT16") {
      version = "V1_2";
      betaType = "FLOAT16";
    } else {
      throw new OperationError(
        `input 0 (operand ${input.index}) has unsupported type ${input.type}`,
      );
    }
    const rank = input.dimensions.length;
    checkRank(input, "input 0", (r) => r <= 4, "at most 4");
    const expected: OperandType[] = [input.type, betaType];
    if (signature.inputs.length === 3) {
      expected.push("INT32");
      version = "V1_2";
    } else if (rank !== 0 && rank !== 2 && rank !== 4) {
      version = "V1_2";
    }
    checkTypes(signature, expected, [input.type]);
    const betaOperand = signature.inputs[1];
    const beta = knownScalar(betaOperand);
    if (beta !== undefined) checkBeta(beta, `input 1 (operand ${betaOperand.index})`);
    checkConstantAxis(signature.inputs, 2, rank);
    if (input.type === "TENSOR_QUANT8_ASYMM") {
      const output = signature.outputs[0];
      check(
        output.scale === 1 / 256 && output.zeroPoint === 0,
        `output 0 (operand ${output.index}) must have scale 1/256 and zero point 0, ` +
          `has ${output.scale} and ${output.zeroPoint}`,
      );
      if (beta !== undefined) {
        check(
          softmaxQuant8Params(beta, input.scale) !== null,
          `beta ${beta} times input scale ${input.scale} (operand ${input.index}) is too small`,
        );
      }
    }
    return version;
  },
  prepare(inputs) {
    const shape = inputs[0].shape;
    check(
      shape.length >= 1 && shape.length <= 4,
      `input 0 has rank ${shape.length}, expected 1 to 4`,
    );
    const beta = knownScalar(inputs[1]);
    if (beta !== undefined) checkBeta(beta, "input 1");
    const axis = inputs.length === 3 ? knownScalar(inputs[2]) : undefined;
    if (axis !== undefined) resolveAxis(axis, shape.length, "input 2");
    return [[...shape]];
  },
  execute(inputs, outputs) {
    const input = inputs[0];
    const output = outputs[0];
    const beta = scalarOf(inputs[1]);
    checkBeta(beta, "input 1");
    const axis = resolveAxis(
      inputs.length === 3 ? scalarOf(inputs[2]) : -1,
      input.shape.length,
      "input 2",
    );
    if (output.data!.length === 0) return;
    const split = splitAtAxis(input.shape, axis);
    if (input.type === "TENSOR_QUANT8_ASYMM") {
      const params = softmaxQuant8Params(beta, input.scale);
      if (!params) throw new OperationError(`beta ${beta} times input scale is too small`);
      softmaxQuant8(input.data as Uint8Array, split, params, output.data as Uint8Array);
      return;
    }
    const out = output.data as FloatData;
    const result = float32Scratch(out);
    softmaxFloat32(toFloat32(input.data as FloatData), split, beta, result);
    storeFloat32(out, result);
  },
};
