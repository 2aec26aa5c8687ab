/**
 * ABS: |x|, elementwise on tensors of any rank. Forms: TENSOR_FLOAT32 and TENSOR_FLOAT16
 * (V1_2), TENSOR_INT32 (V1_3; |-2^31| wraps to -2^31 as two's complement does).
 */
import { absFloat32, absInt32 } from "../kernels/elementwise_math.ts";
import { mathUnaryOperation } from "./common/math_unary.ts";
import type { OperationDefinition } from "./operation.ts";

/** ABS, elementwise; the output has the input's type and shape. */
export const abs: OperationDefinition<"ABS"> = mathUnaryOperation({
  type: "ABS",
  float: absFloat32,
  int32: absInt32,
  laterTypes: { TENSOR_INT32: "V1_3" },
});
