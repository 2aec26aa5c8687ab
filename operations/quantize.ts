/**
 * QUANTIZE: float32/float16 to TENSOR_QUANT8_ASYMM (V1_2):
 * `q = clamp(zeroPoint + round(x / scale), 0, 255)`, dividing in float32 and rounding
 * halves away from zero as NNAPI's reference does.
 */
import { quantizeUint8 } from "../kernels/elementwise_math.ts";
import type { ReadonlyNumbers } from "../kernels/typed_arrays.ts";
import { prepareSameShape } from "./common/math_unary.ts";
import { checkInputType } from "./common/operand_types.ts";
import { checkArity, checkTypes, type OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** QUANTIZE, elementwise; the output has the input's shape and its own quantization. */
export const quantize: OperationDefinition<"QUANTIZE"> = withSignedQuant8({
  type: "QUANTIZE",
  validate(signature) {
    checkArity(signature, [1], 1);
    const input = signature.inputs[0];
    checkInputType(input, 0, ["TENSOR_FLOAT16", "TENSOR_FLOAT32"]);
    checkTypes(signature, [input.type], ["TENSOR_QUANT8_ASYMM"]);
    return "V1_2";
  },
  prepare: prepareSameShape,
  execute(inputs, outputs) {
    const input = inputs[0];
    const output = outputs[0];
    quantizeUint8(
      input.data as ReadonlyNumbers,
      output.scale,
      output.zeroPoint,
      output.data as Uint8Array,
    );
  },
});
