/**
 * INSTANCE_NORMALIZATION: normalizes each (batch, channel) plane of a rank-4 tensor to zero
 * mean and unit variance, then scales by gamma and shifts by beta; input 4 selects NCHW.
 */
import { instanceNormalizationFloat32 } from "../kernels/instance_normalization.ts";
import { type FloatData, toFloat32, withFloat32Outputs } from "../kernels/typed_arrays.ts";
import { imageDims, nhwcData, writeNhwc } from "./common/layout.ts";
import { floatScalarType, versionOfInputType } from "./common/operand_types.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  type OperationDefinition,
  scalarOf,
} from "./operation.ts";

const INSTANCE_NORMALIZATION = { input: 0, gamma: 1, beta: 2, epsilon: 3, layout: 4 } as const;

/** INSTANCE_NORMALIZATION (HAL 1.2): float32 and float16 (computed in float32). */
export const instanceNormalization: OperationDefinition<"INSTANCE_NORMALIZATION"> = {
  type: "INSTANCE_NORMALIZATION",
  validate(signature) {
    checkArity(signature, [5], 1);
    const input = signature.inputs[INSTANCE_NORMALIZATION.input];
    const version = versionOfInputType(input, {
      TENSOR_FLOAT32: "V1_2",
      TENSOR_FLOAT16: "V1_2",
    });
    const scalar = floatScalarType(input.type);
    checkTypes(signature, [input.type, scalar, scalar, scalar, "BOOL"], [input.type]);
    checkRank(input, "input 0", (r) => r === 4, "4");
    return version;
  },
  prepare(inputs) {
    const shape = inputs[INSTANCE_NORMALIZATION.input].shape;
    check(shape.length === 4, `input 0 has rank ${shape.length}, expected 4`);
    return [[...shape]];
  },
  execute(inputs, outputs) {
    const input = inputs[INSTANCE_NORMALIZATION.input];
    const output = outputs[0];
    const nchw = scalarOf(inputs[INSTANCE_NORMALIZATION.layout]) !== 0;
    const params = {
      gamma: scalarOf(inputs[INSTANCE_NORMALIZATION.gamma]),
      beta: scalarOf(inputs[INSTANCE_NORMALIZATION.beta]),
      epsilon: scalarOf(inputs[INSTANCE_NORMALIZATION.epsilon]),
    };
    const dims = imageDims(input.shape, nchw);
    const data = toFloat32(nhwcData(input, nchw) as FloatData);
    writeNhwc(output, nchw, (out) => {
      withFloat32Outputs([out as FloatData], ([result]) => {
        instanceNormalizationFloat32(data, dims, params, result);
      });
    });
  },
};
