/**
 * SUB: a - b with numpy-style broadcasting and a fused activation. Forms: TENSOR_FLOAT32
 * (V1_1), TENSOR_FLOAT16 and TENSOR_QUANT8_ASYMM (V1_2), TENSOR_QUANT8_ASYMM_SIGNED and
 * TENSOR_INT32 (V1_3; int32 takes only the NONE activation and wraps on overflow).
 */
import { addQuant8 } from "../kernels/elementwise_binary.ts";
import { subFloat32, subInt32, subQuant8Params } from "../kernels/elementwise_broadcast.ts";
import { laterHal } from "../nnapi/types.ts";
import { binaryOperation } from "./common/binary.ts";
import type { OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

const base = withSignedQuant8(
  binaryOperation({
    type: "SUB",
    float: subFloat32,
    int32: subInt32,
    quantParams: (input1, input2, output) =>
      subQuant8Params(input1, input2, output) ??
        `output scale ${output.scale} is too small for input scales ${input1.scale} and ${input2.scale}`,
    quant: addQuant8,
  }),
);

/**
 * SUB (since V1_1); quant8 (since V1_2) runs quantized ADD with the second input's
 * multiplier negated, as NNAPI does.
 */
export const sub: OperationDefinition<"SUB"> = {
  ...base,
  validate(signature) {
    const version = base.validate(signature);
    const since = signature.inputs[0].type === "TENSOR_QUANT8_ASYMM" ? "V1_2" : "V1_1";
    return laterHal(version, since);
  },
};
