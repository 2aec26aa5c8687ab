/**
 * CAST: converts each element between TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_INT32 and
 * TENSOR_QUANT8_ASYMM (V1_2). NNAPI casts the stored values, not the real values they stand
 * for: quant8 scales and zero points are ignored, floats are truncated toward zero into
 * integers, and values are saturated to [0, 255] into quant8. HAL 1.3 adds identity casts
 * (same type in and out, a copy of the stored values) of the types in {@link IDENTITY_ONLY}.
 */
import { castElements } from "../kernels/elementwise_math.ts";
import type { Numbers, ReadonlyNumbers } from "../kernels/typed_arrays.ts";
import { toBytes } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { prepareSameShape } from "./common/math_unary.ts";
import { checkInputType } from "./common/operand_types.ts";
import { check, checkArity, type OperationDefinition } from "./operation.ts";

const CASTABLE: readonly OperandType[] = [
  "TENSOR_FLOAT16",
  "TENSOR_FLOAT32",
  "TENSOR_INT32",
  "TENSOR_QUANT8_ASYMM",
];

/** Types CAST takes since HAL 1.3, only to the same type. */
const IDENTITY_ONLY: readonly OperandType[] = [
  "TENSOR_BOOL8",
  "TENSOR_QUANT16_ASYMM",
  "TENSOR_QUANT16_SYMM",
  "TENSOR_QUANT8_ASYMM_SIGNED",
  "TENSOR_QUANT8_SYMM",
];

/** CAST, elementwise; the output has the input's shape. */
export const cast: OperationDefinition<"CAST"> = {
  type: "CAST",
  validate(signature) {
    checkArity(signature, [1], 1);
    const input = signature.inputs[0];
    const output = signature.outputs[0];
    if (IDENTITY_ONLY.includes(input.type)) {
      check(
        output.type === input.type,
        `output 0 (operand ${output.index}) has type ${output.type}; a ${input.type} input ` +
          `casts only to ${input.type}`,
      );
      return "V1_3";
    }
    checkInputType(input, 0, CASTABLE);
    check(
      CASTABLE.includes(output.type),
      `output 0 (operand ${output.index}) has unsupported type ${output.type}`,
    );
    return "V1_2";
  },
  prepare: prepareSameShape,
  execute(inputs, outputs) {
    const input = inputs[0];
    const output = outputs[0];
    if (IDENTITY_ONLY.includes(input.type)) {
      toBytes(output.data!).set(toBytes(input.data!));
      return;
    }
    const toInteger = output.type === "TENSOR_INT32" || output.type === "TENSOR_QUANT8_ASYMM";
    castElements(input.data as ReadonlyNumbers, output.data as Numbers, {
      truncate: toInteger,
      saturateUint8: output.type === "TENSOR_QUANT8_ASYMM",
    });
  },
};
