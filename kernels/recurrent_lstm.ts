/**
 * Float LSTM cell (NNAPI LSTM; Android 10 `LSTMCell::LSTMStep`), one time step, with the
 * optional variants selected by which weights are present:
 * - CIFG (coupled input and forget gate) when the input gate weights are absent: the input
 *   gate is `1 - forget gate`;
 * - peephole connections when the cell-to-gate weights are present;
 * - layer normalization (HAL 1.2) when the output layer-norm weights are present: each gate's
 *   pre-activation is normalized per batch, scaled by its weights, then the bias is added;
 * - projection of the gated cell output when projection weights are present.
 */
import {
  applyActivation,
  matrixBatchVectorMultiplyAccumulate,
  sigmoid,
} from "./recurrent_common.ts";

/** `kLayerNormEpsilon` of the reference implementation. */
const LAYER_NORM_EPSILON = 1e-8;

/** Weights and biases of the cell; null marks an omitted optional operand. */
export interface LstmWeights {
  /** [nCell, nInput]; null selects CIFG. */
  inputToInput: Float32Array | null;
  inputToForget: Float32Array;
  inputToCell: Float32Array;
  inputToOutput: Float32Array;
  /** [nCell, nOutput]; null under CIFG. */
  recurrentToInput: Float32Array | null;
  recurrentToForget: Float32Array;
  recurrentToCell: Float32Array;
  recurrentToOutput: Float32Array;
  /** [nCell] peephole weights; cellToOutput present selects peephole (cellToInput unused under CIFG). */
  cellToInput: Float32Array | null;
  cellToForget: Float32Array | null;
  cellToOutput: Float32Array | null;
  /** [nCell]; null under CIFG. */
  inputGateBias: Float32Array | null;
  forgetGateBias: Float32Array;
  cellBias: Float32Array;
  outputGateBias: Float32Array;
  /** [nOutput, nCell]; null: the output is the gated cell output (nOutput == nCell). */
  projectionWeights: Float32Array | null;
  /** [nOutput] */
  projectionBias: Float32Array | null;
  /** [nCell] layer-norm weights; outputLayerNorm present selects layer normalization. */
  inputLayerNorm: Float32Array | null;
  forgetLayerNorm: Float32Array | null;
  cellLayerNorm: Float32Array | null;
  outputLayerNorm: Float32Array | null;
}

/** Sizes and scalar parameters of the cell. */
export interface LstmConfig {
  nBatch: number;
  nInput: number;
  nCell: number;
  nOutput: number;
  /** Activation code of the cell input and output (NONE, RELU, RELU6, TANH or SIGMOID). */
  activation: number;
  /** Cell state clipping bound; 0 disables. */
  cellClip: number;
  /** Projection output clipping bound; 0 disables. */
  projClip: number;
}

/** Time-step inputs. */
export interface LstmInputs {
  /** [nBatch, nInput] */
  input: Float32Array;
  /** [nBatch, nOutput] */
  outputStateIn: Float32Array;
  /** [nBatch, nCell] */
  cellStateIn: Float32Array;
}

/** Outputs, in NNAPI output order. */
export interface LstmOutputs {
  /** [nBatch, nCell * 4] (input, cell, forget, output gates), or [nBatch, nCell * 3] under CIFG. */
  scratch: Float32Array;
  /** [nBatch, nOutput] */
  outputStateOut: Float32Array;
  /** [nBatch, nCell] */
  cellStateOut: Float32Array;
  /** [nBatch, nOutput] */
  output: Float32Array;
}

/** gate[b, c] += weights[c] * state[b, c] (TFLite `VectorBatchVectorCwiseProductAccumulate`). */
function addPeephole(gate: Float32Array, weights: Float32Array, state: Float32Array, n: number) {
  const nCell = weights.length;
  for (let i = 0; i < n; i++) gate[i] += weights[i % nCell] * state[i];
}

/**
 * Layer normalization of each batch row (TFLite `MeanStddevNormalization`, variance as
 * E[x^2] - mean^2, epsilon only for a zero variance), then `* weights + bias`.
 */
function layerNorm(
  gate: Float32Array,
  weights: Float32Array,
  bias: Float32Array,
  nCell: number,
  nBatch: number,
) {
  for (let b = 0; b < nBatch; b++) {
    const row = b * nCell;
    let sum = 0;
    let sumSq = 0;
    for (let c = 0; c < nCell; c++) {
      const v = gate[row + c];
      sum += v;
      sumSq += v * v;
    }
    const mean = sum / nCell;
    const variance = sumSq / nCell - mean * mean;
    const stddevInv = 1 / Math.sqrt(variance === 0 ? LAYER_NORM_EPSILON : variance);
    for (let c = 0; c < nCell; c++) {
      const normalized = Math.fround((gate[row + c] - mean) * stddevInv);
      gate[row + c] = Math.fround(normalized * weights[c]) + bias[c];
    }
  }
}

/** Fills each batch row with the vector (TFLite `VectorBatchVectorAssign`). */
function assignRows(target: Float32Array, vector: Float32Array, nBatch: number) {
  for (let b = 0; b < nBatch; b++) target.set(vector, b * vector.length);
}

