/** RELU: max(0, x). */
import { clampFloat32, FLOAT32_MAX } from "../kernels/activation_functions.ts";
import { clampQuant8Form, unaryOperation } from "./common/unary.ts";
import type { OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** RELU: max(0, x) (NNAPI clamps to the largest float, so +inf becomes FLT_MAX). */
export const relu: OperationDefinition<"RELU"> = withSignedQuant8(
  unaryOperation({
    type: "RELU",
    float: (input, output) => clampFloat32(input, output, 0, FLOAT32_MAX),
    quant8: clampQuant8Form(1),
  }),
);
