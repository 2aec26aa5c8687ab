/**
 * TILE: repeats a tensor along each dimension (NNAPI Tile.cpp). Inputs: 0 the tensor
 * (TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_INT32 or TENSOR_QUANT8_ASYMM; rank >= 1), 1 the
 * multiples (TENSOR_INT32 [rank], >= 1; often a model input, so the output shape may be known
 * only at execution). The output keeps the input's quantization.
 */
import { tile as tileKernel } from "../kernels/shape_transform.ts";
import {
  int32Vector,
  knownInputs,
  MOVED_TYPES_WITH_INT32,
  validateMoved,
} from "./common/shape_ops.ts";
import { check, checkArity, type OperationDefinition, type PrepareInput } from "./operation.ts";

/** The multiples of a call, checked against the input rank. */
function multiples(inputs: readonly PrepareInput[]): number[] {
  const shape = inputs[0].shape;
  check(shape.length >= 1, "input 0 has rank 0, expected at least 1");
  const values = int32Vector(inputs[1], "multiples (input 1)", shape.length);
  values.forEach((m, d) => check(m >= 1, `multiples (input 1) entry ${d} is ${m}, expected >= 1`));
  return values;
}

/** TILE (HAL 1.2). */
export const tile: OperationDefinition<"TILE"> = {
  type: "TILE",

  validate(signature) {
    checkArity(signature, [2], 1);
    validateMoved(signature, {
      supported: MOVED_TYPES_WITH_INT32,
      params: ["TENSOR_INT32"],
      ranks: [[1, "multiples (input 1)", 1]],
    });
    return "V1_2";
  },

  prepare(inputs) {
    const shape = inputs[0].shape;
    return [multiples(inputs).map((m, d) => shape[d] * m)];
  },

  execute(inputs, outputs) {
    const m = multiples(knownInputs(inputs));
    tileKernel(inputs[0].data!, inputs[0].shape, m, outputs[0].data!);
  },
};
