/**
 * UNIDIRECTIONAL_SEQUENCE_LSTM (HAL 1.2): the LSTM cell (with its CIFG, peephole,
 * projection and layer-normalization variants) run over a sequence. Inputs as LSTM's first
 * 23 (input [maxTime, batch, inputSize] time-major or [batch, maxTime, inputSize]), then
 * time_major (BOOL) and the four optional layer-normalization weights. Output: the output of
 * every step, in the input's layout. Checks follow Android 10
 * `UnidirectionalSequenceLSTM.cpp`.
 */
import { lstmSequence, transposeFirstTwoDims } from "../../kernels/recurrent_sequence.ts";
import type { OperandType } from "../../nnapi/types.ts";
import { elementCount } from "../../nnapi/tensor.ts";
import { floatScalarType } from "./common/operand_types.ts";
import {
  activationOf,
  checkInputRanks,
  checkKnownActivation,
  float32Of,
  rankedShape,
  recurrentTensorType,
  withFloat32OutputTensors,
} from "./common/recurrent.ts";
import { knownScalar } from "./common/scalars.ts";
import {
  cellStepMacs,
  checkLstmCell,
  type LstmCellOperands,
  lstmWeightsOf,
  optionalPositions,
  requiredRanks,
} from "./common/sequence_lstm.ts";
import {
  check,
  checkArity,
  checkTypes,
  type OperationDefinition,
  scalarOf,
  scalarValue,
} from "./operation.ts";

/** Input positions besides the cell's. */
const IN = { input: 0, activation: 20, cellClip: 21, projClip: 22, timeMajor: 23 } as const;

/** Positions of the cell's operands. */
const CELL: LstmCellOperands = {
  inputToInput: 1,
  inputToForget: 2,
  inputToCell: 3,
  inputToOutput: 4,
  recurrentToInput: 5,
  recurrentToForget: 6,
  recurrentToCell: 7,
  recurrentToOutput: 8,
  cellToInput: 9,
  cellToForget: 10,
  cellToOutput: 11,
  inputGateBias: 12,
  forgetGateBias: 13,
  cellBias: 14,
  outputGateBias: 15,
  projectionWeights: 16,
  projectionBias: 17,
  outputStateIn: 18,
  cellStateIn: 19,
  inputLayerNorm: 24,
  forgetLayerNorm: 25,
  cellLayerNorm: 26,
  outputLayerNorm: 27,
};

const NAMES = [
  "input",
  "input_to_input_weights",
  "input_to_forget_weights",
  "input_to_cell_weights",
  "input_to_output_weights",
  "recurrent_to_input_weights",
  "recurrent_to_forget_weights",
  "recurrent_to_cell_weights",
  "recurrent_to_output_weights",
  "cell_to_input_weights",
  "cell_to_forget_weights",
  "cell_to_output_weights",
  "input_gate_bias",
  "forget_gate_bias",
  "cell_bias",
  "output_gate_bias",
  "projection_weights",
  "projection_bias",
  "output_state_in",
  "cell_state_in",
  "activation",
  "cell_clip",
  "proj_clip",
  "time_major",
  "input_layer_norm_weights",
  "forget_layer_norm_weights",
  "cell_layer_norm_weights",
  "output_layer_norm_weights",
];

/** The UNIDIRECTIONAL_SEQUENCE_LSTM operation. */
export const unidirectionalSequenceLstm: OperationDefinition<"UNIDIRECTIONAL_SEQUENCE_LSTM"> = {
  type: "UNIDIRECTIONAL_SEQUENCE_LSTM",
  optionalInputs: optionalPositions(CELL),

  validate(signature) {
    checkArity(signature, [28], 1);
    const t = recurrentTensorType(signature);
    const scalarFloat = floatScalarType(t);
    const expected: OperandType[] = [
      ...Array<OperandType>(20).fill(t),
      "INT32",
      scalarFloat,
      scalarFloat,
      "BOOL",
      ...Array<OperandType>(4).fill(t),
    ];
    checkTypes(signature, expected, [t]);
    checkInputRanks(signature, NAMES, [[IN.input, 3], ...requiredRanks(CELL)]);
    return "V1_2";
  },

  prepare(inputs) {
    checkKnownActivation(inputs, IN.activation);
    for (const index of [IN.cellClip, IN.projClip]) {
      const clip = knownScalar(inputs[index]);
      if (clip !== undefined) {
        check(clip >= 0, `${NAMES[index]} (input ${index}) is negative: ${clip}`);
      }
    }
    const timeMajor = scalarValue(inputs[IN.timeMajor], "time_major (input 23)") !== 0;
    const input = rankedShape(inputs, IN.input, { name: "input", rank: 3 });
    const [maxTime, nBatch] = timeMajor ? [input[0], input[1]] : [input[1], input[0]];
    const { nOutput } = checkLstmCell(inputs, CELL, { names: NAMES, nBatch, nInput: input[2] });
    return [timeMajor ? [maxTime, nBatch, nOutput] : [nBatch, maxTime, nOutput]];
  },

  /** Every step runs the cell's weight products for each batch row. */
  cost(inputs, outputs) {
    const [d0, d1] = inputs[IN.input].shape;
    return d0 * d1 * cellStepMacs(inputs, CELL) + elementCount(outputs[0].shape);
  },

  execute(inputs, outputs) {
    const activation = activationOf(inputs, IN.activation);
    const timeMajor = scalarOf(inputs[IN.timeMajor]) !== 0;
    const [d0, d1, nInput] = inputs[IN.input].shape;
    const [maxTime, nBatch] = timeMajor ? [d0, d1] : [d1, d0];
    const nCell = inputs[CELL.inputToOutput].shape[0];
    const nOutput = inputs[CELL.recurrentToOutput].shape[1];
    let input = float32Of(inputs[IN.input]);
    if (!timeMajor) {
      const transposed = new Float32Array(input.length);
      transposeFirstTwoDims(input, [nBatch, maxTime, nInput], transposed);
      input = transposed;
    }
    withFloat32OutputTensors(outputs, ([output]) => {
      const timeMajorOutput = timeMajor ? output : new Float32Array(output.length);
      lstmSequence({
        weights: lstmWeightsOf(inputs, CELL),
        config: {
          nBatch,
          nInput,
          nCell,
          nOutput,
          activation,
          cellClip: scalarOf(inputs[IN.cellClip]),
          projClip: scalarOf(inputs[IN.projClip]),
        },
        input,
        auxInput: null,
        auxWeights: null,
        nAuxInput: 0,
        outputStateIn: float32Of(inputs[CELL.outputStateIn]),
        cellStateIn: float32Of(inputs[CELL.cellStateIn]),
        maxTime,
        reverse: false,
        output: timeMajorOutput,
        outputStride: nOutput,
        outputOffset: 0,
      });
      if (!timeMajor) transposeFirstTwoDims(timeMajorOutput, [maxTime, nBatch, nOutput], output);
    });
  },
};
