/**
 * GATHER: picks slices of a tensor along an axis by index (NNAPI Gather.cpp). Inputs: 0 the
 * tensor (TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_INT32 or TENSOR_QUANT8_ASYMM; rank >= 1),
 * 1 the axis (INT32, negative counts from the end), 2 the indices (TENSOR_INT32, any rank,
 * each in [0, axis size)). Output shape: input dims before the axis, the indices' dims, input
 * dims after the axis; the output keeps the input's quantization.
 */
import { splitAtAxis } from "../kernels/axis_split.ts";
import { gather as gatherKernel } from "../kernels/shape_transform.ts";
import { resolveAxis } from "./common/axis.ts";
import { MOVED_TYPES_WITH_INT32, validateMoved } from "./common/shape_ops.ts";
import {
  check,
  checkArity,
  type OperationDefinition,
  type PrepareInput,
  scalarOf,
  scalarValue,
} from "./operation.ts";

const AXIS = 1;
const INDICES = 2;

/** The resolved axis of a call. */
function gatherAxis(inputs: readonly PrepareInput[]): number {
  const rank = inputs[0].shape.length;
  check(rank >= 1, "input 0 has rank 0, expected at least 1");
  return resolveAxis(
    scalarValue(inputs[AXIS], `axis (input ${AXIS})`),
    rank,
    `axis (input ${AXIS})`,
  );
}

/** GATHER (HAL 1.2). */
export const gather: OperationDefinition<"GATHER"> = {
  type: "GATHER",

  validate(signature) {
    checkArity(signature, [3], 1);
    validateMoved(signature, {
      supported: MOVED_TYPES_WITH_INT32,
      params: ["INT32", "TENSOR_INT32"],
      ranks: [[0, "input 0", "at least 1"]],
    });
    return "V1_2";
  },

  prepare(inputs) {
    const shape = inputs[0].shape;
    const axis = gatherAxis(inputs);
    const indices = inputs[INDICES];
    if (indices.value) {
      for (const index of indices.value) {
        check(
          index >= 0 && index < shape[axis],
          `indices (input ${INDICES}) holds ${index}, outside [0, ${shape[axis]})`,
        );
      }
    }
    return [[...shape.slice(0, axis), ...indices.shape, ...shape.slice(axis + 1)]];
  },

  execute(inputs, outputs) {
    const shape = inputs[0].shape;
    const axis = resolveAxis(scalarOf(inputs[AXIS]), shape.length, `axis (input ${AXIS})`);
    const indices = inputs[INDICES].data!;
    for (const index of indices) {
      check(
        index >= 0 && index < shape[axis],
        `indices (input ${INDICES}) holds ${index}, outside [0, ${shape[axis]})`,
      );
    }
    gatherKernel(inputs[0].data!, splitAtAxis(shape, axis), indices, outputs[0].data!);
  },
};
