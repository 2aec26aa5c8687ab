/**
 * L2_NORMALIZATION: x / sqrt(sum x^2) along an axis (the last one unless HAL 1.2's optional
 * axis input says otherwise). Forms: TENSOR_FLOAT32 of rank 4 (V1_0); TENSOR_FLOAT16,
 * TENSOR_QUANT8_ASYMM, other ranks and the axis input (V1_2); TENSOR_QUANT8_ASYMM_SIGNED
 * (V1_3). A vector of zeros (quantized: every element at the zero point) normalizes to
 * zeros (the output zero point), as HAL 1.3 defines it; every form computes it so, since
 * HAL 1.3 only defines what earlier HALs left undefined and needs no new version.
 */
import { l2NormalizationFloat32, l2NormalizationQuant8 } from "../kernels/normalization_kernels.ts";
import { type FloatData, toFloat32, withFloat32Outputs } from "../kernels/typed_arrays.ts";
import {
  checkConstantAxis,
  executionSplit,
  prepareAlongAxis,
  validateAlongAxis,
} from "./common/axis.ts";
import { versionOfInputType } from "./common/operand_types.ts";
import { checkFixedQuantization } from "./common/quantization.ts";
import { checkArity, type OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

const AXIS = 1;

/** L2_NORMALIZATION; quant8 (V1_2) output has scale 1/128 and zero point 128. */
export const l2Normalization: OperationDefinition<"L2_NORMALIZATION"> = withSignedQuant8({
  type: "L2_NORMALIZATION",
  validate(signature) {
    checkArity(signature, [1, 2], 1);
    const input = signature.inputs[0];
    const typeVersion = versionOfInputType(input, {
      TENSOR_FLOAT32: "V1_0",
      TENSOR_FLOAT16: "V1_2",
      TENSOR_QUANT8_ASYMM: "V1_2",
    });
    const version = validateAlongAxis(signature, typeVersion, {
      expected: [input.type],
      axisAt: AXIS,
      v10Ranks: [4],
    });
    checkConstantAxis(signature.inputs, AXIS, input.dimensions.length);
    if (input.type === "TENSOR_QUANT8_ASYMM") {
      checkFixedQuantization(signature.outputs[0], {
        scale: 1 / 128,
        zeroPoint: 128,
        scaleText: "1/128",
      });
    }
    return version;
  },
  prepare: (inputs) => prepareAlongAxis(inputs, AXIS),
  execute(inputs, outputs) {
    const input = inputs[0];
    const output = outputs[0];
    const split = executionSplit(inputs, AXIS);
    if (output.data!.length === 0) return;
    if (input.type === "TENSOR_QUANT8_ASYMM") {
      l2NormalizationQuant8(
        input.data as Uint8Array,
        input.zeroPoint,
        split,
        output.data as Uint8Array,
      );
      return;
    }
    withFloat32Outputs([output.data as FloatData], ([result]) => {
      l2NormalizationFloat32(toFloat32(input.data as FloatData), split, result);
    });
  },
});
