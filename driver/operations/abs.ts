/** ABS: |x|, elementwise on float32/float16 tensors of any rank (V1_2). */
import { absFloat32 } from "../../kernels/elementwise_math.ts";
import { mathUnaryOperation } from "./common/math_unary.ts";
import type { OperationDefinition } from "./operation.ts";

/** ABS, elementwise; the output has the input's type and shape. */
export const abs: OperationDefinition<"ABS"> = mathUnaryOperation({
  type: "ABS",
  float: absFloat32,
});
