/**
 * MUL: a * b with numpy-style broadcasting and a fused activation. Forms: TENSOR_FLOAT32 and
 * TENSOR_QUANT8_ASYMM (V1_0), TENSOR_FLOAT16 (V1_2), TENSOR_QUANT8_ASYMM_SIGNED and
 * TENSOR_INT32 (V1_3; int32 takes only the NONE activation, the product keeps its low 32 bits).
 */
import { mulFloat32, mulQuant8, mulQuant8Params } from "../kernels/elementwise_binary.ts";
import { mulInt32 } from "../kernels/elementwise_broadcast.ts";
import { binaryOperation } from "./common/binary.ts";
import type { OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** MUL; quant8 needs output_scale > input1_scale * input2_scale (one multiplier below 1). */
export const mul: OperationDefinition<"MUL"> = withSignedQuant8(
  binaryOperation({
    type: "MUL",
    float: mulFloat32,
    int32: mulInt32,
    quantParams(input1, input2, output) {
      const product = Math.fround(input1.scale * input2.scale);
      if (!(output.scale > product)) {
        return `output scale ${output.scale} must exceed the product of the input scales ${product}`;
      }
      return mulQuant8Params(input1, input2, output) ??
        `output scale ${output.scale} gives no usable multiplier`;
    },
    quant: mulQuant8,
  }),
);
