/**
 * LOG_SOFTMAX: (x - max) * beta - log(sum exp((x - max) * beta)) along an axis (negative
 * axes count from the end), for inputs of any rank.
 */
import { splitAtAxis } from "../kernels/axis_split.ts";
import { logSoftmaxFloat32 } from "../kernels/log_softmax.ts";
import { type FloatData, toFloat32, withFloat32Outputs } from "../kernels/typed_arrays.ts";
import { checkConstantAxis, resolveAxis } from "./common/axis.ts";
import { floatScalarType, versionOfInputType } from "./common/operand_types.ts";
import { knownScalar } from "./common/scalars.ts";
import { check, checkArity, checkTypes, type OperationDefinition, scalarOf } from "./operation.ts";

const LOG_SOFTMAX = { input: 0, beta: 1, axis: 2 } as const;

/** LOG_SOFTMAX (HAL 1.2): float32 and float16 (computed in float32). */
export const logSoftmax: OperationDefinition<"LOG_SOFTMAX"> = {
  type: "LOG_SOFTMAX",
  validate(signature) {
    checkArity(signature, [3], 1);
    const input = signature.inputs[LOG_SOFTMAX.input];
    const version = versionOfInputType(input, {
      TENSOR_FLOAT32: "V1_2",
      TENSOR_FLOAT16: "V1_2",
    });
    checkTypes(signature, [input.type, floatScalarType(input.type), "INT32"], [input.type]);
    checkConstantAxis(signature.inputs, LOG_SOFTMAX.axis, input.dimensions.length);
    return version;
  },
  prepare(inputs) {
    const shape = inputs[LOG_SOFTMAX.input].shape;
    check(shape.length >= 1, "input 0 has rank 0, expected at least 1");
    const axis = knownScalar(inputs[LOG_SOFTMAX.axis]);
    if (axis !== undefined) resolveAxis(axis, shape.length, `input ${LOG_SOFTMAX.axis}`);
    return [[...shape]];
  },
  execute(inputs, outputs) {
    const input = inputs[LOG_SOFTMAX.input];
    const beta = scalarOf(inputs[LOG_SOFTMAX.beta]);
    const axis = resolveAxis(
      scalarOf(inputs[LOG_SOFTMAX.axis]),
      input.shape.length,
      `input ${LOG_SOFTMAX.axis}`,
    );
    const split = splitAtAxis(input.shape, axis);
    withFloat32Outputs([outputs[0].data as FloatData], ([result]) => {
      logSoftmaxFloat32(toFloat32(input.data as FloatData), split, beta, result);
    });
  },
};