function clip(values: Float32Array, length: number, bound: number) {
  for (let i = 0; i < length; i++) values[i] = Math.max(-bound, Math.min(bound, values[i]));
}

/** One LSTM time step, in the operation order of the reference implementation. */
export function lstmStep(
  w: LstmWeights,
  config: LstmConfig,
  inputs: LstmInputs,
  outputs: LstmOutputs,
): void {
  const { nBatch, nInput, nCell, nOutput } = config;
  const { input, outputStateIn, cellStateIn } = inputs;
  const { scratch, cellStateOut, output } = outputs;
  const useCifg = w.inputToInput === null;
  const usePeephole = w.cellToOutput !== null;
  const useLayerNorm = w.outputLayerNorm !== null;
  const n = nBatch * nCell;

  const gates = scratch.subarray(0, (useCifg ? 3 : 4) * n);
  const inputGate = useCifg ? null : gates.subarray(0, n);
  const base = useCifg ? 0 : n;
  const cellGate = gates.subarray(base, base + n);
  const forgetGate = gates.subarray(base + n, base + 2 * n);
  const outputGate = gates.subarray(base + 2 * n, base + 3 * n);

  if (useLayerNorm) {
    gates.fill(0);
  } else {
    if (inputGate) assignRows(inputGate, w.inputGateBias!, nBatch);
    assignRows(forgetGate, w.forgetGateBias, nBatch);
    assignRows(cellGate, w.cellBias, nBatch);
    assignRows(outputGate, w.outputGateBias, nBatch);
  }

  const accumulate = (
    matrix: Float32Array,
    cols: number,
    vectors: Float32Array,
    gate: Float32Array,
  ) => matrixBatchVectorMultiplyAccumulate(matrix, nCell, cols, vectors, nBatch, gate);
  if (inputGate) accumulate(w.inputToInput!, nInput, input, inputGate);
  accumulate(w.inputToForget, nInput, input, forgetGate);
  accumulate(w.inputToCell, nInput, input, cellGate);
  accumulate(w.inputToOutput, nInput, input, outputGate);
  if (inputGate) accumulate(w.recurrentToInput!, nOutput, outputStateIn, inputGate);
  accumulate(w.recurrentToForget, nOutput, outputStateIn, forgetGate);
  accumulate(w.recurrentToCell, nOutput, outputStateIn, cellGate);
  accumulate(w.recurrentToOutput, nOutput, outputStateIn, outputGate);

  if (inputGate) {
    if (usePeephole) addPeephole(inputGate, w.cellToInput!, cellStateIn, n);
    if (useLayerNorm) layerNorm(inputGate, w.inputLayerNorm!, w.inputGateBias!, nCell, nBatch);
    for (let i = 0; i < n; i++) inputGate[i] = sigmoid(inputGate[i]);
  }

  if (usePeephole) addPeephole(forgetGate, w.cellToForget!, cellStateIn, n);
  if (useLayerNorm) layerNorm(forgetGate, w.forgetLayerNorm!, w.forgetGateBias, nCell, nBatch);
  for (let i = 0; i < n; i++) forgetGate[i] = sigmoid(forgetGate[i]);

  if (useLayerNorm) layerNorm(cellGate, w.cellLayerNorm!, w.cellBias, nCell, nBatch);
  for (let i = 0; i < n; i++) cellStateOut[i] = forgetGate[i] * cellStateIn[i];
  applyActivation(cellGate, cellGate, n, config.activation);
  if (inputGate) {
    for (let i = 0; i < n; i++) cellStateOut[i] += cellGate[i] * inputGate[i];
  } else {
    for (let i = 0; i < n; i++) {
      forgetGate[i] = 1 - forgetGate[i];
      cellStateOut[i] += cellGate[i] * forgetGate[i];
    }
  }
  if (config.cellClip > 0) clip(cellStateOut, n, config.cellClip);

  if (usePeephole) addPeephole(outputGate, w.cellToOutput!, cellStateOut, n);
  if (useLayerNorm) layerNorm(outputGate, w.outputLayerNorm!, w.outputGateBias, nCell, nBatch);
  for (let i = 0; i < n; i++) outputGate[i] = sigmoid(outputGate[i]);
  applyActivation(cellStateOut, cellGate, n, config.activation);
  for (let i = 0; i < n; i++) outputGate[i] *= cellGate[i];

  const outputSize = nBatch * nOutput;
  if (w.projectionWeights !== null) {
    if (w.projectionBias !== null) assignRows(output, w.projectionBias, nBatch);
    else output.fill(0, 0, outputSize);
    matrixBatchVectorMultiplyAccumulate(
      w.projectionWeights,
      nOutput,
      nCell,
      outputGate,
      nBatch,
      output,
    );
    if (config.projClip > 0) clip(output, outputSize, config.projClip);
  } else {
    output.set(outputGate.subarray(0, outputSize));
  }
  outputs.outputStateOut.set(output.subarray(0, outputSize));
}
