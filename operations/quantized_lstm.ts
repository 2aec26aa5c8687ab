/**
 * QUANTIZED_LSTM (HAL 1.3): one time step of an LSTM cell in integers, with optional CIFG,
 * peephole, projection and layer normalization. The input and the output state are
 * TENSOR_QUANT8_ASYMM_SIGNED, the weights TENSOR_QUANT8_SYMM, the biases TENSOR_INT32, the
 * peephole and layer-normalization weights and the cell state TENSOR_QUANT16_SYMM; scalars
 * give the clips, each gate's intermediate scale (of its matrix products, the input of layer
 * normalization) and the hidden state's quantization. Outputs: output_state_out, cell_state_out
 * and output (equal to output_state_out). Validation follows Android 11 `QLSTM.cpp` (shapes
 * as LSTM's, shared in common/sequence_lstm.ts) and adds what its kernel silently relies on:
 * a cell state scale of 2^-15 .. 2^-9, positive scales, and outputs quantized as the states
 * they continue. The arithmetic is kernels/integer_lstm.ts.
 */
import {
  type IntegerLstmGate,
  integerLstmStep,
  powerOfTwoExponent,
  type Quantized,
} from "../kernels/integer_lstm.ts";
import type { Tensor, TensorData } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { checkInputRanks, rankedShape, recurrentStepCost } from "./common/recurrent.ts";
import {
  CELL_NAMES,
  cellAt,
  cellSizesOf,
  cellWeightPositions,
  checkLstmCell,
  LAYER_NORM_NAMES,
  optionalPositions,
  requiredRanks,
} from "./common/sequence_lstm.ts";
import {
  check,
  checkArity,
  checkTypes,
  type DeclaredOperand,
  type OperationDefinition,
  type OperationSignature,
} from "./operation.ts";

/** Input positions besides the cell's. */
const IN = {
  input: 0,
  cellClip: 24,
  projectionClip: 25,
  inputIntermediateScale: 26,
  forgetIntermediateScale: 27,
  cellIntermediateScale: 28,
  outputIntermediateScale: 29,
  hiddenZeroPoint: 30,
  hiddenScale: 31,
} as const;

/** The cell's operands: LSTM's order, the states at 18 and the layer norms at 20. */
const CELL = cellAt(1, 18, 20);

const NAMES = [
  "input",
  ...CELL_NAMES,
  "output_state_in",
  "cell_state_in",
  ...LAYER_NORM_NAMES,
  "cell_clip",
  "projection_clip",
  "input_intermediate_scale",
  "forget_intermediate_scale",
  "cell_intermediate_scale",
  "output_intermediate_scale",
  "hidden_state_zero_point",
  "hidden_state_scale",
];

const Q8_SIGNED: OperandType = "TENSOR_QUANT8_ASYMM_SIGNED";
const WEIGHTS: OperandType = "TENSOR_QUANT8_SYMM";
const Q16: OperandType = "TENSOR_QUANT16_SYMM";
const BIAS: OperandType = "TENSOR_INT32";

const INPUT_TYPES: readonly OperandType[] = [
  Q8_SIGNED,
  ...Array<OperandType>(8).fill(WEIGHTS),
  ...Array<OperandType>(3).fill(Q16),
  ...Array<OperandType>(4).fill(BIAS),
  WEIGHTS,
  BIAS,
  Q8_SIGNED,
  Q16,
  ...Array<OperandType>(4).fill(Q16),
  ...Array<OperandType>(6).fill("FLOAT32"),
  "INT32",
  "FLOAT32",
];
const OUTPUT_TYPES: readonly OperandType[] = [Q8_SIGNED, Q16, Q8_SIGNED];

/** Per gate: input and recurrent weights, bias and peephole weights (the cell gate has none). */
const GATES = {
  input: [CELL.inputToInput, CELL.recurrentToInput, CELL.inputGateBias, CELL.cellToInput],
  forget: [CELL.inputToForget, CELL.recurrentToForget, CELL.forgetGateBias, CELL.cellToForget],
  cell: [CELL.inputToCell, CELL.recurrentToCell, CELL.cellBias, null],
  output: [CELL.inputToOutput, CELL.recurrentToOutput, CELL.outputGateBias, CELL.cellToOutput],
} as const;
const LAYER_NORMS = {
  input: CELL.inputLayerNorm,
  forget: CELL.forgetLayerNorm,
  cell: CELL.cellLayerNorm,
  output: CELL.outputLayerNorm,
} as const;
const INTERMEDIATE_SCALES = {
  input: IN.inputIntermediateScale,
  forget: IN.forgetIntermediateScale,
  cell: IN.cellIntermediateScale,
  output: IN.outputIntermediateScale,
} as const;

