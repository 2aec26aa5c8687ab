/** LOG: the natural logarithm, elementwise on float32/float16 tensors of any rank (V1_2). */
import { logFloat32 } from "../kernels/elementwise_math.ts";
import { mathUnaryOperation } from "./common/math_unary.ts";
import type { OperationDefinition } from "./operation.ts";

/** LOG, elementwise; the output has the input's type and shape. */
export const log: OperationDefinition<"LOG"> = mathUnaryOperation({
  type: "LOG",
  float: logFloat32,
});
