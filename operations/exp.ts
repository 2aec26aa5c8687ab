/** EXP: e^x, elementwise on float32/float16 tensors of any rank (V1_2). */
import { expFloat32 } from "../kernels/elementwise_math.ts";
import { mathUnaryOperation } from "./common/math_unary.ts";
import type { OperationDefinition } from "./operation.ts";

/** EXP, elementwise; the output has the input's type and shape. */
export const exp: OperationDefinition<"EXP"> = mathUnaryOperation({
  type: "EXP",
  float: expFloat32,
});
