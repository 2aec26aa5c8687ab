/**
 * LSTM: one time step of a long short-term memory cell (HAL 1.0, 23 inputs; HAL 1.2 adds
 * float16 and the 27-input form with layer normalization). Validation and shape inference
 * follow Android 10 `LSTMCell::Prepare` / `CheckInputTensorDimensions`; optional operands are
 * absent when omitted (no value) or empty.
 */
import { lstmStep } from "../kernels/recurrent_lstm.ts";
import type { OperandType } from "../nnapi/types.ts";
import { floatScalarType } from "./common/operand_types.ts";
import {
  activationOf,
  checkInputRanks,
  checkKnownActivation,
  float32Of,
  rankedShape,
  recurrentStepCost,
  recurrentTensorType,
  recurrentVersion,
  withFloat32OutputTensors,
} from "./common/recurrent.ts";
import {
  CELL_NAMES,
  cellAt,
  cellSizesOf,
  cellWeightPositions,
  checkKnownClips,
  checkLstmCell,
  LAYER_NORM_NAMES,
  lstmWeightsOf,
  optionalPositions,
  requiredRanks,
} from "./common/sequence_lstm.ts";
import { checkArity, checkTypes, type OperationDefinition, scalarOf } from "./operation.ts";

/** Input positions besides the cell's. */
const IN = { input: 0, activation: 20, cellClip: 21, projClip: 22 } as const;

/** Positions of the cell's operands; the layer-normalization weights only in the 27-input form. */
const CELL = cellAt(1, 18, 23);

const NAMES = [
  "input",
  ...CELL_NAMES,
  "output_state_in",
  "cell_state_in",
  "activation",
  "cell_clip",
  "proj_clip",
  ...LAYER_NORM_NAMES,
];

/** The LSTM operation. */
export const lstm: OperationDefinition<"LSTM"> = {
  type: "LSTM",
  optionalInputs: optionalPositions(CELL),

  validate(signature) {
    checkArity(signature, [23, 27], 4);
    const inputType = recurrentTensorType(signature);
    const scalarFloat = floatScalarType(inputType);
    const expected: OperandType[] = [
      ...Array<OperandType>(20).fill(inputType),
      "INT32",
      scalarFloat,
      scalarFloat,
    ];
    if (signature.inputs.length === 27) expected.push(...Array<OperandType>(4).fill(inputType));
    checkTypes(signature, expected, Array<OperandType>(4).fill(inputType));
    checkInputRanks(signature, NAMES, [[IN.input, 2], ...requiredRanks(CELL)]);
    return signature.inputs.length === 27 ? "V1_2" : recurrentVersion(inputType);
  },

  prepare(inputs) {
    checkKnownActivation(inputs, IN.activation);
    checkKnownClips(inputs, [IN.cellClip, IN.projClip], NAMES);
    const [nBatch, nInput] = rankedShape(inputs, IN.input, { name: "input", rank: 2 });
    const { nCell, nOutput, useCifg } = checkLstmCell(inputs, CELL, {
      names: NAMES,
      nBatch,
      nInput,
    });
    return [
      [nBatch, nCell * (useCifg ? 3 : 4)],
      [nBatch, nOutput],
      [nBatch, nCell],
      [nBatch, nOutput],
    ];
  },

  /** The gates' input and recurrent weight products and the projection, per batch row. */
  cost: (inputs, outputs) => recurrentStepCost(inputs, outputs, cellWeightPositions(CELL)),

  execute(inputs, outputs) {
    const activation = activationOf(inputs, IN.activation);
    const weights = lstmWeightsOf(inputs, CELL);
    const [nBatch, nInput] = inputs[IN.input].shape;
    const config = {
      nBatch,
      nInput,
      ...cellSizesOf(inputs, CELL),
      activation,
      cellClip: scalarOf(inputs[IN.cellClip]),
      projClip: scalarOf(inputs[IN.projClip]),
    };
    const stepInputs = {
      input: float32Of(inputs[IN.input]),
      outputStateIn: float32Of(inputs[CELL.outputStateIn]),
      cellStateIn: float32Of(inputs[CELL.cellStateIn]),
    };
    withFloat32OutputTensors(
      outputs,
      ([scratch, outputStateOut, cellStateOut, output]) =>
        lstmStep(weights, config, stepInputs, { scratch, outputStateOut, cellStateOut, output }),
    );
  },
};
