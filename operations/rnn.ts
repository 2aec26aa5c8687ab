/**
 * RNN: one time step of a basic fully connected recurrent cell (HAL 1.0; float16 from
 * HAL 1.2). Inputs: input [batch, input_size], weights [num_units, input_size],
 * recurrent_weights [num_units, num_units], bias [num_units], hidden_state_in
 * [batch, num_units], activation. Outputs: hidden_state_out and output, both
 * [batch, num_units] and equal. Checks follow Android 10 `RNN::Prepare`.
 */
import { rnnStep } from "../kernels/recurrent_rnn.ts";
import {
  activationOf,
  checkInputRanks,
  checkKnownActivation,
  checkRnnCell,
  float32Of,
  rankedShape,
  recurrentStepCost,
  recurrentTensorType,
  recurrentVersion,
  withFloat32OutputTensors,
} from "./common/recurrent.ts";
import { checkArity, checkTypes, type OperationDefinition } from "./operation.ts";

const NAMES = ["input", "weights", "recurrent_weights", "bias", "hidden_state_in", "activation"];
const RANKS = [[0, 2], [1, 2], [2, 2], [3, 1], [4, 2]] as const;
const ACTIVATION = 5;

/** The RNN operation. */
export const rnn: OperationDefinition<"RNN"> = {
  type: "RNN",

  validate(signature) {
    checkArity(signature, [6], 2);
    const t = recurrentTensorType(signature);
    checkTypes(signature, [t, t, t, t, t, "INT32"], [t, t]);
    checkInputRanks(signature, NAMES, RANKS);
    return recurrentVersion(t);
  },

  prepare(inputs) {
    checkKnownActivation(inputs, ACTIVATION);
    const [batch, inputSize] = rankedShape(inputs, 0, { name: NAMES[0], rank: 2 });
    const numUnits = checkRnnCell(inputs, 1, { names: NAMES, batch, inputSize });
    return [[batch, numUnits], [batch, numUnits]];
  },

  /** The input and recurrent weight products of every batch row. */
  cost: (inputs, outputs) => recurrentStepCost(inputs, outputs, [1, 2]),

  execute(inputs, outputs) {
    const activation = activationOf(inputs, ACTIVATION);
    const [batch, inputSize] = inputs[0].shape;
    withFloat32OutputTensors(outputs, ([hiddenStateOut, output]) =>
      rnnStep({
        input: float32Of(inputs[0]),
        weights: float32Of(inputs[1]),
        recurrentWeights: float32Of(inputs[2]),
        bias: float32Of(inputs[3]),
        hiddenStateIn: float32Of(inputs[4]),
        activation,
        batch,
        inputSize,
        numUnits: inputs[1].shape[0],
        output,
        hiddenStateOut,
      }));
  },
};
