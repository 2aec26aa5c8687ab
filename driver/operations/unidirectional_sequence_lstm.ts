/**
 * UNIDIRECTIONAL_SEQUENCE_LSTM (HAL 1.2): the LSTM cell (with its CIFG, peephole,
 * projection and layer-normalization variants) run over a sequence. Inputs as LSTM's first
 * 23 (input [maxTime, batch, inputSize] time-major or [batch, maxTime, inputSize]), then
 * time_major (BOOL) and the four optional layer-normalization weights. Output: the output of
 * every step, in the input's layout. Checks follow Android 10
 * `UnidirectionalSequenceLSTM.cpp`.
 */
import { lstmSequence } from "../../kernels/recurrent_sequence.ts";
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
  sequenceLayout,
  sequenceShape,
  toTimeMajor,
  withTimeMajorOutputs,
} from "./common/recurrent.ts";
import {
  CELL_NAMES,
  cellAt,
  cellSizesOf,
  cellStepMacs,
  checkKnownClips,
  checkLstmCell,
  LAYER_NORM_NAMES,
  lstmWeightsOf,
  optionalPositions,
  requiredRanks,
} from "./common/sequence_lstm.ts";
import {
  checkArity,
  checkTypes,
  type OperationDefinition,
  scalarOf,
  scalarValue,
} from "./operation.ts";

/** Input positions besides the cell's. */
const IN = { input: 0, activation: 20, cellClip: 21, projClip: 22, timeMajor: 23 } as const;

/** Positions of the cell's operands. */
const CELL = cellAt(1, 18, 24);

const NAMES = [
  "input",
  ...CELL_NAMES,
  "output_state_in",
  "cell_state_in",
  "activation",
  "cell_clip",
  "proj_clip",
  "time_major",
  ...LAYER_NORM_NAMES,
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
    checkKnownClips(inputs, [IN.cellClip, IN.projClip], NAMES);
    const timeMajor = scalarValue(inputs[IN.timeMajor], "time_major (input 23)") !== 0;
    const input = rankedShape(inputs, IN.input, { name: "input", rank: 3 });
    const layout = sequenceLayout(input, timeMajor);
    const { nOutput } = checkLstmCell(inputs, CELL, {
      names: NAMES,
      nBatch: layout.batch,
      nInput: input[2],
    });
    return [sequenceShape(layout, nOutput)];
  },

  /** Every step runs the cell's weight products for each batch row. */
  cost(inputs, outputs) {
    const [d0, d1] = inputs[IN.input].shape;
    return d0 * d1 * cellStepMacs(inputs, CELL) + elementCount(outputs[0].shape);
  },

  execute(inputs, outputs) {
    const activation = activationOf(inputs, IN.activation);
    const layout = sequenceLayout(inputs[IN.input].shape, scalarOf(inputs[IN.timeMajor]) !== 0);
    const nInput = inputs[IN.input].shape[2];
    const { nCell, nOutput } = cellSizesOf(inputs, CELL);
    const input = toTimeMajor(float32Of(inputs[IN.input]), layout, nInput);
    withTimeMajorOutputs(outputs, { layout, units: [nOutput] }, ([output]) =>
      lstmSequence({
        weights: lstmWeightsOf(inputs, CELL),
        config: {
          nBatch: layout.batch,
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
        maxTime: layout.maxTime,
        reverse: false,
        output,
        outputStride: nOutput,
        outputOffset: 0,
      }));
  },
};
