/**
 * Sequence forms of the float recurrent cells (NNAPI UNIDIRECTIONAL_/BIDIRECTIONAL_SEQUENCE_RNN
 * and _LSTM; Android `UnidirectionalSequenceRNN.cpp`, `BidirectionalSequenceRNN.cpp`): the
 * layout change between batch-major and time-major sequences, and the basic RNN and LSTM
 * cells with an optional auxiliary input run over a whole time-major sequence, forwards or
 * backwards, writing each step into a (possibly shared, strided) output and, for HAL 1.3's
 * state outputs, the states after the last step processed.
 */
import { activationFunction } from "./recurrent_common.ts";
import { type LstmConfig, lstmStep, type LstmWeights } from "./recurrent_lstm.ts";

/**
 * Swaps the first two dimensions of a row-major [d0, d1, inner] array into `output`
 * ([d1, d0, inner]); converts between batch-major and time-major sequences.
 */
export function transposeFirstTwoDims(
  input: Float32Array,
  shape: readonly [number, number, number],
  output: Float32Array,
): void {
  const [d0, d1, inner] = shape;
  for (let f = 0; f < d0; f++) {
    for (let s = 0; s < d1; s++) {
      const from = (f * d1 + s) * inner;
      output.set(input.subarray(from, from + inner), (s * d0 + f) * inner);
    }
  }
}

/** Operands of one direction of a sequence RNN, all float32, sequences time-major. */
export interface RnnSequenceArgs {
  /** [maxTime, batch, inputSize] */
  input: Float32Array;
  /** [maxTime, batch, auxInputSize], or null without auxiliary input. */
  auxInput: Float32Array | null;
  /** [numUnits, inputSize] */
  weights: Float32Array;
  /** [numUnits, auxInputSize], or null without auxiliary input. */
  auxWeights: Float32Array | null;
  /** [numUnits, numUnits] */
  recurrentWeights: Float32Array;
  /** [numUnits] */
  bias: Float32Array;
  /** [batch, numUnits], the state before the first step processed. */
  hiddenStateIn: Float32Array;
  /** Activation code (NONE, RELU, RELU6, TANH or SIGMOID). */
  activation: number;
  maxTime: number;
  batch: number;
  inputSize: number;
  auxInputSize: number;
  numUnits: number;
  /** Process the steps from the last to the first (the backward cell). */
  reverse: boolean;
  /** [maxTime, batch, outputStride]; step t, batch b writes numUnits values at outputOffset. */
  output: Float32Array;
  outputStride: number;
  outputOffset: number;
  /** [batch, numUnits]: receives the hidden state after the last step processed (HAL 1.3). */
  hiddenStateOut?: Float32Array | null;
}

/**
 * Runs the RNN cell over every time step (Android 10 `RNN::RNNStep` per step: bias, then
 * input, auxiliary input and recurrent products, then the activation); the hidden state
 * carries from step to step.
 */
export function rnnSequence(args: RnnSequenceArgs): void {
  const { input, auxInput, weights, auxWeights, recurrentWeights, bias } = args;
  const { maxTime, batch, inputSize, auxInputSize, numUnits, output, outputStride } = args;
  const f = activationFunction(args.activation);
  let hidden = Float32Array.from(args.hiddenStateIn.subarray(0, batch * numUnits));
  let next = new Float32Array(batch * numUnits);
  for (let step = 0; step < maxTime; step++) {
    const t = args.reverse ? maxTime - 1 - step : step;
    for (let b = 0; b < batch; b++) {
      const x = (t * batch + b) * inputSize;
      const ax = (t * batch + b) * auxInputSize;
      const h = b * numUnits;
      const out = (t * batch + b) * outputStride + args.outputOffset;
      for (let o = 0; o < numUnits; o++) {
        let acc = bias[o];
        const w = o * inputSize;
        for (let i = 0; i < inputSize; i++) acc += input[x + i] * weights[w + i];
        if (auxInput !== null && auxWeights !== null) {
          const aw = o * auxInputSize;
          for (let i = 0; i < auxInputSize; i++) acc += auxInput[ax + i] * auxWeights[aw + i];
        }
        const r = o * numUnits;
        for (let j = 0; j < numUnits; j++) acc += hidden[h + j] * recurrentWeights[r + j];
        const value = f(acc);
        output[out + o] = value;
        next[h + o] = value;
      }
    }
    [hidden, next] = [next, hidden];
  }
  args.hiddenStateOut?.set(hidden);
}

/** The auxiliary-input weights of an LSTM cell ([nCell, nAuxInput] each); inputToInput is null under CIFG. */
export interface LstmAuxWeights {
  inputToInput: Float32Array | null;
  inputToForget: Float32Array;
  inputToCell: Float32Array;
  inputToOutput: Float32Array;
}

