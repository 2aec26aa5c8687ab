/**
 * What the operations along one axis share (SOFTMAX, L2_NORMALIZATION,
 * LOCAL_RESPONSE_NORMALIZATION): an input of rank 1 to 4 (at most 4 declared), the last
 * axis unless HAL 1.2's optional INT32 axis input says otherwise (negative axes count from
 * the end), output shape = input shape.
 */
import { type AxisSplit, splitAtAxis } from "../../kernels/axis_split.ts";
import type { Tensor } from "../../nnapi/tensor.ts";
import type { HalVersion, OperandType } from "../../nnapi/types.ts";
import {
  check,
  checkRank,
  checkTypes,
  type DeclaredOperand,
  type OperationSignature,
  type PrepareInput,
  scalarOf,
} from "../operation.ts";
import { knownScalar } from "./scalars.ts";

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

/**
 * Checks the declared rank (at most 4) and the operand types: `expected` lists the types of
 * the inputs before the optional axis input at `axisAt`. An axis input, or a rank outside
 * `v10Ranks` (0 = unknown), raises `version` to V1_2.
 */
export function validateAlongAxis(
  signature: OperationSignature,
  version: HalVersion,
  options: { expected: readonly OperandType[]; axisAt: number; v10Ranks: readonly number[] },
): HalVersion {
  const input = signature.inputs[0];
  checkRank(input, "input 0", (r) => r <= 4, "at most 4");
  const expected = [...options.expected];
  if (signature.inputs.length === options.axisAt + 1) {
    expected.push("INT32");
    version = "V1_2";
  } else if (!options.v10Ranks.includes(input.dimensions.length)) {
    version = "V1_2";
  }
  checkTypes(signature, expected, [input.type]);
  return version;
}

/** Checks the input rank (1 to 4) during shape inference. */
export function checkAxisInputRank(inputs: readonly PrepareInput[]): void {
  const shape = inputs[0].shape;
  check(
    shape.length >= 1 && shape.length <= 4,
    `input 0 has rank ${shape.length}, expected 1 to 4`,
  );
}

/** Checks the axis input at `axisAt` during shape inference when its value is known. */
export function checkKnownAxis(inputs: readonly PrepareInput[], axisAt: number): void {
  const axis = inputs.length === axisAt + 1 ? knownScalar(inputs[axisAt]) : undefined;
  if (axis !== undefined) resolveAxis(axis, inputs[0].shape.length, `input ${axisAt}`);
}

/** Shape inference of an operation with no other parameters to check: output = input. */
export function prepareAlongAxis(inputs: readonly PrepareInput[], axisAt: number): number[][] {
  checkAxisInputRank(inputs);
  checkKnownAxis(inputs, axisAt);
  return [[...inputs[0].shape]];
}

/** The input split around the axis of an executing call (axis input at `axisAt`, if any). */
export function executionSplit(inputs: readonly Tensor[], axisAt: number): AxisSplit {
  const shape = inputs[0].shape;
  const axis = resolveAxis(
    inputs.length === axisAt + 1 ? scalarOf(inputs[axisAt]) : -1,
    shape.length,
    `input ${axisAt}`,
  );
  return splitAtAxis(shape, axis);
}
