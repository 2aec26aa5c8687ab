/**
 * What LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM and BIDIRECTIONAL_SEQUENCE_LSTM share: the operand
 * positions of one LSTM cell (the bidirectional form has two, at different positions), the
 * cell's shape checks (Android 10 `LSTMCell::CheckInputTensorDimensions`), and reading its
 * weights for the float kernel. Optional operands are absent when omitted or empty.
 */
import type { LstmWeights } from "../../kernels/recurrent_lstm.ts";
import { elementCount, type Tensor } from "../../nnapi/tensor.ts";
import { check, type PrepareInput } from "../operation.ts";
import { float32Of, isPresent, optionalFloat32Of } from "./recurrent.ts";
import { knownScalar } from "./scalars.ts";

/** Positions of one cell's operands among the operation's inputs. */
export type LstmCellOperands = Readonly<
  Record<keyof LstmWeights | "outputStateIn" | "cellStateIn", number>
>;

/**
 * The positions of a cell whose 17 weights, biases and projection start at `first`, whose two
 * states start at `states` and whose four layer-normalization weights start at `layerNorm`.
 */
export function cellAt(first: number, states: number, layerNorm: number): LstmCellOperands {
  return {
    inputToInput: first,
    inputToForget: first + 1,
    inputToCell: first + 2,
    inputToOutput: first + 3,
    recurrentToInput: first + 4,
    recurrentToForget: first + 5,
    recurrentToCell: first + 6,
    recurrentToOutput: first + 7,
    cellToInput: first + 8,
    cellToForget: first + 9,
    cellToOutput: first + 10,
    inputGateBias: first + 11,
    forgetGateBias: first + 12,
    cellBias: first + 13,
    outputGateBias: first + 14,
    projectionWeights: first + 15,
    projectionBias: first + 16,
    outputStateIn: states,
    cellStateIn: states + 1,
    inputLayerNorm: layerNorm,
    forgetLayerNorm: layerNorm + 1,
    cellLayerNorm: layerNorm + 2,
    outputLayerNorm: layerNorm + 3,
  };
}

/** NNAPI's names of the 17 operands `cellAt` places from `first`, for messages. */
export const CELL_NAMES = [
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
] as const;

/** NNAPI's names of the four layer-normalization weights, for messages. */
export const LAYER_NORM_NAMES = [
  "input_layer_norm_weights",
  "forget_layer_norm_weights",
  "cell_layer_norm_weights",
  "output_layer_norm_weights",
] as const;

/** Checks cell_clip and proj_clip (at `positions`) are not negative, when known. */
export function checkKnownClips(
  inputs: readonly PrepareInput[],
  positions: readonly number[],
  names: readonly string[],
): void {
  for (const index of positions) {
    const clip = knownScalar(inputs[index]);
    if (clip !== undefined) {
      check(clip >= 0, `${names[index]} (input ${index}) is negative: ${clip}`);
    }
  }
}

/** A cell's number of units and output size, read from its weights' shapes at execution. */
export function cellSizesOf(
  inputs: readonly Tensor[],
  cell: LstmCellOperands,
): { nCell: number; nOutput: number } {
  return {
    nCell: inputs[cell.inputToOutput].shape[0],
    nOutput: inputs[cell.recurrentToOutput].shape[1],
  };
}

/** The cell operands that may be omitted. */
export const OPTIONAL_CELL_OPERANDS = [
  "inputToInput",
  "recurrentToInput",
  "cellToInput",
  "cellToForget",
  "cellToOutput",
  "inputGateBias",
  "projectionWeights",
  "projectionBias",
  "inputLayerNorm",
  "forgetLayerNorm",
  "cellLayerNorm",
  "outputLayerNorm",
] as const satisfies readonly (keyof LstmCellOperands)[];

/** The cell operands that are always present, with their ranks. */
export const REQUIRED_CELL_RANKS = [
  ["inputToForget", 2],
  ["inputToCell", 2],
  ["inputToOutput", 2],
  ["recurrentToForget", 2],
  ["recurrentToCell", 2],
  ["recurrentToOutput", 2],
  ["forgetGateBias", 1],
  ["cellBias", 1],
  ["outputGateBias", 1],
  ["outputStateIn", 2],
  ["cellStateIn", 2],
] as const satisfies readonly (readonly [keyof LstmCellOperands, number])[];

/** The positions of the optional operands of a cell. */
export function optionalPositions(cell: LstmCellOperands): number[] {
  return OPTIONAL_CELL_OPERANDS.map((key) => cell[key]);
}

/** [position, rank] of the required operands of a cell. */
export function requiredRanks(cell: LstmCellOperands): [number, number][] {
  return REQUIRED_CELL_RANKS.map(([key, rank]) => [cell[key], rank]);
}

/** The sizes a cell's shape checks establish. */
export interface LstmCellSizes {
  nCell: number;
  nOutput: number;
  useCifg: boolean;
}

/**
 * Checks the shapes of one cell's operands against each other and against the batch and
 * input sizes of its (sequence) input; `names` names the operation's inputs for messages.
 */
