/**
 * CHANNEL_SHUFFLE: interleaves channel groups along an axis (NNAPI ChannelShuffle.cpp; the
 * axis of n = g * k channels seen as [g, k], transposed to [k, g]). Inputs: 0 the tensor
 * (TENSOR_FLOAT32, TENSOR_FLOAT16 or TENSOR_QUANT8_ASYMM; rank 1 to 4), 1 the number of
 * groups g (INT32, > 0, dividing the axis size), 2 the axis (INT32, negative counts from the
 * end). The output has the input's shape and quantization.
 */
import { splitAtAxis } from "../kernels/axis_split.ts";
import { channelShuffle as channelShuffleKernel } from "../kernels/shape_transform.ts";
import { resolveAxis } from "./common/axis.ts";
import { checkShapeRank, knownInputs, MOVED_TYPES, validateMoved } from "./common/shape_ops.ts";
import {
  check,
  checkArity,
  type OperationDefinition,
  type PrepareInput,
  scalarValue,
} from "./operation.ts";

/** The groups and resolved axis of a call. */
function shuffleParameters(inputs: readonly PrepareInput[]): { groups: number; axis: number } {
  const shape = inputs[0].shape;
  checkShapeRank(shape, "input 0", 1, 4);
  const groups = scalarValue(inputs[1], "groups (input 1)");
  const axis = resolveAxis(
    scalarValue(inputs[2], "axis (input 2)"),
    shape.length,
    "axis (input 2)",
  );
  check(
    groups > 0 && shape[axis] % groups === 0,
    `groups (input 1) is ${groups}, expected a positive divisor of the axis size ${shape[axis]}`,
  );
  return { groups, axis };
}

/** CHANNEL_SHUFFLE (HAL 1.2). */
export const channelShuffle: OperationDefinition<"CHANNEL_SHUFFLE"> = {
  type: "CHANNEL_SHUFFLE",

  validate(signature) {
    checkArity(signature, [3], 1);
    validateMoved(signature, {
      supported: MOVED_TYPES,
      params: ["INT32", "INT32"],
      ranks: [[0, "input 0", "at most 4"]],
    });
    return "V1_2";
  },

  prepare(inputs) {
    shuffleParameters(inputs);
    return [[...inputs[0].shape]];
  },

  execute(inputs, outputs) {
    const { groups, axis } = shuffleParameters(knownInputs(inputs));
    const sizes = splitAtAxis(inputs[0].shape, axis);
    channelShuffleKernel(inputs[0].data!, sizes, groups, outputs[0].data!);
  },
};
