/**
 * SVDF: one time step of a singular value decomposition filter layer (HAL 1.0; float16 from
 * HAL 1.2). Inputs: input [batch, input_size], weights_feature [num_filters, input_size],
 * weights_time [num_filters, memory_size], bias [num_units] (optional), state_in
 * [batch, memory_size * num_filters], rank, activation; num_filters = num_units * rank.
 * Outputs: state_out [batch, memory_size * num_filters], output [batch, num_units].
 * Checks follow Android 10 `SVDF::Prepare`.
 */
import { svdfStep } from "../kernels/recurrent_svdf.ts";
import {
  activationOf,
  checkInputRanks,
  checkKnownActivation,
  float32Of,
  isPresent,
  optionalFloat32Of,
  rankedShape,
  recurrentStepCost,
  recurrentTensorType,
  recurrentVersion,
  withFloat32OutputTensors,
} from "./common/recurrent.ts";
import type { PrepareInput } from "./operation.ts";
import {
  check,
  checkArity,
  checkTypes,
  type OperationDefinition,
  scalarOf,
  scalarValue,
} from "./operation.ts";

const NAMES = ["input", "weights_feature", "weights_time", "bias", "state_in"];
const BIAS = 3;
const RANK = 5;
const ACTIVATION = 6;
/** Ranks of the tensor inputs; an omitted bias may be declared with any shape. */
const RANKS = [[0, 2], [1, 2], [2, 2], [4, 2]] as const;

function dims(inputs: readonly PrepareInput[], index: number): readonly number[] {
  return rankedShape(inputs, index, { name: NAMES[index], rank: index === BIAS ? 1 : 2 });
}

/** The SVDF operation. */
export const svdf: OperationDefinition<"SVDF"> = {
  type: "SVDF",
  optionalInputs: [BIAS],

  validate(signature) {
    checkArity(signature, [7], 2);
    const t = recurrentTensorType(signature);
    checkTypes(signature, [t, t, t, t, t, "INT32", "INT32"], [t, t]);
    checkInputRanks(signature, NAMES, RANKS);
    return recurrentVersion(t);
  },

  prepare(inputs) {
    checkKnownActivation(inputs, ACTIVATION);
    const rank = scalarValue(inputs[RANK], "rank (input 5)");
    check(rank >= 1, `rank (input 5) must be positive, got ${rank}`);
    const [batch, inputSize] = dims(inputs, 0);
    const [numFilters, featureInputSize] = dims(inputs, 1);
    const [timeFilters, memorySize] = dims(inputs, 2);
    const state = dims(inputs, 4);
    check(
      numFilters % rank === 0,
      `num_filters ${numFilters} is not a multiple of rank ${rank}`,
    );
    const numUnits = numFilters / rank;
    check(
      inputSize === featureInputSize,
      `input size ${inputSize} differs from the weights_feature input size ${featureInputSize}`,
    );
    check(
      timeFilters === numFilters,
      `weights_time has ${timeFilters} filters, weights_feature ${numFilters}`,
    );
    check(memorySize >= 1, "weights_time has an empty memory");
    check(
      state[0] === batch && state[1] === memorySize * numFilters,
      `state_in is [${state.join(",")}], expected [${batch},${memorySize * numFilters}]`,
    );
    if (isPresent(inputs[BIAS])) {
      const [biasSize] = dims(inputs, BIAS);
      check(biasSize === numUnits, `bias size ${biasSize} differs from num_units ${numUnits}`);
    }
    return [[batch, memorySize * numFilters], [batch, numUnits]];
  },

  /** The feature and time weight products of every batch row. */
  cost: (inputs, outputs) => recurrentStepCost(inputs, outputs, [1, 2]),

  execute(inputs, outputs) {
    const activation = activationOf(inputs, ACTIVATION);
    const [batch, inputSize] = inputs[0].shape;
    const [numFilters] = inputs[1].shape;
    withFloat32OutputTensors(outputs, ([stateOut, output]) =>
      svdfStep({
        input: float32Of(inputs[0]),
        weightsFeature: float32Of(inputs[1]),
        weightsTime: float32Of(inputs[2]),
        bias: optionalFloat32Of(inputs[BIAS]),
        stateIn: float32Of(inputs[4]),
        rank: scalarOf(inputs[RANK]),
        activation,
        batch,
        inputSize,
        numFilters,
        memorySize: inputs[2].shape[1],
        stateOut,
        output,
      }));
  },
};
