/** LOGICAL_NOT: elementwise negation of a TENSOR_BOOL8 tensor of any rank (V1_2). */
import { logicalNotBool8 } from "../kernels/elementwise_math.ts";
import { mathUnaryOperation } from "./common/math_unary.ts";
import type { OperationDefinition } from "./operation.ts";

/** LOGICAL_NOT; the output has the input's shape. */
export const logicalNot: OperationDefinition<"LOGICAL_NOT"> = mathUnaryOperation({
  type: "LOGICAL_NOT",
  bool8: logicalNotBool8,
});
