/** LOGICAL_AND: elementwise a && b on TENSOR_BOOL8 tensors, with broadcasting (V1_2). */
import { logicalAndBool8 } from "../kernels/elementwise_math.ts";
import { logicalBinaryOperation } from "./common/logical.ts";
import type { OperationDefinition } from "./operation.ts";

/** LOGICAL_AND; the output shape is the broadcast of the input shapes. */
export const logicalAnd: OperationDefinition<"LOGICAL_AND"> = logicalBinaryOperation(
  "LOGICAL_AND",
  logicalAndBool8,
);
