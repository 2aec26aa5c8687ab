/**
 * PAD: surrounds a tensor with zeros (NNAPI Pad.cpp). Inputs: 0 the tensor (TENSOR_FLOAT32,
 * TENSOR_QUANT8_ASYMM, or TENSOR_FLOAT16 since HAL 1.2; rank 1 to 4), 1 the paddings
 * (TENSOR_INT32 [rank, 2]: before and after each dimension). Quant8 pads with the zero
 * point, so the output keeps the input's quantization; a nonzero zero point needs HAL 1.2.
 */
import { pad as padKernel } from "../kernels/shape_transform.ts";
import {
  checkMovedOperand,
  knownInputs,
  MOVED_TYPES,
  padGeometry,
  versionWithFloat16,
} from "./common/shape_ops.ts";
import { checkArity, checkRank, checkTypes, type OperationDefinition } from "./operation.ts";
import { isQuant8Asymm } from "./common/signed.ts";

/** PAD (HAL 1.1; float16 or a quant8 zero point other than 0 need HAL 1.2). */
export const pad: OperationDefinition<"PAD"> = {
  type: "PAD",

  validate(signature) {
    checkArity(signature, [2], 1);
    const input = checkMovedOperand(signature, MOVED_TYPES);
    checkTypes(signature, [input.type, "TENSOR_INT32"], [input.type]);
    checkRank(input, "input 0", (r) => r <= 4, "at most 4");
    checkRank(signature.inputs[1], "paddings (input 1)", (r) => r === 2, "2");
    if (input.type === "TENSOR_QUANT8_ASYMM" && input.zeroPoint !== 0) return "V1_2";
    return versionWithFloat16(input, "V1_1");
  },

  prepare(inputs) {
    return [padGeometry(inputs).shape];
  },

  execute(inputs, outputs) {
    const { before } = padGeometry(knownInputs(inputs));
    const output = outputs[0];
    const value = isQuant8Asymm(output.type) ? output.zeroPoint : 0;
    padKernel(inputs[0].data!, inputs[0].shape, before, value, output.data!, output.shape);
  },
};
