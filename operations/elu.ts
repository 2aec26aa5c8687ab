/**
 * ELU (HAL 1.3, NNAPI Elu.cpp): `max(0, x) + min(0, alpha * (exp(x) - 1))` elementwise.
 * Inputs: 0 the tensor (TENSOR_FLOAT32 or TENSOR_FLOAT16, any rank), 1 alpha (FLOAT32 or
 * FLOAT16, matching). The output has the input's type and shape. float16 runs in float32.
 */
import { type FloatData, toFloat32, withFloat32Outputs } from "../kernels/typed_arrays.ts";
import { prepareSameShape } from "./common/math_unary.ts";
import { checkInputType, floatScalarType } from "./common/operand_types.ts";
import { checkArity, checkTypes, type OperationDefinition, scalarOf } from "./operation.ts";

/** Named operand positions. */
const INPUT = 0;
const ALPHA = 1;

/**
 * ELU in float32 arithmetic as NNAPI computes it; for a negative alpha this formula (not
 * the textbook piecewise one) decides the result.
 */
export function eluFloat32(input: Float32Array, alpha: number, out: Float32Array): void {
  const a = Math.fround(alpha);
  for (let i = 0; i < out.length; i++) {
    const x = input[i];
    const negative = Math.fround(a * Math.fround(Math.fround(Math.exp(x)) - 1));
    out[i] = Math.max(0, x) + Math.min(0, negative);
  }
}

/** ELU (HAL 1.3). */
export const elu: OperationDefinition<"ELU"> = {
  type: "ELU",

  validate(signature) {
    checkArity(signature, [2], 1);
    const input = signature.inputs[INPUT];
    checkInputType(input, INPUT, ["TENSOR_FLOAT16", "TENSOR_FLOAT32"]);
    checkTypes(signature, [input.type, floatScalarType(input.type)], [input.type]);
    return "V1_3";
  },

  prepare: prepareSameShape,

  execute(inputs, outputs) {
    const output = outputs[0];
    if (output.data!.length === 0) return;
    const alpha = scalarOf(inputs[ALPHA]);
    withFloat32Outputs([output.data as FloatData], ([out]) => {
      eluFloat32(toFloat32(inputs[INPUT].data as FloatData), alpha, out);
    });
  },
};