function what(index: number): string {
  return `${NAMES[index]} (input ${index})`;
}

/** The cell state's scale sets the fixed-point format of the cell: 2^k, -15 <= k <= -9. */
function checkCellStateScale(cellState: DeclaredOperand): void {
  const k = powerOfTwoExponent(cellState.scale);
  check(
    k !== undefined && k >= -15 && k <= -9,
    `${what(CELL.cellStateIn)} has scale ${cellState.scale}, expected a power of two from ` +
      `2^-15 to 2^-9`,
  );
}

/** The outputs continue the states: same scale (and zero point) as output/cell_state_in. */
function checkOutputQuantization(signature: OperationSignature): void {
  const same = (a: DeclaredOperand, b: DeclaredOperand) =>
    Math.fround(a.scale) === Math.fround(b.scale) && a.zeroPoint === b.zeroPoint;
  const outputState = signature.inputs[CELL.outputStateIn];
  const cellState = signature.inputs[CELL.cellStateIn];
  const expected: [number, DeclaredOperand, string][] = [
    [0, outputState, "output_state_in"],
    [1, cellState, "cell_state_in"],
    [2, outputState, "output_state_in"],
  ];
  for (const [i, state, name] of expected) {
    const output = signature.outputs[i];
    check(
      same(output, state),
      `output ${i} (operand ${output.index}) has scale ${output.scale} and zero point ` +
        `${output.zeroPoint}, expected ${name}'s ${state.scale} and ${state.zeroPoint}`,
    );
  }
}

/**
 * Checks the scalar inputs whose values are known (`values[i]` undefined: not yet):
 * clips not negative, scales positive, the hidden zero point an int8. The input gate's
 * intermediate scale is only used without CIFG (`useCifg` false).
 */
function checkScalars(values: readonly (number | undefined)[], useCifg?: boolean): void {
  for (const index of [IN.cellClip, IN.projectionClip]) {
    const clip = values[index];
    if (clip !== undefined) {
      check(clip >= 0, `${what(index)} is ${clip}, expected 0 (none) or more`);
    }
  }
  const scales: number[] = [
    IN.forgetIntermediateScale,
    IN.cellIntermediateScale,
    IN.outputIntermediateScale,
    IN.hiddenScale,
  ];
  if (useCifg === false) scales.push(IN.inputIntermediateScale);
  for (const index of scales) {
    const scale = values[index];
    if (scale !== undefined) {
      check(
        scale > 0 && Number.isFinite(scale),
        `${what(index)} is ${scale}, expected a positive scale`,
      );
    }
  }
  const zeroPoint = values[IN.hiddenZeroPoint];
  if (zeroPoint !== undefined) {
    check(
      zeroPoint >= -128 && zeroPoint <= 127,
      `${what(IN.hiddenZeroPoint)} is ${zeroPoint}, expected -128 .. 127`,
    );
  }
}

function isPresentData(data: TensorData | null): data is TensorData {
  return data !== null && data.length > 0;
}

function quantized<T extends TensorData>(tensor: Tensor): Quantized<T> {
  return { data: tensor.data as T, scale: tensor.scale, zeroPoint: tensor.zeroPoint };
}

/** The scalars of an executing call by position; an omitted clip reads as 0 (none). */
function scalarsOf(inputs: readonly Tensor[]): number[] {
  const values: number[] = [];
  for (let i = IN.cellClip; i <= IN.hiddenScale; i++) {
    const data = inputs[i].data;
    values[i] = isPresentData(data) ? Number(data[0]) : 0;
  }
  return values;
}

/** A scalar's value when the model declares it (a constant), else undefined. */
function declaredScalar(operand: DeclaredOperand): number | undefined {
  return operand.value && operand.value.length > 0 ? Number(operand.value[0]) : undefined;
}

