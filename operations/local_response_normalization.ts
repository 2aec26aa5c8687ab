/**
 * LOCAL_RESPONSE_NORMALIZATION: x * (bias + alpha * sum of squares within `radius`
 * along an axis) ^ -beta (the last axis unless HAL 1.2's optional axis input says otherwise).
 */
import { localResponseNormalizationFloat32 } from "../kernels/normalization_kernels.ts";
import { type FloatData, toFloat32, withFloat32Outputs } from "../kernels/typed_arrays.ts";
import { elementCount } from "../nnapi/tensor.ts";
import {
  checkConstantAxis,
  executionSplit,
  prepareAlongAxis,
  validateAlongAxis,
} from "./common/axis.ts";
import { floatScalarType, versionOfInputType } from "./common/operand_types.ts";
import { knownScalar } from "./common/scalars.ts";
import { checkArity, type OperationDefinition, scalarOf } from "./operation.ts";

const AXIS = 5;

/** LOCAL_RESPONSE_NORMALIZATION on float tensors (float16 since V1_2). */
export const localResponseNormalization: OperationDefinition<"LOCAL_RESPONSE_NORMALIZATION"> = {
  type: "LOCAL_RESPONSE_NORMALIZATION",
  validate(signature) {
    checkArity(signature, [5, 6], 1);
    const input = signature.inputs[0];
    const typeVersion = versionOfInputType(input, {
      TENSOR_FLOAT32: "V1_0",
      TENSOR_FLOAT16: "V1_2",
    });
    const scalarType = floatScalarType(input.type);
    const version = validateAlongAxis(signature, typeVersion, {
      expected: [input.type, "INT32", scalarType, scalarType, scalarType],
      axisAt: AXIS,
      v10Ranks: [4],
    });
    checkConstantAxis(signature.inputs, AXIS, input.dimensions.length);
    return version;
  },
  prepare: (inputs) => prepareAlongAxis(inputs, AXIS),
  /** Each output sums the squares of its 2 * radius + 1 neighbours, clipped to the axis. */
  cost(inputs, outputs) {
    const shape = inputs[0].shape;
    const axis = inputs.length > AXIS ? knownScalar(inputs[AXIS]) : -1;
    const extent = axis === undefined ? Math.max(...shape) : shape.at(axis) ?? 1;
    const radius = knownScalar(inputs[1]) ?? extent;
    return elementCount(outputs[0].shape) * Math.max(1, Math.min(2 * radius + 1, extent));
  },
  execute(inputs, outputs) {
    const input = inputs[0];
    const output = outputs[0];
    const split = executionSplit(inputs, AXIS);
    if (output.data!.length === 0) return;
    const params = {
      radius: scalarOf(inputs[1]),
      bias: scalarOf(inputs[2]),
      alpha: scalarOf(inputs[3]),
      beta: scalarOf(inputs[4]),
    };
    withFloat32Outputs([output.data as FloatData], ([result]) => {
      localResponseNormalizationFloat32(toFloat32(input.data as FloatData), split, params, result);
    });
  },
};
