/**
 * RNN: one time step of a basic fully connected recurrent cell (HAL 1.0; float16 from
 * HAL 1.2). Inputs: input [batch, input_size], weights [num_units, input_size],
 * recurrent_weights [num_units, num_units], bias [num_units], hidden_state_in
 * [batch, num_units], activation. Outputs: hidden_state_out and output, both
 * [batch, num_units] and equal. Checks follow Android 10 `RNN::Prepare`.
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
} from "./operation.ts";
import {
  type FloatData,
  isSupportedActivation,
  toFloat32,
  withFloat32Outputs,
} from "../../kernels/recurrent_common.ts";
import { rnnStep } from "../../kernels/recurrent_rnn.ts";

const NAMES = ["input", "weights", "recurrent_weights", "bias", "hidden_state_in", "activation"];
const RANKS = [2, 2, 2, 1, 2];

function dims(inputs: readonly PrepareInput[], index: number): readonly number[] {
  const shape = inputs[index].shape;
  check(
    shape.length === RANKS[index],
    `${NAMES[index]} (input ${index}) has rank ${shape.length}, expected ${RANKS[index]}`,
  );
  return shape;
}

/** The RNN operation. */
export const rnn: OperationDefinition = {
  type: "RNN",

  validate(signature) {
    checkArity(signature, [6], 2);
    const inputType = signature.inputs[0].type;
    check(
      inputType === "TENSOR_FLOAT32" || inputType === "TENSOR_FLOAT16",
      `input 0 (operand ${signature.inputs[0].index}) has unsupported type ${inputType}`,
    );
    checkTypes(
      signature,
      [inputType, inputType, inputType, inputType, inputType, "INT32"],
      [inputType, inputType] as OperandType[],
    );
    RANKS.forEach((rank, i) => {
      checkRank(signature.inputs[i], `${NAMES[i]} (input ${i})`, (r) => r === rank, `${rank}`);
    });
    return inputType === "TENSOR_FLOAT16" ? "V1_2" : "V1_0";
  },

  prepare(inputs) {
    const activation = inputs[5].value;
    if (activation) {
      const code = Number(activation[0]);
      check(isSupportedActivation(code), `unsupported activation ${code} (input 5)`);
    }
    const [batch, inputSize] = dims(inputs, 0);
    const [numUnits, weightsInputSize] = dims(inputs, 1);
    const recurrent = dims(inputs, 2);
    const [biasSize] = dims(inputs, 3);
    const hidden = dims(inputs, 4);
    check(
      inputSize === weightsInputSize,
      `input size ${inputSize} differs from the weights' input size ${weightsInputSize}`,
    );
    check(biasSize === numUnits, `bias size ${biasSize} differs from num_units ${numUnits}`);
    check(
      recurrent[0] === numUnits && recurrent[1] === numUnits,
      `recurrent_weights are [${recurrent.join(",")}], expected [${numUnits},${numUnits}]`,
    );
    check(
      hidden[0] === batch && hidden[1] === numUnits,
      `hidden_state_in is [${hidden.join(",")}], expected [${batch},${numUnits}]`,
    );
    return [[batch, numUnits], [batch, numUnits]];
  },

  execute(inputs, outputs) {
    const activation = scalarOf(inputs[5]);
    if (!isSupportedActivation(activation)) {
      throw new OperationError(`unsupported activation ${activation} (input 5)`);
    }
    const f32 = (i: number) => toFloat32(inputs[i].data as FloatData);
    const [batch, inputSize] = inputs[0].shape;
    withFloat32Outputs(
      outputs.map((o) => o.data as FloatData),
      ([hiddenStateOut, output]) =>
        rnnStep({
          input: f32(0),
          weights: f32(1),
          recurrentWeights: f32(2),
          bias: f32(3),
          hiddenStateIn: f32(4),
          activation,
          batch,
          inputSize,
          numUnits: inputs[1].shape[0],
          output,
          hiddenStateOut,
        }),
    );
  },
};
