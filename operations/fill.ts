/**
 * FILL (HAL 1.3, NNAPI Fill.cpp): a tensor of the shape given by input 0 (TENSOR_INT32 of
 * rank 1) with every element set to input 1. The output type (TENSOR_FLOAT16,
 * TENSOR_FLOAT32 or TENSOR_INT32) decides the value's type (FLOAT16, FLOAT32 or INT32). The
 * output shape depends on the dims tensor's values: known at preparation when it is
 * constant, else at execution.
 */
import type { OperandType } from "../nnapi/types.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTensorSize,
  checkTypes,
  type OperationDefinition,
  scalarOf,
  tensorValue,
} from "./operation.ts";

/** Named operand positions. */
const DIMS = 0;
const VALUE = 1;

const VALUE_TYPES: Partial<Record<OperandType, OperandType>> = {
  TENSOR_FLOAT16: "FLOAT16",
  TENSOR_FLOAT32: "FLOAT32",
  TENSOR_INT32: "INT32",
};

/** FILL (HAL 1.3). */
export const fill: OperationDefinition<"FILL"> = {
  type: "FILL",

  validate(signature) {
    checkArity(signature, [2], 1);
    const output = signature.outputs[0];
    const valueType = VALUE_TYPES[output.type];
    check(
      valueType !== undefined,
      `output 0 (operand ${output.index}) has unsupported type ${output.type}`,
    );
    checkTypes(signature, ["TENSOR_INT32", valueType], [output.type]);
    checkRank(signature.inputs[DIMS], "dims (input 0)", (r) => r === 1, "1");
    const dims = signature.inputs[DIMS];
    if (dims.dimensions.length === 1 && dims.dimensions[0] !== 0) {
      checkRank(output, "output 0", (r) => r === dims.dimensions[0], `${dims.dimensions[0]}`);
    }
    return "V1_3";
  },

  prepare(inputs, outputs) {
    const dimsShape = inputs[DIMS].shape;
    check(dimsShape.length === 1, `dims (input 0) has rank ${dimsShape.length}, expected 1`);
    const dims = tensorValue(inputs[DIMS], "dims (input 0)");
    check(dims.length >= 1, "dims (input 0) is empty, expected at least one extent");
    const shape = Array.from(dims, Number);
    shape.forEach((d, i) => check(d >= 0, `dims (input 0) has ${d} at ${i}, expected >= 0`));
    checkTensorSize(outputs[0].type, shape, "output 0");
    return [shape];
  },

  execute(inputs, outputs) {
    outputs[0].data!.fill(scalarOf(inputs[VALUE]));
  },
};