/** Operands of one direction of a sequence LSTM, sequences time-major. */
export interface LstmSequenceArgs {
  weights: LstmWeights;
  /** Sizes and scalar parameters of the cell; `nInput` is the regular input's size. */
  config: LstmConfig;
  /** [maxTime, nBatch, nInput] */
  input: Float32Array;
  /** [maxTime, nBatch, nAuxInput], multiplied by `auxWeights`; null without one. */
  auxInput: Float32Array | null;
  auxWeights: LstmAuxWeights | null;
  nAuxInput: number;
  /** [nBatch, nOutput] */
  outputStateIn: Float32Array;
  /** [nBatch, nCell] */
  cellStateIn: Float32Array;
  maxTime: number;
  /** Process the steps from the last to the first (the backward cell). */
  reverse: boolean;
  /** [maxTime, nBatch, outputStride]; step t, batch b writes nOutput values at outputOffset. */
  output: Float32Array;
  outputStride: number;
  outputOffset: number;
  /** [nBatch, nOutput]: receives the output state after the last step processed (HAL 1.3). */
  outputStateOut?: Float32Array | null;
  /** [nBatch, nCell]: receives the cell state after the last step processed (HAL 1.3). */
  cellStateOut?: Float32Array | null;
}

/** Joins [rows, a] and [rows, b] row-major matrices into [rows, a + b]. */
function concatColumns(left: Float32Array, right: Float32Array, rows: number): Float32Array {
  const a = left.length / rows;
  const b = right.length / rows;
  const joined = new Float32Array(rows * (a + b));
  for (let r = 0; r < rows; r++) {
    joined.set(left.subarray(r * a, (r + 1) * a), r * (a + b));
    joined.set(right.subarray(r * b, (r + 1) * b), r * (a + b) + a);
  }
  return joined;
}

/**
 * Runs the LSTM cell ({@link lstmStep}) over every time step (Android 10
 * `LSTMCell::LSTMEvalFloat32`), carrying the output and cell states from step to step. An
 * auxiliary input is folded into the cell as extra input columns: its products add to the
 * same gate accumulators as the input's, as the reference's separate products do.
 */
export function lstmSequence(args: LstmSequenceArgs): void {
  const { config, maxTime, output, outputStride, outputOffset, nAuxInput } = args;
  const { nBatch, nInput, nCell, nOutput } = config;
  const aux = args.auxInput !== null && args.auxWeights !== null
    ? { input: args.auxInput, weights: args.auxWeights }
    : null;
  let weights = args.weights;
  if (aux !== null) {
    const join = (w: Float32Array, a: Float32Array) => concatColumns(w, a, nCell);
    weights = {
      ...weights,
      inputToInput: weights.inputToInput === null || aux.weights.inputToInput === null
        ? weights.inputToInput
        : join(weights.inputToInput, aux.weights.inputToInput),
      inputToForget: join(weights.inputToForget, aux.weights.inputToForget),
      inputToCell: join(weights.inputToCell, aux.weights.inputToCell),
      inputToOutput: join(weights.inputToOutput, aux.weights.inputToOutput),
    };
  }
  const stepConfig = { ...config, nInput: aux === null ? nInput : nInput + nAuxInput };
  const scratch = new Float32Array(nBatch * nCell * 4);
  const stepOutput = new Float32Array(nBatch * nOutput);
  let outputState = Float32Array.from(args.outputStateIn.subarray(0, nBatch * nOutput));
  let cellState = Float32Array.from(args.cellStateIn.subarray(0, nBatch * nCell));
  let nextOutputState = new Float32Array(nBatch * nOutput);
  let nextCellState = new Float32Array(nBatch * nCell);
  for (let step = 0; step < maxTime; step++) {
    const t = args.reverse ? maxTime - 1 - step : step;
    let input = args.input.subarray(t * nBatch * nInput, (t + 1) * nBatch * nInput);
    if (aux !== null) {
      const auxStep = aux.input.subarray(t * nBatch * nAuxInput, (t + 1) * nBatch * nAuxInput);
      input = concatColumns(input, auxStep, nBatch);
    }
    lstmStep(weights, stepConfig, { input, outputStateIn: outputState, cellStateIn: cellState }, {
      scratch,
      outputStateOut: nextOutputState,
      cellStateOut: nextCellState,
      output: stepOutput,
    });
    for (let b = 0; b < nBatch; b++) {
      output.set(
        stepOutput.subarray(b * nOutput, (b + 1) * nOutput),
        (t * nBatch + b) * outputStride + outputOffset,
      );
    }
    [outputState, nextOutputState] = [nextOutputState, outputState];
    [cellState, nextCellState] = [nextCellState, cellState];
  }
  args.outputStateOut?.set(outputState);
  args.cellStateOut?.set(cellState);
}
