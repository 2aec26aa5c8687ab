/** LOGICAL_OR: elementwise a || b on TENSOR_BOOL8 tensors, with broadcasting (V1_2). */
import { logicalOrBool8 } from "../kernels/elementwise_math.ts";
import { logicalBinaryOperation } from "./common/logical.ts";
import type { OperationDefinition } from "./operation.ts";

/** LOGICAL_OR; the output shape is the broadcast of the input shapes. */
export const logicalOr: OperationDefinition<"LOGICAL_OR"> = logicalBinaryOperation(
  "LOGICAL_OR",
  logicalOrBool8,
);
