/** SQRT: the square root, elementwise on float32/float16 tensors of any rank (V1_2). */
import { sqrtFloat32 } from "../kernels/elementwise_math.ts";
import { mathUnaryOperation } from "./common/math_unary.ts";
import type { OperationDefinition } from "./operation.ts";

/** SQRT, elementwise; the output has the input's type and shape. */
export const sqrt: OperationDefinition<"SQRT"> = mathUnaryOperation({
  type: "SQRT",
  float: sqrtFloat32,
});
