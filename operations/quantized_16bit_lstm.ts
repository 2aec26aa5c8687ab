/**
 * QUANTIZED_16BIT_LSTM (HAL 1.2): one step of a quantized LSTM cell without peephole,
 * projection or CIFG. Inputs: input [numBatches, inputSize] (TENSOR_QUANT8_ASYMM, scale
 * 1/128, zero point 128); input-to-{input, forget, cell, output} weights [outputSize,
 * inputSize] and recurrent-to-gate weights [outputSize, outputSize] (TENSOR_QUANT8_ASYMM,
 * one shared scale and zero point); four gate biases [outputSize] (TENSOR_INT32, scale
 * weights scale / 128, zero point 0); prev_cell_state [numBatches, outputSize]
 * (TENSOR_QUANT16_SYMM, scale 2^-11); prev_output [numBatches, outputSize] (as input).
 * Outputs: cell_state_out and output, shaped and quantized as the previous ones. Checks
 * follow Android 10 `QuantizedLSTMCell::prepare`.
 */
import { quantizeMultiplier } from "../kernels/fixed_point.ts";
import { quantizedLstmStep, STATE_INTEGER_BITS } from "../kernels/quantized_lstm.ts";
import type { Tensor } from "../nnapi/tensor.ts";
import { elementCount } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { checkInputRanks, rankedShape } from "./common/recurrent.ts";
import { CELL_NAMES } from "./common/sequence_lstm.ts";
import {
  check,
  checkArity,
  checkTypes,
  type OperationDefinition,
  type PrepareInput,
} from "./operation.ts";

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
  inputGateBias: 9,
  forgetGateBias: 10,
  cellGateBias: 11,
  outputGateBias: 12,
  prevCellState: 13,
  prevOutput: 14,
} as const;

const NAMES = [
  "input",
  ...CELL_NAMES.slice(0, 8), // the input and recurrent weights, as LSTM's
  "input_gate_bias",
  "forget_gate_bias",
  "cell_gate_bias",
  "output_gate_bias",
  "prev_cell_state",
  "prev_output",
];

const RANKS: readonly (readonly [number, number])[] = NAMES.map((_, i) => [
  i,
  i >= IN.inputGateBias && i <= IN.outputGateBias ? 1 : 2,
]);

/** Input, cell, forget, output: the gate order of the reference's concatenated weights. */
const INPUT_WEIGHTS: readonly number[] = [
  IN.inputToInput,
  IN.inputToCell,
  IN.inputToForget,
  IN.inputToOutput,
];
const RECURRENT_WEIGHTS: readonly number[] = [
  IN.recurrentToInput,
  IN.recurrentToCell,
  IN.recurrentToForget,
  IN.recurrentToOutput,
];
const BIASES: readonly number[] = [
  IN.inputGateBias,
  IN.cellGateBias,
  IN.forgetGateBias,
  IN.outputGateBias,
];

const INPUT_SCALE = 1 / 128;

function what(index: number): string {
  return `${NAMES[index]} (input ${index})`;
}

/** NNAPI `CheckedLog2`: the rounded log2 of x, or undefined when x is no power of two. */
function checkedLog2(x: number): number | undefined {
  const log2 = Math.log(x) * (1 / Math.log(2));
  const rounded = Math.round(log2);
  return Math.abs(log2 - rounded) < 1e-3 ? rounded : undefined;
}

function checkQuantization(
  inputs: readonly PrepareInput[],
  index: number,
  expected: { scale: number; zeroPoint: number },
): void {
  const { scale, zeroPoint } = inputs[index];
  check(
    scale === expected.scale && zeroPoint === expected.zeroPoint,
    `${
      what(index)
    } has scale ${scale} and zero point ${zeroPoint}, expected ${expected.scale} and ${expected.zeroPoint}`,
  );
}

function checkShape(inputs: readonly PrepareInput[], index: number, expected: number[]): void {
  const shape = inputs[index].shape;
  check(
    shape.length === expected.length && shape.every((d, i) => d === expected[i]),
    `${what(index)} has shape [${shape.join(",")}], expected [${expected.join(",")}]`,
  );
}

/** The accumulator multiplier of the cell's fully connected layer (output scale 2^-12). */
function accumulatorMultiplier(biasScale: number) {
  return quantizeMultiplier(4096 * biasScale);
}

function u8(tensor: Tensor): Uint8Array {
  return tensor.data as Uint8Array;
}

