/**
 * SVDF: one time step of a singular value decomposition filter layer (HAL 1.0; float16 from
 * HAL 1.2). Inputs: input [batch, input_size], weights_feature [num_filters, input_size],
 * weights_time [num_filters, memory_size], bias [num_units] (optional), state_in
 * [batch, memory_size * num_filters], rank, activation; num_filters = num_units * rank.
 * Outputs: state_out [batch, memory_size * num_filters], output [batch, num_units].
 * Checks follow Android 10 `SVDF::Prepare`.
 */
import type { OperandType } from "../types.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  type OperationDefinition,
  OperationError,
  type PrepareInput,
  scalarOf,
  scalarValue,
  ValueNotYetKnown,
} from "./operation.ts";
import {
  type FloatData,
  isSupportedActivation,
  toFloat32,
  withFloat32Outputs,
} from "../../kernels/recurrent_common.ts";
import { svdfStep } from "../../kernels/recurrent_svdf.ts";

const NAMES = ["input", "weights_feature", "weights_time", "bias", "state_in"];
const RANKS = [2, 2, 2, 1, 2];
const BIAS = 3;

function dims(inputs: readonly PrepareInput[], index: number): readonly number[] {
  const shape = inputs[index].shape;
  check(
    shape.length === RANKS[index],
    `${NAMES[index]} (input ${index}) has rank ${shape.length}, expected ${RANKS[index]}`,
  );
  return shape;
}

/** The SVDF operation. */
export const svdf: OperationDefinition = {
  type: "SVDF",
  optionalInputs: [3],

  validate(signature) {
    checkArity(signature, [7], 2);
    const inputType = signature.inputs[0].type;
    check(
      inputType === "TENSOR_FLOAT32" || inputType === "TENSOR_FLOAT16",
      `input 0 (operand ${signature.inputs[0].index}) has unsupported type ${inputType}`,
    );
    checkTypes(
      signature,
      [inputType, inputType, inputType, inputType, inputType, "INT32", "INT32"],
      [inputType, inputType] as OperandType[],
    );
    RANKS.forEach((rank, i) => {
      if (i === BIAS) return; // an omitted bias may be declared with any shape
      checkRank(signature.inputs[i], `${NAMES[i]} (input ${i})`, (r) => r === rank, `${rank}`);
    });
    return inputType === "TENSOR_FLOAT16" ? "V1_2" : "V1_0";
  },

  prepare(inputs) {
    const activation = inputs[6].value;
    if (activation) {
      const code = Number(activation[0]);
      check(isSupportedActivation(code), `unsupported activation ${code} (input 6)`);
    }
    const rank = scalarValue(inputs[5], "rank (input 5)");
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
    const bias = inputs[BIAS];
    if (bias.value === undefined) throw new ValueNotYetKnown();
    if (bias.value !== null && bias.value.length > 0) {
      const [biasSize] = dims(inputs, BIAS);
      check(biasSize === numUnits, `bias size ${biasSize} differs from num_units ${numUnits}`);
    }
    return [[batch, memorySize * numFilters], [batch, numUnits]];
  },

  execute(inputs, outputs) {
    const activation = scalarOf(inputs[6]);
    if (!isSupportedActivation(activation)) {
      throw new OperationError(`unsupported activation ${activation} (input 6)`);
    }
    const f32 = (i: number) => toFloat32(inputs[i].data as FloatData);
    const biasData = inputs[BIAS].data as FloatData | null;
    const [batch, inputSize] = inputs[0].shape;
    const [numFilters] = inputs[1].shape;
    withFloat32Outputs(
      outputs.map((o) => o.data as FloatData),
      ([stateOut, output]) =>
        svdfStep({
          input: f32(0),
          weightsFeature: f32(1),
          weightsTime: f32(2),
          bias: biasData === null || biasData.length === 0 ? null : toFloat32(biasData),
          stateIn: f32(4),
          rank: scalarOf(inputs[5]),
          activation,
          batch,
          inputSize,
          numFilters,
          memorySize: inputs[2].shape[1],
          stateOut,
          output,
        }),
    );
  },
};
