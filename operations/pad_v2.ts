/**
 * PAD_V2: PAD with a chosen pad value (NNAPI Pad.cpp). Inputs: 0 the tensor (TENSOR_FLOAT32,
 * TENSOR_FLOAT16, TENSOR_QUANT8_ASYMM or, since HAL 1.3, TENSOR_QUANT8_ASYMM_SIGNED; rank 1
 * to 4), 1 the paddings (TENSOR_INT32 [rank, 2]), 2 the pad value (FLOAT32, FLOAT16, or for
 * quant8 an INT32 in quantized units).
 * The output keeps the input's quantization.
 */
import { pad as padKernel } from "../kernels/shape_transform.ts";
import type { OperandType } from "../nnapi/types.ts";
import { knownScalar } from "./common/scalars.ts";
import { checkMovedOperand, knownInputs, MOVED_TYPES, padGeometry } from "./common/shape_ops.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  type OperationDefinition,
  scalarOf,
} from "./operation.ts";

const PAD_VALUE_TYPES: Partial<Record<OperandType, OperandType>> = {
  TENSOR_FLOAT32: "FLOAT32",
  TENSOR_FLOAT16: "FLOAT16",
  TENSOR_QUANT8_ASYMM: "INT32",
  TENSOR_QUANT8_ASYMM_SIGNED: "INT32",
};

/** The range of a quant8 pad value, in the input's quantized units. */
const PAD_VALUE_RANGE: Partial<Record<OperandType, readonly [number, number]>> = {
  TENSOR_QUANT8_ASYMM: [0, 255],
  TENSOR_QUANT8_ASYMM_SIGNED: [-128, 127],
};

/** PAD_V2 (HAL 1.2). */
export const padV2: OperationDefinition<"PAD_V2"> = {
  type: "PAD_V2",

  validate(signature) {
    checkArity(signature, [3], 1);
    const input = checkMovedOperand(signature, MOVED_TYPES);
    checkTypes(
      signature,
      [input.type, "TENSOR_INT32", PAD_VALUE_TYPES[input.type]!],
      [input.type],
    );
    checkRank(input, "input 0", (r) => r <= 4, "at most 4");
    checkRank(signature.inputs[1], "paddings (input 1)", (r) => r === 2, "2");
    return "V1_2";
  },

  prepare(inputs) {
    const value = knownScalar(inputs[2]);
    const range = PAD_VALUE_RANGE[inputs[0].type];
    check(
      range === undefined || value === undefined ||
        (Number.isInteger(value) && value >= range[0] && value <= range[1]),
      `pad value (input 2) is ${value}, outside the ${inputs[0].type} range [${range?.[0]}, ${
        range?.[1]
      }]`,
    );
    return [padGeometry(inputs).shape];
  },

  execute(inputs, outputs) {
    const { before } = padGeometry(knownInputs(inputs));
    const output = outputs[0];
    const value = scalarOf(inputs[2]);
    padKernel(inputs[0].data!, inputs[0].shape, before, value, output.data!, output.shape);
  },
};
