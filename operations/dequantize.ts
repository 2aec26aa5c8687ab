/**
 * DEQUANTIZE: real = scale * (q - zeroPoint). V1_0: TENSOR_QUANT8_ASYMM to TENSOR_FLOAT32;
 * V1_2 adds TENSOR_QUANT8_SYMM and per-channel inputs and TENSOR_FLOAT16 outputs.
 */
import {
  dequantize as dequantizeKernel,
  dequantizePerChannel,
} from "../kernels/elementwise_unary.ts";
import { type FloatData, withFloat32Outputs } from "../kernels/typed_arrays.ts";
import type { OperandType } from "../nnapi/types.ts";
import { checkInputType } from "./common/operand_types.ts";
import { prepareElementwise } from "./common/unary.ts";
import {
  check,
  checkArity,
  checkRank,
  type OperationDefinition,
  OperationError,
} from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

const QUANTIZED_INPUTS: readonly OperandType[] = [
  "TENSOR_QUANT8_ASYMM",
  "TENSOR_QUANT8_SYMM",
  "TENSOR_QUANT8_SYMM_PER_CHANNEL",
];

/** DEQUANTIZE, elementwise; the output has the input's shape. */
export const dequantize: OperationDefinition<"DEQUANTIZE"> = withSignedQuant8({
  type: "DEQUANTIZE",
  validate(signature) {
    checkArity(signature, [1], 1);
    const input = signature.inputs[0];
    const output = signature.outputs[0];
    checkInputType(input, 0, QUANTIZED_INPUTS);
    check(
      output.type === "TENSOR_FLOAT32" || output.type === "TENSOR_FLOAT16",
      `output 0 (operand ${output.index}) has unsupported type ${output.type}`,
    );
    checkRank(input, "input 0", (r) => r <= 4, "at most 4");
    return input.type === "TENSOR_QUANT8_ASYMM" && output.type === "TENSOR_FLOAT32"
      ? "V1_0"
      : "V1_2";
  },
  prepare: prepareElementwise,
  execute(inputs, outputs) {
    const input = inputs[0];
    const output = outputs[0];
    if (output.data!.length === 0) return;
    withFloat32Outputs([output.data as FloatData], ([result]) => {
      if (input.type === "TENSOR_QUANT8_SYMM_PER_CHANNEL") {
        const channelQuant = input.channelQuant;
        if (!channelQuant) throw new OperationError("input 0 has no per-channel quantization");
        dequantizePerChannel(
          input.data as Int8Array,
          input.shape,
          channelQuant.channelDim,
          channelQuant.scales,
          result,
        );
      } else {
        dequantizeKernel(
          input.data as Uint8Array | Int8Array,
          input.scale,
          input.zeroPoint,
          result,
        );
      }
    });
  },
});
