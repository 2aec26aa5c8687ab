/** RSQRT: 1 / sqrt(x), elementwise on float32/float16 tensors of any rank (V1_2). */
import { rsqrtFloat32 } from "../kernels/elementwise_math.ts";
import { mathUnaryOperation } from "./common/math_unary.ts";
import type { OperationDefinition } from "./operation.ts";

/** RSQRT, elementwise; the output has the input's type and shape. */
export const rsqrt: OperationDefinition<"RSQRT"> = mathUnaryOperation({
  type: "RSQRT",
  float: rsqrtFloat32,
});
