/**
 * SPLIT: cuts a tensor into equal parts along an axis (NNAPI Split.cpp). Inputs: 0 the tensor
 * (TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_INT32 or TENSOR_QUANT8_ASYMM; rank >= 1), 1 the axis
 * (INT32, negative counts from the end), 2 the number of outputs n (INT32, dividing the axis
 * size). Outputs: n tensors of the input's type and quantization.
 */
import { stridedSlice } from "../kernels/shape_transform.ts";
import { resolveAxis } from "./common/axis.ts";
import { knownScalar } from "./common/scalars.ts";
import { checkMovedOperand, knownInputs, MOVED_TYPES_WITH_INT32 } from "./common/shape_ops.ts";
import {
  check,
  checkRank,
  checkTypes,
  type OperationDefinition,
  type PrepareInput,
  scalarValue,
} from "./operation.ts";

/** The resolved axis and the part size of a call producing `outputs` tensors. */
function splitGeometry(
  inputs: readonly PrepareInput[],
  outputs: number,
): { axis: number; part: number } {
  const shape = inputs[0].shape;
  check(shape.length >= 1, "input 0 has rank 0, expected at least 1");
  const axis = resolveAxis(
    scalarValue(inputs[1], "axis (input 1)"),
    shape.length,
    "axis (input 1)",
  );
  const count = scalarValue(inputs[2], "number of splits (input 2)");
  check(
    count === outputs,
    `number of splits (input 2) is ${count} but the operation has ${outputs} outputs`,
  );
  check(
    shape[axis] % count === 0,
    `axis ${axis} has ${shape[axis]} elements, not divisible into ${count} splits`,
  );
  return { axis, part: shape[axis] / count };
}

/** SPLIT (HAL 1.2). */
export const split: OperationDefinition<"SPLIT"> = {
  type: "SPLIT",

  validate(signature) {
    check(signature.inputs.length === 3, `expected 3 inputs, got ${signature.inputs.length}`);
    const outputs = signature.outputs.length;
    check(outputs >= 1, "expected at least 1 output, got 0");
    const input = checkMovedOperand(signature, MOVED_TYPES_WITH_INT32);
    checkTypes(
      signature,
      [input.type, "INT32", "INT32"],
      new Array(outputs).fill(input.type),
    );
    checkRank(input, "input 0", (r) => r >= 1, "at least 1");
    const count = knownScalar(signature.inputs[2]);
    check(
      count === undefined || count === outputs,
      `number of splits (input 2) is ${count} but the operation has ${outputs} outputs`,
    );
    return "V1_2";
  },

  prepare(inputs, outputs) {
    const { axis, part } = splitGeometry(inputs, outputs.length);
    return outputs.map(() => inputs[0].shape.map((d, i) => i === axis ? part : d));
  },

  execute(inputs, outputs) {
    const shape = inputs[0].shape;
    const { axis, part } = splitGeometry(knownInputs(inputs), outputs.length);
    const counts = shape.map((d, i) => i === axis ? part : d);
    outputs.forEach((output, k) => {
      const begin = shape.map((_, i) => i === axis ? k * part : 0);
      const step = shape.map(() => 1);
      stridedSlice(inputs[0].data!, shape, { begin, step, counts }, output.data!);
    });
  },
};
