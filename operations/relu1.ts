/** RELU1: min(1, max(-1, x)). */
import { clampFloat32 } from "../kernels/activation_functions.ts";
import { clampQuant8Form, unaryOperation } from "./common/unary.ts";
import type { OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** RELU1: clamps to [-1, 1]; quant8 bounds are -1 and 1 quantized with the input's scale. */
export const relu1: OperationDefinition<"RELU1"> = withSignedQuant8(
  unaryOperation({
    type: "RELU1",
    float: (input, output) => clampFloat32(input, output, -1, 1),
    quant8: clampQuant8Form(2),
  }),
);
