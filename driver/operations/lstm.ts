/**
 * LSTM: one time step of a long short-term memory cell (HAL 1.0, 23 inputs; HAL 1.2 adds
 * float16 and the 27-input form with layer normalization). Validation and shape inference
 * follow Android 10 `LSTMCell::Prepare` / `CheckInputTensorDimensions`; optional operands are
 * absent when omitted (no value) or empty.
 */
import { lstmStep, type LstmWeights } from "../../kernels/recurrent_lstm.ts";
import type { OperandType } from "../../nnapi/types.ts";
import { floatScalarType } from "./common/operand_types.ts";
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
import { knownScalar } from "./common/scalars.ts";
import {
  check,
  checkArity,
  checkTypes,
  type OperationDefinition,
  type PrepareInput,
  scalarOf,
} from "./operation.ts";

/** Input positions. */
const IN = {
  input: 0,
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
  activation: 20,
  cellClip: 21,
  projClip: 22,
  inputLayerNorm: 23,
  forgetLayerNorm: 24,
  cellLayerNorm: 25,
  outputLayerNorm: 26,
} as const;

/** Inputs that may be omitted. */
const OPTIONAL: readonly number[] = [
  IN.inputToInput,
  IN.recurrentToInput,
  IN.cellToInput,
  IN.cellToForget,
  IN.cellToOutput,
  IN.inputGateBias,
  IN.projectionWeights,
  IN.projectionBias,
  IN.inputLayerNorm,
  IN.forgetLayerNorm,
  IN.cellLayerNorm,
  IN.outputLayerNorm,
];

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
  "input_layer_norm_weights",
  "forget_layer_norm_weights",
  "cell_layer_norm_weights",
  "output_layer_norm_weights",
];

/** Ranks of the non-optional tensor inputs. */
const REQUIRED_RANKS: readonly (readonly [number, number])[] = [
  [IN.input, 2],
  [IN.inputToForget, 2],
  [IN.inputToCell, 2],
  [IN.inputToOutput, 2],
  [IN.recurrentToForget, 2],
  [IN.recurrentToCell, 2],
  [IN.recurrentToOutput, 2],
  [IN.forgetGateBias, 1],
  [IN.cellBias, 1],
  [IN.outputGateBias, 1],
  [IN.outputStateIn, 2],
  [IN.cellStateIn, 2],
];

/** Checks a present input's shape against the expected dims. */
function checkShape(inputs: readonly PrepareInput[], index: number, expected: number[]): void {
  const shape = inputs[index].shape;
  check(
    shape.length === expected.length && shape.every((d, i) => d === expected[i]),
    `${NAMES[index]} (input ${index}) has shape [${shape.join(",")}], expected [${
      expected.join(",")
    }]`,
  );
}

