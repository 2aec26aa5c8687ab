/**
 * EXPAND_DIMS: inserts a dimension of size 1 (NNAPI ExpandDims.cpp). Inputs: 0 the tensor
 * (TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_INT32 or TENSOR_QUANT8_ASYMM), 1 the position
 * (INT32 in [-(rank + 1), rank]; negative counts from the end of the output). The output keeps
 * the input's elements and quantization.
 */
import { copyElements } from "../kernels/shape_transform.ts";
import { resolveAxis } from "./common/axis.ts";
import { checkMovedOperand, MOVED_TYPES_WITH_INT32 } from "./common/shape_ops.ts";
import {
  checkArity,
  checkRank,
  checkTypes,
  type OperationDefinition,
  scalarValue,
} from "./operation.ts";

/** EXPAND_DIMS (HAL 1.2). */
export const expandDims: OperationDefinition<"EXPAND_DIMS"> = {
  type: "EXPAND_DIMS",

  validate(signature) {
    checkArity(signature, [2], 1);
    const input = checkMovedOperand(signature, MOVED_TYPES_WITH_INT32);
    checkTypes(signature, [input.type, "INT32"], [input.type]);
    const output = signature.outputs[0];
    checkRank(
      output,
      "output 0",
      (r) => input.dimensions.length === 0 || r === input.dimensions.length + 1,
      "the input's rank + 1",
    );
    return "V1_2";
  },

  prepare(inputs) {
    const shape = inputs[0].shape;
    const axis = resolveAxis(
      scalarValue(inputs[1], "axis (input 1)"),
      shape.length + 1,
      "axis (input 1)",
    );
    return [[...shape.slice(0, axis), 1, ...shape.slice(axis)]];
  },

  // No work: the arena gives the output its input's bytes (`arena_layout.ts`), and
  // elsewhere it is one block copy.
  cost: () => 0,

  execute(inputs, outputs) {
    copyElements(inputs[0].data!, outputs[0].data!);
  },
};
