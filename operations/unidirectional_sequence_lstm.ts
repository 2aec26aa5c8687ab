/**
 * UNIDIRECTIONAL_SEQUENCE_LSTM: the LSTM cell (with its CIFG, peephole, projection and
 * layer-normalization variants) run over a sequence. Inputs as LSTM's first 23 (input
 * [maxTime, batch, inputSize] time-major or [batch, maxTime, inputSize]), then time_major
 * (BOOL) and the four optional layer-normalization weights. Outputs: the output of every
 * step, in the input's layout, optionally followed by the output state [batch, outputSize]
 * and the cell state [batch, numUnits] after the last step. Forms: TENSOR_FLOAT32 and
 * TENSOR_FLOAT16 with one output (V1_2), with the two state outputs (V1_3). Checks follow
 * Android `UnidirectionalSequenceLSTM.cpp`.
 */
import { lstmSequence } from "../kernels/recurrent_sequence.ts";
import type { OperandType } from "../nnapi/types.ts";
import { elementCount } from "../nnapi/tensor.ts";
import { floatScalarType } from "./common/operand_types.ts";
import {
  activationOf,
  checkInputRanks,
  checkKnownActivation,
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
  checkRank,
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

/** What outputs 1 and 2 (HAL 1.3) hold. */
const STATE_NAMES = ["output state", "cell state"];

/** The UNIDIRECTIONAL_SEQUENCE_LSTM operation. */
export const unidirectionalSequenceLstm: OperationDefinition<"UNIDIRECTIONAL_SEQUENCE_LSTM"> = {
  type: "UNIDIRECTIONAL_SEQUENCE_LSTM",
  optionalInputs: optionalPositions(CELL),

  validate(signature) {
    checkArity(signature, [28], [1, 3]);
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
    const outputs = signature.outputs.length;
    checkTypes(signature, expected, Array<OperandType>(outputs).fill(t));
    checkInputRanks(signature, NAMES, [[IN.input, 3], ...requiredRanks(CELL)]);
    signature.outputs.slice(1).forEach((state, k) =>
      checkRank(state, `output ${k + 1} (final ${STATE_NAMES[k]})`, (r) => r === 2, "2")
    );
    return outputs === 3 ? "V1_3" : "V1_2";
  },

  prepare(inputs, outputs) {
    checkKnownActivation(inputs, IN.activation);
    const withStates = checkStateOutputs(outputs.length, {
      sequences: 1,
      states: 2,
      why: "(outputs 1 and 2 are the final output and cell states)",
    });
    checkKnownClips(inputs, [IN.cellClip, IN.projClip], NAMES);
    const timeMajor = scalarValue(inputs[IN.timeMajor], "time_major (input 23)") !== 0;
    const input = rankedShape(inputs, IN.input, { name: "input", rank: 3 });
    const layout = sequenceLayout(input, timeMajor);
    const { nCell, nOutput } = checkLstmCell(inputs, CELL, {
      names: NAMES,
      nBatch: layout.batch,
      nInput: input[2],
    });
    const sequence = sequenceShape(layout, nOutput);
    return withStates ? [sequence, [layout.batch, nOutput], [layout.batch, nCell]] : [sequence];
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
    const units = [nOutput];
    withTimeMajorOutputs(
      outputs,
      { layout, units },
      ([output, outputStateOut, cellStateOut]) =>
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
          outputStateOut,
          cellStateOut,
        }),
    );
  },
};
