/**
 * ADD: a + b with numpy-style broadcasting and a fused activation. Forms: TENSOR_FLOAT32 and
 * TENSOR_QUANT8_ASYMM (V1_0), TENSOR_FLOAT16 (V1_2), TENSOR_QUANT8_ASYMM_SIGNED and
 * TENSOR_INT32 (V1_3; int32 takes only the NONE activation and wraps on overflow).
 */
import { addFloat32, addQuant8, addQuant8Params } from "../kernels/elementwise_binary.ts";
import { addInt32 } from "../kernels/elementwise_broadcast.ts";
import { binaryOperation } from "./common/binary.ts";
import type { OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** ADD; quant8 rescales both inputs to twice the larger input scale with a left shift of 20. */
export const add: OperationDefinition<"ADD"> = withSignedQuant8(
  binaryOperation({
    type: "ADD",
    float: addFloat32,
    int32: addInt32,
    quantParams: (input1, input2, output) =>
      addQuant8Params(input1, input2, output) ??
        `output scale ${output.scale} is too small for input scales ${input1.scale} and ${input2.scale}`,
    quant: addQuant8,
  }),
);
