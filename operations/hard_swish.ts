/**
 * HARD_SWISH (HAL 1.3, NNAPI Activation.cpp): `x * relu6(x + 3) / 6` elementwise on a
 * tensor of any rank: TENSOR_FLOAT32, TENSOR_FLOAT16 (computed in float32),
 * TENSOR_QUANT8_ASYMM and TENSOR_QUANT8_ASYMM_SIGNED (NNAPI's 16-bit fixed-point form, with
 * the output's own quantization). The output has the input's type and shape.
 */
import {
  hardSwishFloat32,
  type HardSwishQuantParams,
  hardSwishQuantParams,
  hardSwishQuantTable,
  lookupBytes,
} from "../kernels/hard_swish.ts";
import { type FloatData, toFloat32, withFloat32Outputs } from "../kernels/typed_arrays.ts";
import type { TensorData, TensorInfo } from "../nnapi/tensor.ts";
import { prepareSameShape } from "./common/math_unary.ts";
import { checkInputType } from "./common/operand_types.ts";
import {
  check,
  checkArity,
  checkTypes,
  type Kernel,
  type OperationDefinition,
  OperationError,
} from "./operation.ts";

function isQuantized(type: string): boolean {
  return type === "TENSOR_QUANT8_ASYMM" || type === "TENSOR_QUANT8_ASYMM_SIGNED";
}

function bytesOf(data: TensorData): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** The lookup table for these quantizations; throws OperationError when NNAPI cannot run it. */
function quantTable(input: TensorInfo, output: TensorInfo): Uint8Array {
  const params: HardSwishQuantParams | null = hardSwishQuantParams(input, output);
  if (!params) {
    throw new OperationError(
      `output scale ${output.scale} is too small for input scale ${input.scale}`,
    );
  }
  return hardSwishQuantTable(params, input.type === "TENSOR_QUANT8_ASYMM_SIGNED");
}

/** HARD_SWISH (HAL 1.3). */
export const hardSwish: OperationDefinition<"HARD_SWISH"> = {
  type: "HARD_SWISH",

  validate(signature) {
    checkArity(signature, [1], 1);
    const input = signature.inputs[0];
    checkInputType(input, 0, [
      "TENSOR_FLOAT16",
      "TENSOR_FLOAT32",
      "TENSOR_QUANT8_ASYMM",
      "TENSOR_QUANT8_ASYMM_SIGNED",
    ]);
    checkTypes(signature, [input.type], [input.type]);
    if (isQuantized(input.type)) {
      const output = signature.outputs[0];
      check(
        hardSwishQuantParams(input, output) !== null,
        `output 0 (operand ${output.index}) has scale ${output.scale}, too small for the ` +
          `input scale ${input.scale} (must exceed input scale / 128)`,
      );
    }
    return "V1_3";
  },

  prepare: prepareSameShape,

  execute(inputs, outputs) {
    const input = inputs[0];
    const output = outputs[0];
    if (output.data!.length === 0) return;
    if (isQuantized(input.type)) {
      lookupBytes(bytesOf(input.data!), quantTable(input, output), bytesOf(output.data!));
      return;
    }
    withFloat32Outputs([output.data as FloatData], ([out]) => {
      hardSwishFloat32(toFloat32(input.data as FloatData), out);
    });
  },

  bindReference(inputs, outputs): Kernel | undefined {
    if (!isQuantized(inputs[0].type)) return undefined;
    let table: Uint8Array;
    try {
      table = quantTable(inputs[0], outputs[0]);
    } catch (error) {
      if (error instanceof OperationError) return undefined; // the reference reports it
      throw error;
    }
    return (inputs, outputs) => {
      if (outputs[0].data!.length > 0) {
        lookupBytes(bytesOf(inputs[0].data!), table, bytesOf(outputs[0].data!));
      }
    };
  },
};
