/** NEG: -x, elementwise on float32/float16/int32 tensors of any rank (V1_2). */
import { negFloat32, negInt32 } from "../kernels/elementwise_math.ts";
import { mathUnaryOperation } from "./common/math_unary.ts";
import type { OperationDefinition } from "./operation.ts";

/** NEG, elementwise; int32 wraps -2^31 to itself. */
export const neg: OperationDefinition<"NEG"> = mathUnaryOperation({
  type: "NEG",
  float: negFloat32,
  int32: negInt32,
});
