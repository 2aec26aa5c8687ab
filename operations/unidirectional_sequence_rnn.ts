/**
 * UNIDIRECTIONAL_SEQUENCE_RNN: the basic RNN cell run over a sequence. Inputs: input
 * [maxTime, batch, inputSize] (time-major) or [batch, maxTime, inputSize], weights
 * [numUnits, inputSize], recurrent_weights [numUnits, numUnits], bias [numUnits],
 * hidden_state [batch, numUnits], activation, time_major (INT32). Outputs: the hidden state
 * of every step, in the input's layout, and optionally the hidden state after the last step
 * [batch, numUnits]. Forms: TENSOR_FLOAT32 and TENSOR_FLOAT16 with one output (V1_2), with
 * the final state output (V1_3). Checks follow Android `UnidirectionalSequenceRNN.cpp`.
 */
import { rnnSequence } from "../kernels/recurrent_sequence.ts";
import { elementCount } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import {
  activationOf,
  checkInputRanks,
  checkKnownActivation,
  checkRnnCell,
  checkStateOutputs,
  float32Of,
  rankedShape,
  recurrentTensorType,
  sequenceLayout,
  sequenceShape,
  toTimeMajor,
  withTimeMajorOutputs,
} from "./common/recurrent.ts";
import {
  checkArity,
  checkRank,
  checkTypes,
  type OperationDefinition,
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

const OUT = { output: 0, hiddenState: 1 } as const;

/** The UNIDIRECTIONAL_SEQUENCE_RNN operation. */
export const unidirectionalSequenceRnn: OperationDefinition<"UNIDIRECTIONAL_SEQUENCE_RNN"> = {
  type: "UNIDIRECTIONAL_SEQUENCE_RNN",

  validate(signature) {
    checkArity(signature, [7], [1, 2]);
    const t = recurrentTensorType(signature);
    const outputs = signature.outputs.length;
    checkTypes(signature, [t, t, t, t, t, "INT32", "INT32"], Array<OperandType>(outputs).fill(t));
    checkInputRanks(signature, NAMES, RANKS);
    const state = signature.outputs[OUT.hiddenState];
    if (state) checkRank(state, "output 1 (final hidden state)", (r) => r === 2, "2");
    return outputs === 2 ? "V1_3" : "V1_2";
  },

  prepare(inputs, outputs) {
    checkKnownActivation(inputs, IN.activation);
    const withState = checkStateOutputs(outputs.length, {
      sequences: 1,
      states: 1,
      why: "(output 1 is the final hidden state)",
    });
    const timeMajor = scalarValue(inputs[IN.timeMajor], "time_major (input 6)") !== 0;
    const input = rankedShape(inputs, IN.input, { name: NAMES[IN.input], rank: 3 });
    const layout = sequenceLayout(input, timeMajor);
    const numUnits = checkRnnCell(inputs, IN.weights, {
      names: NAMES,
      batch: layout.batch,
      inputSize: input[2],
    });
    const sequence = sequenceShape(layout, numUnits);
    return withState ? [sequence, [layout.batch, numUnits]] : [sequence];
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
    const layout = sequenceLayout(inputs[IN.input].shape, scalarOf(inputs[IN.timeMajor]) !== 0);
    const inputSize = inputs[IN.input].shape[2];
    const numUnits = inputs[IN.weights].shape[0];
    const input = toTimeMajor(float32Of(inputs[IN.input]), layout, inputSize);
    withTimeMajorOutputs(
      outputs,
      { layout, units: [numUnits] },
      ([output, hiddenStateOut]) =>
        rnnSequence({
          input,
          auxInput: null,
          weights: float32Of(inputs[IN.weights]),
          auxWeights: null,
          recurrentWeights: float32Of(inputs[IN.recurrentWeights]),
          bias: float32Of(inputs[IN.bias]),
          hiddenStateIn: float32Of(inputs[IN.hiddenState]),
          activation,
          maxTime: layout.maxTime,
          batch: layout.batch,
          inputSize,
          auxInputSize: 0,
          numUnits,
          reverse: false,
          output,
          outputStride: numUnits,
          outputOffset: 0,
          hiddenStateOut,
        }),
    );
  },
};
