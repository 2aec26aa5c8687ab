/**
 * ERF, an nnserve extension (NNAPI has none; ONNX's Erf, which GELU activations are made
 * of): the error function, elementwise on float32/float16 tensors of any rank, within
 * 1.2e-7 of the exact value (`kernels/elementwise_math.ts`).
 */
import { erfFloat32 } from "../kernels/elementwise_math.ts";
import { mathUnaryOperation } from "./common/math_unary.ts";
import type { OperationDefinition } from "./operation.ts";

/** ERF (an nnserve extension, HAL 1.3 operand types); the output has the input's type and shape. */
export const erf: OperationDefinition<"ERF"> = mathUnaryOperation({
  type: "ERF",
  float: erfFloat32,
  laterTypes: { TENSOR_FLOAT32: "V1_3", TENSOR_FLOAT16: "V1_3" },
});