export function checkLstmCell(
  inputs: readonly PrepareInput[],
  cell: LstmCellOperands,
  options: { names: readonly string[]; nBatch: number; nInput: number },
): LstmCellSizes {
  const { names, nBatch, nInput } = options;
  const what = (index: number) => `${names[index]} (input ${index})`;
  // LSTM's 23-input form has no layer-normalization operands at all.
  const is = (index: number) => index < inputs.length && isPresent(inputs[index]);
  const checkShape = (index: number, expected: readonly number[]) => {
    const shape = inputs[index].shape;
    check(
      shape.length === expected.length && shape.every((d, i) => d === expected[i]),
      `${what(index)} has shape [${shape.join(",")}], expected [${expected.join(",")}]`,
    );
  };
  const matrix = (index: number) => {
    const shape = inputs[index].shape;
    check(shape.length === 2, `${what(index)} has rank ${shape.length}, expected 2`);
    return shape;
  };
  const nCell = matrix(cell.inputToOutput)[0];
  const nOutput = matrix(cell.recurrentToOutput)[1];
  const cellByInput = [nCell, nInput];
  const cellByOutput = [nCell, nOutput];
  const vector = [nCell];
  checkShape(cell.inputToForget, cellByInput);
  checkShape(cell.inputToCell, cellByInput);
  checkShape(cell.inputToOutput, cellByInput);
  checkShape(cell.recurrentToForget, cellByOutput);
  checkShape(cell.recurrentToCell, cellByOutput);
  checkShape(cell.recurrentToOutput, cellByOutput);
  checkShape(cell.forgetGateBias, vector);
  checkShape(cell.cellBias, vector);
  checkShape(cell.outputGateBias, vector);
  checkShape(cell.outputStateIn, [nBatch, nOutput]);
  checkShape(cell.cellStateIn, [nBatch, nCell]);

  const useCifg = !is(cell.inputToInput);
  check(
    is(cell.recurrentToInput) === !useCifg,
    `${names[cell.inputToInput]} and ${
      names[cell.recurrentToInput]
    } must be both present or both omitted`,
  );
  if (!useCifg) {
    checkShape(cell.inputToInput, cellByInput);
    checkShape(cell.recurrentToInput, cellByOutput);
    check(is(cell.inputGateBias), `${what(cell.inputGateBias)} is required without CIFG`);
    checkShape(cell.inputGateBias, vector);
  } else {
    check(!is(cell.inputGateBias), `${what(cell.inputGateBias)} must be omitted with CIFG`);
  }

  const peephole = [cell.cellToInput, cell.cellToForget, cell.cellToOutput];
  for (const index of peephole) if (is(index)) checkShape(index, vector);
  const peepholeAll = (is(cell.cellToInput) || useCifg) && is(cell.cellToForget) &&
    is(cell.cellToOutput);
  check(
    peepholeAll || !peephole.some(is),
    `peephole weights ${peephole.map(what).join(", ")} must be all present or all omitted`,
  );

  if (is(cell.projectionWeights)) {
    checkShape(cell.projectionWeights, [nOutput, nCell]);
  } else {
    check(
      !is(cell.projectionBias),
      `${what(cell.projectionBias)} requires ${names[cell.projectionWeights]}`,
    );
    check(
      nOutput === nCell,
      `without projection the output size (${nOutput}) must equal the number of cells (${nCell})`,
    );
  }
  if (is(cell.projectionBias)) checkShape(cell.projectionBias, [nOutput]);

  const layerNorm = [cell.forgetLayerNorm, cell.cellLayerNorm, cell.outputLayerNorm];
  if (useCifg) {
    check(!is(cell.inputLayerNorm), `${what(cell.inputLayerNorm)} must be omitted with CIFG`);
  } else {
    layerNorm.unshift(cell.inputLayerNorm);
  }
  for (const index of layerNorm) if (is(index)) checkShape(index, vector);
  check(
    layerNorm.every(is) || !layerNorm.some(is),
    `layer normalization weights ${
      layerNorm.map(what).join(", ")
    } must be all present or all omitted`,
  );
  return { nCell, nOutput, useCifg };
}

/** The weights of one cell of an executing call, as float32 (null for omitted operands). */
export function lstmWeightsOf(inputs: readonly Tensor[], cell: LstmCellOperands): LstmWeights {
  const optional = (index: number) => optionalFloat32Of(inputs[index]);
  const required = (index: number) => float32Of(inputs[index]);
  return {
    inputToInput: optional(cell.inputToInput),
    inputToForget: required(cell.inputToForget),
    inputToCell: required(cell.inputToCell),
    inputToOutput: required(cell.inputToOutput),
    recurrentToInput: optional(cell.recurrentToInput),
    recurrentToForget: required(cell.recurrentToForget),
    recurrentToCell: required(cell.recurrentToCell),
    recurrentToOutput: required(cell.recurrentToOutput),
    cellToInput: optional(cell.cellToInput),
    cellToForget: optional(cell.cellToForget),
    cellToOutput: optional(cell.cellToOutput),
    inputGateBias: optional(cell.inputGateBias),
    forgetGateBias: required(cell.forgetGateBias),
    cellBias: required(cell.cellBias),
    outputGateBias: required(cell.outputGateBias),
    projectionWeights: optional(cell.projectionWeights),
    projectionBias: optional(cell.projectionBias),
    inputLayerNorm: optional(cell.inputLayerNorm),
    forgetLayerNorm: optional(cell.forgetLayerNorm),
    cellLayerNorm: optional(cell.cellLayerNorm),
    outputLayerNorm: optional(cell.outputLayerNorm),
  };
}

/** The positions of a cell's weight matrices: what one step multiplies per batch row. */
export function cellWeightPositions(cell: LstmCellOperands): number[] {
  return [
    cell.inputToInput,
    cell.inputToForget,
    cell.inputToCell,
    cell.inputToOutput,
    cell.recurrentToInput,
    cell.recurrentToForget,
    cell.recurrentToCell,
    cell.recurrentToOutput,
    cell.projectionWeights,
  ];
}

/** Multiply-adds of one step of one cell per batch row: its present weight matrices. */
export function cellStepMacs(inputs: readonly PrepareInput[], cell: LstmCellOperands): number {
  let macs = 0;
  for (const index of cellWeightPositions(cell)) {
    if (inputs[index].value !== null) macs += elementCount(inputs[index].shape);
  }
  return macs;
}