/** The QUANTIZED_16BIT_LSTM operation. */
export const quantized16bitLstm: OperationDefinition<"QUANTIZED_16BIT_LSTM"> = {
  type: "QUANTIZED_16BIT_LSTM",

  validate(signature) {
    checkArity(signature, [15], 2);
    const q8: OperandType = "TENSOR_QUANT8_ASYMM";
    checkTypes(
      signature,
      [
        ...Array<OperandType>(9).fill(q8),
        ...Array<OperandType>(4).fill("TENSOR_INT32"),
        "TENSOR_QUANT16_SYMM",
        q8,
      ],
      ["TENSOR_QUANT16_SYMM", q8],
    );
    checkInputRanks(signature, NAMES, RANKS);
    return "V1_2";
  },

  prepare(inputs) {
    const [numBatches, inputSize] = rankedShape(inputs, IN.input, { name: "input", rank: 2 });
    checkQuantization(inputs, IN.input, { scale: INPUT_SCALE, zeroPoint: 128 });
    const prevOutput = rankedShape(inputs, IN.prevOutput, { name: "prev_output", rank: 2 });
    check(
      prevOutput[0] === numBatches,
      `${what(IN.prevOutput)} has ${prevOutput[0]} batches, expected ${numBatches}`,
    );
    checkQuantization(inputs, IN.prevOutput, { scale: INPUT_SCALE, zeroPoint: 128 });
    const outputSize = prevOutput[1];

    const weights = inputs[IN.inputToInput];
    check(weights.scale !== 0, `${what(IN.inputToInput)} has scale 0`);
    const weightsQuant = { scale: weights.scale, zeroPoint: weights.zeroPoint };
    for (const index of [...INPUT_WEIGHTS, ...RECURRENT_WEIGHTS]) {
      const columns = INPUT_WEIGHTS.includes(index) ? inputSize : outputSize;
      checkShape(inputs, index, [outputSize, columns]);
      checkQuantization(inputs, index, weightsQuant);
    }
    const biasScale = inputs[IN.inputGateBias].scale;
    check(
      biasScale === weights.scale / 128,
      `${what(IN.inputGateBias)} has scale ${biasScale}, expected the weights' scale / 128 (${
        weights.scale / 128
      })`,
    );
    for (const index of BIASES) {
      checkShape(inputs, index, [outputSize]);
      checkQuantization(inputs, index, { scale: biasScale, zeroPoint: 0 });
    }

    checkShape(inputs, IN.prevCellState, [numBatches, outputSize]);
    const cellState = inputs[IN.prevCellState];
    check(
      cellState.zeroPoint === 0,
      `${what(IN.prevCellState)} has zero point ${cellState.zeroPoint}, expected 0`,
    );
    const log2 = checkedLog2(cellState.scale);
    check(
      log2 !== undefined && 15 + log2 === STATE_INTEGER_BITS,
      `${what(IN.prevCellState)} has scale ${cellState.scale}, expected 2^${
        STATE_INTEGER_BITS - 15
      } (${STATE_INTEGER_BITS} integer bits)`,
    );
    return [[numBatches, outputSize], [numBatches, outputSize]];
  },

  /** The fully connected layer over the concatenated input and previous output. */
  cost(inputs, outputs) {
    const [numBatches, inputSize] = inputs[IN.input].shape;
    const outputSize = inputs[IN.prevOutput].shape[1];
    return numBatches * 4 * outputSize * (inputSize + outputSize) +
      outputs.reduce((n, o) => n + elementCount(o.shape), 0);
  },

  execute(inputs, outputs) {
    const [numBatches, inputSize] = inputs[IN.input].shape;
    const outputSize = inputs[IN.prevOutput].shape[1];
    const { multiplier, shift } = accumulatorMultiplier(inputs[IN.inputGateBias].scale);
    quantizedLstmStep({
      numBatches,
      inputSize,
      outputSize,
      weightsZeroPoint: inputs[IN.inputToInput].zeroPoint,
      accumMultiplier: multiplier,
      accumShift: shift,
    }, {
      input: u8(inputs[IN.input]),
      prevOutput: u8(inputs[IN.prevOutput]),
      inputWeights: INPUT_WEIGHTS.map((i) => u8(inputs[i])),
      recurrentWeights: RECURRENT_WEIGHTS.map((i) => u8(inputs[i])),
      biases: BIASES.map((i) => inputs[i].data as Int32Array),
      prevCellState: inputs[IN.prevCellState].data as Int16Array,
      cellStateOut: outputs[0].data as Int16Array,
      output: u8(outputs[1]),
    });
  },
};