/** The LSTM operation. */
export const lstm: OperationDefinition<"LSTM"> = {
  type: "LSTM",
  optionalInputs: OPTIONAL,

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
    checkInputRanks(signature, NAMES, REQUIRED_RANKS);
    return signature.inputs.length === 27 ? "V1_2" : recurrentVersion(inputType);
  },

  prepare(inputs) {
    checkKnownActivation(inputs, IN.activation);
    const cellClip = knownScalar(inputs[IN.cellClip]);
    if (cellClip !== undefined) {
      check(cellClip >= 0, `cell_clip (input 21) is negative: ${cellClip}`);
    }
    const projClip = knownScalar(inputs[IN.projClip]);
    if (projClip !== undefined) {
      check(projClip >= 0, `proj_clip (input 22) is negative: ${projClip}`);
    }

    const has = new Map<number, boolean>();
    for (const index of OPTIONAL) has.set(index, index < inputs.length && isPresent(inputs[index]));
    const is = (index: number) => has.get(index)!;

    const matrix = (index: number) => rankedShape(inputs, index, { name: NAMES[index], rank: 2 });
    const [nBatch, nInput] = matrix(IN.input);
    const nCell = matrix(IN.inputToOutput)[0];
    const nOutput = matrix(IN.recurrentToOutput)[1];

    const cellByInput = [nCell, nInput];
    const cellByOutput = [nCell, nOutput];
    const cell = [nCell];
    checkShape(inputs, IN.inputToForget, cellByInput);
    checkShape(inputs, IN.inputToCell, cellByInput);
    checkShape(inputs, IN.inputToOutput, cellByInput);
    checkShape(inputs, IN.recurrentToForget, cellByOutput);
    checkShape(inputs, IN.recurrentToCell, cellByOutput);
    checkShape(inputs, IN.recurrentToOutput, cellByOutput);
    checkShape(inputs, IN.forgetGateBias, cell);
    checkShape(inputs, IN.cellBias, cell);
    checkShape(inputs, IN.outputGateBias, cell);
    checkShape(inputs, IN.outputStateIn, [nBatch, nOutput]);
    checkShape(inputs, IN.cellStateIn, [nBatch, nCell]);

    const useCifg = !is(IN.inputToInput);
    check(
      is(IN.recurrentToInput) === !useCifg,
      "input_to_input_weights and recurrent_to_input_weights must be both present or both omitted",
    );
    if (!useCifg) {
      checkShape(inputs, IN.inputToInput, cellByInput);
      checkShape(inputs, IN.recurrentToInput, cellByOutput);
      check(is(IN.inputGateBias), "input_gate_bias (input 12) is required without CIFG");
      checkShape(inputs, IN.inputGateBias, cell);
    } else {
      check(!is(IN.inputGateBias), "input_gate_bias (input 12) must be omitted with CIFG");
    }

    for (const index of [IN.cellToInput, IN.cellToForget, IN.cellToOutput]) {
      if (is(index)) checkShape(inputs, index, cell);
    }
    const peepholeAll = (is(IN.cellToInput) || useCifg) && is(IN.cellToForget) &&
      is(IN.cellToOutput);
    const peepholeNone = !is(IN.cellToInput) && !is(IN.cellToForget) && !is(IN.cellToOutput);
    check(peepholeAll || peepholeNone, "peephole weights must be all present or all omitted");

    if (is(IN.projectionWeights)) {
      checkShape(inputs, IN.projectionWeights, [nOutput, nCell]);
    } else {
      check(!is(IN.projectionBias), "projection_bias (input 17) requires projection_weights");
      check(
        nOutput === nCell,
        `without projection the output size (${nOutput}) must equal the number of cells (${nCell})`,
      );
    }
    if (is(IN.projectionBias)) checkShape(inputs, IN.projectionBias, [nOutput]);

    const layerNorm: number[] = [IN.forgetLayerNorm, IN.cellLayerNorm, IN.outputLayerNorm];
    if (useCifg) {
      check(
        !is(IN.inputLayerNorm),
        "input_layer_norm_weights (input 23) must be omitted with CIFG",
      );
    } else {
      layerNorm.unshift(IN.inputLayerNorm);
    }
    for (const index of layerNorm) if (is(index)) checkShape(inputs, index, cell);
    check(
      layerNorm.every(is) || !layerNorm.some(is),
      "layer normalization weights must be all present or all omitted",
    );

    return [
      [nBatch, nCell * (useCifg ? 3 : 4)],
      [nBatch, nOutput],
      [nBatch, nCell],
      [nBatch, nOutput],
    ];
  },

  /** The gates' input and recurrent weight products and the projection, per batch row. */
  cost: (inputs, outputs) =>
    recurrentStepCost(inputs, outputs, [
      IN.inputToInput,
      IN.inputToForget,
      IN.inputToCell,
      IN.inputToOutput,
      IN.recurrentToInput,
      IN.recurrentToForget,
      IN.recurrentToCell,
      IN.recurrentToOutput,
      IN.projectionWeights,
    ]),

  execute(inputs, outputs) {
    const activation = activationOf(inputs, IN.activation);
    const optional = (index: number) => optionalFloat32Of(inputs[index]);
    const required = (index: number) => float32Of(inputs[index]);
    const weights: LstmWeights = {
      inputToInput: optional(IN.inputToInput),
      inputToForget: required(IN.inputToForget),
      inputToCell: required(IN.inputToCell),
      inputToOutput: required(IN.inputToOutput),
      recurrentToInput: optional(IN.recurrentToInput),
      recurrentToForget: required(IN.recurrentToForget),
      recurrentToCell: required(IN.recurrentToCell),
      recurrentToOutput: required(IN.recurrentToOutput),
      cellToInput: optional(IN.cellToInput),
      cellToForget: optional(IN.cellToForget),
      cellToOutput: optional(IN.cellToOutput),
      inputGateBias: optional(IN.inputGateBias),
      forgetGateBias: required(IN.forgetGateBias),
      cellBias: required(IN.cellBias),
      outputGateBias: required(IN.outputGateBias),
      projectionWeights: optional(IN.projectionWeights),
      projectionBias: optional(IN.projectionBias),
      inputLayerNorm: optional(IN.inputLayerNorm),
      forgetLayerNorm: optional(IN.forgetLayerNorm),
      cellLayerNorm: optional(IN.cellLayerNorm),
      outputLayerNorm: optional(IN.outputLayerNorm),
    };
    const [nBatch, nInput] = inputs[IN.input].shape;
    const config = {
      nBatch,
      nInput,
      nCell: inputs[IN.inputToOutput].shape[0],
      nOutput: inputs[IN.recurrentToOutput].shape[1],
      activation,
      cellClip: scalarOf(inputs[IN.cellClip]),
      projClip: scalarOf(inputs[IN.projClip]),
    };
    const stepInputs = {
      input: required(IN.input),
      outputStateIn: required(IN.outputStateIn),
      cellStateIn: required(IN.cellStateIn),
    };
    withFloat32OutputTensors(
      outputs,
      ([scratch, outputStateOut, cellStateOut, output]) =>
        lstmStep(weights, config, stepInputs, { scratch, outputStateOut, cellStateOut, output }),
    );
  },
};
