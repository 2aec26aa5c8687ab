/** SIN: the sine of x radians, elementwise on float32/float16 tensors of any rank (V1_2). */
import { sinFloat32 } from "../kernels/elementwise_math.ts";
import { mathUnaryOperation } from "./common/math_unary.ts";
import type { OperationDefinition } from "./operation.ts";

/** SIN, elementwise; the output has the input's type and shape. */
export const sin: OperationDefinition<"SIN"> = mathUnaryOperation({
  type: "SIN",
  float: sinFloat32,
});
