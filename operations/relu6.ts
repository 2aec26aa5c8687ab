/** RELU6: min(6, max(0, x)). */
import { clampFloat32 } from "../kernels/activation_functions.ts";
import { clampQuant8Form, unaryOperation } from "./common/unary.ts";
import type { OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** RELU6: clamps to [0, 6]; quant8 bounds are 0 and 6 quantized with the input's scale. */
export const relu6: OperationDefinition<"RELU6"> = withSignedQuant8(
  unaryOperation({
    type: "RELU6",
    float: (input, output) => clampFloat32(input, output, 0, 6),
    quant8: clampQuant8Form(3),
  }),
);
