/**
 * RANK (HAL 1.3, NNAPI Rank.cpp): the number of dimensions of the input tensor, as an INT32
 * scalar. The input may have any tensor type; its rank is read from its shape at execution.
 */
import { checkInputType, TENSOR_TYPES } from "./common/operand_types.ts";
import { checkArity, checkTypes, type OperationDefinition } from "./operation.ts";

/** RANK (HAL 1.3). */
export const rank: OperationDefinition<"RANK"> = {
  type: "RANK",
  readsOnlyShapes: true,

  validate(signature) {
    checkArity(signature, [1], 1);
    const input = signature.inputs[0];
    checkInputType(input, 0, TENSOR_TYPES);
    checkTypes(signature, [input.type], ["INT32"]);
    return "V1_3";
  },

  /** The output is a scalar whatever the input's shape. */
  prepare: () => [[]],

  execute(inputs, outputs) {
    (outputs[0].data as Int32Array)[0] = inputs[0].shape.length;
  },
};
