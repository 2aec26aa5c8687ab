/**
 * UNIDIRECTIONAL_SEQUENCE_RNN (HAL 1.2): the basic RNN cell run over a sequence. Inputs:
 * input [maxTime, batch, inputSize] (time-major) or [batch, maxTime, inputSize], weights
 * [numUnits, inputSize], recurrent_weights [numUnits, numUnits], bias [numUnits],
 * hidden_state [batch, numUnits], activation, time_major (INT32). Output: the hidden state
 * of every step, in the input's layout. Checks follow Android 10
 * `UnidirectionalSequenceRNN.cpp`.
 */
import { rnnSequence, transposeFirstTwoDims } from "../../kernels/recurrent_sequence.ts";
import { elementCount } from "../../nnapi/tensor.ts";
import {
  activationOf,
  checkInputRanks,
  checkKnownActivation,
  float32Of,
  rankedShape,
  recurrentTensorType,
  withFloat32OutputTensors,
} from "./common/recurrent.ts";
import {
  check,
  checkArity,
  checkTypes,
  type OperationDefinition,
  type PrepareInput,
  scalarOf,
  scalarValue,
} from "./operation.ts";

const IN = {
  input: 0,
  weights: 1,
  recurrentWeights: 2,
  bias: 3,
  hiddenState: 4,
  activation: 5,
  timeMajor: 6,
} as const;

const NAMES = [
  "input",
  "weights",
  "recurrent_weights",
  "bias",
  "hidden_state",
  "activation",
  "time_major",
];
const RANKS = [[0, 3], [1, 2], [2, 2], [3, 1], [4, 2]] as const;

function dims(inputs: readonly PrepareInput[], index: number): readonly number[] {
  return rankedShape(inputs, index, { name: NAMES[index], rank: RANKS[index][1] });
}

/** The UNIDIRECTIONAL_SEQUENCE_RNN operation. */
export const unidirectionalSequenceRnn: OperationDefinition<"UNIDIRECTIONAL_SEQUENCE_RNN"> = {
  type: "UNIDIRECTIONAL_SEQUENCE_RNN",

  validate(signature) {
    checkArity(signature, [7], 1);
    const t = recurrentTensorType(signature);
    checkTypes(signature, [t, t, t, t, t, "INT32", "INT32"], [t]);
    checkInputRanks(signature, NAMES, RANKS);
    return "V1_2";
  },

  prepare(inputs) {
    checkKnownActivation(inputs, IN.activation);
    const timeMajor = scalarValue(inputs[IN.timeMajor], "time_major (input 6)") !== 0;
    const input = dims(inputs, IN.input);
    const [numUnits, weightsInputSize] = dims(inputs, IN.weights);
    const recurrent = dims(inputs, IN.recurrentWeights);
    const [biasSize] = dims(inputs, IN.bias);
    const hidden = dims(inputs, IN.hiddenState);
    const [maxTime, batch] = timeMajor ? [input[0], input[1]] : [input[1], input[0]];
    check(
      input[2] === weightsInputSize,
      `input size ${input[2]} differs from the weights' input size ${weightsInputSize}`,
    );
    check(biasSize === numUnits, `bias size ${biasSize} differs from num_units ${numUnits}`);
    check(
      recurrent[0] === numUnits && recurrent[1] === numUnits,
      `recurrent_weights are [${recurrent.join(",")}], expected [${numUnits},${numUnits}]`,
    );
    check(
      hidden[0] === batch && hidden[1] === numUnits,
      `hidden_state is [${hidden.join(",")}], expected [${batch},${numUnits}]`,
    );
    return [timeMajor ? [maxTime, batch, numUnits] : [batch, maxTime, numUnits]];
  },

  /** Every step multiplies each batch row by the input and recurrent weights. */
  cost(inputs, outputs) {
    const [d0, d1] = inputs[IN.input].shape;
    const macs = elementCount(inputs[IN.weights].shape) +
      elementCount(inputs[IN.recurrentWeights].shape);
    return d0 * d1 * macs + elementCount(outputs[0].shape);
  },

  execute(inputs, outputs) {
    const activation = activationOf(inputs, IN.activation);
    const timeMajor = scalarOf(inputs[IN.timeMajor]) !== 0;
    const [d0, d1, inputSize] = inputs[IN.input].shape;
    const [maxTime, batch] = timeMajor ? [d0, d1] : [d1, d0];
    const numUnits = inputs[IN.weights].shape[0];
    let input = float32Of(inputs[IN.input]);
    if (!timeMajor) {
      const transposed = new Float32Array(input.length);
      transposeFirstTwoDims(input, [batch, maxTime, inputSize], transposed);
      input = transposed;
    }
    withFloat32OutputTensors(outputs, ([output]) => {
      const timeMajorOutput = timeMajor ? output : new Float32Array(output.length);
      rnnSequence({
        input,
        auxInput: null,
        weights: float32Of(inputs[IN.weights]),
        auxWeights: null,
        recurrentWeights: float32Of(inputs[IN.recurrentWeights]),
        bias: float32Of(inputs[IN.bias]),
        hiddenStateIn: float32Of(inputs[IN.hiddenState]),
        activation,
        maxTime,
        batch,
        inputSize,
        auxInputSize: 0,
        numUnits,
        reverse: false,
        output: timeMajorOutput,
        outputStride: numUnits,
        outputOffset: 0,
      });
      if (!timeMajor) transposeFirstTwoDims(timeMajorOutput, [maxTime, batch, numUnits], output);
    });
  },
};