/** Whether the declarations show CIFG (input_to_input omitted); undefined: not yet known. */
function declaredCifg(inputToInput: DeclaredOperand): boolean | undefined {
  if (inputToInput.lifetime === "NO_VALUE") return true;
  return inputToInput.value === undefined ? undefined : inputToInput.value.length === 0;
}

function gateOf(
  inputs: readonly Tensor[],
  name: keyof typeof GATES,
  intermediateScale: number,
): IntegerLstmGate {
  const [inputWeights, recurrentWeights, bias, peephole] = GATES[name];
  const optional16 = (index: number | null) =>
    index !== null && isPresentData(inputs[index].data)
      ? quantized<Int16Array>(inputs[index])
      : null;
  return {
    inputWeights: quantized<Int8Array>(inputs[inputWeights]),
    recurrentWeights: quantized<Int8Array>(inputs[recurrentWeights]),
    bias: inputs[bias].data as Int32Array,
    peephole: optional16(peephole),
    layerNorm: optional16(LAYER_NORMS[name]),
    intermediateScale,
  };
}

/** The QUANTIZED_LSTM operation. */
export const quantizedLstm: OperationDefinition<"QUANTIZED_LSTM"> = {
  type: "QUANTIZED_LSTM",
  optionalInputs: [...optionalPositions(CELL), IN.cellClip, IN.projectionClip],

  validate(signature) {
    checkArity(signature, [32], 3);
    checkTypes(signature, INPUT_TYPES, OUTPUT_TYPES);
    checkInputRanks(signature, NAMES, [[IN.input, 2], ...requiredRanks(CELL)]);
    checkCellStateScale(signature.inputs[CELL.cellStateIn]);
    checkOutputQuantization(signature);
    checkScalars(
      signature.inputs.map(declaredScalar),
      declaredCifg(signature.inputs[CELL.inputToInput]),
    );
    return "V1_3";
  },

  prepare(inputs) {
    const [batch, inputSize] = rankedShape(inputs, IN.input, { name: "input", rank: 2 });
    const { nCell, nOutput } = checkLstmCell(inputs, CELL, {
      names: NAMES,
      nBatch: batch,
      nInput: inputSize,
    });
    return [[batch, nOutput], [batch, nCell], [batch, nOutput]];
  },

  /** The gates' input and recurrent products and the projection, per batch row. */
  cost: (inputs, outputs) => recurrentStepCost(inputs, outputs, cellWeightPositions(CELL)),

  execute(inputs, outputs) {
    const [batch, inputSize] = inputs[IN.input].shape;
    const { nCell: numUnits, nOutput: outputSize } = cellSizesOf(inputs, CELL);
    const useCifg = !isPresentData(inputs[CELL.inputToInput].data);
    const scalars = scalarsOf(inputs);
    checkScalars(scalars, useCifg);
    const gate = (name: keyof typeof GATES) =>
      gateOf(inputs, name, scalars[INTERMEDIATE_SCALES[name]]);
    const projection = inputs[CELL.projectionWeights];
    const projectionBias = inputs[CELL.projectionBias].data;
    integerLstmStep({
      inputGate: useCifg ? null : gate("input"),
      forgetGate: gate("forget"),
      cellGate: gate("cell"),
      outputGate: gate("output"),
      projection: isPresentData(projection.data)
        ? {
          weights: quantized<Int8Array>(projection),
          bias: isPresentData(projectionBias) ? projectionBias as Int32Array : null,
        }
        : null,
      cellClip: scalars[IN.cellClip],
      projectionClip: scalars[IN.projectionClip],
      hiddenScale: scalars[IN.hiddenScale],
      hiddenZeroPoint: scalars[IN.hiddenZeroPoint],
    }, {
      batch,
      inputSize,
      numUnits,
      outputSize,
      input: quantized<Int8Array>(inputs[IN.input]),
      outputStateIn: quantized<Int8Array>(inputs[CELL.outputStateIn]),
      cellStateIn: quantized<Int16Array>(inputs[CELL.cellStateIn]),
      outputStateOut: outputs[0].data as Int8Array,
      cellStateOut: outputs[1].data as Int16Array,
      output: outputs[2].data as Int8Array,
    });
  },
};
