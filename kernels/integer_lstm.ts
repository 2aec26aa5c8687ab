/**
 * The integer LSTM cell of NNAPI QUANTIZED_LSTM (HAL 1.3; Android 11 `QLSTM.cpp`, after
 * TFLite's `EvalInteger8x8_16`): int8 input and output state, int8 weights, int32 biases, an
 * int16 cell state scaled by 2^cellShift, and int16 gates, Q3.12 before their activations
 * and Q0.15 after. Matrix products accumulate in int32 and are rescaled to each gate's
 * intermediate scale with quantized multipliers; sigmoid and tanh are gemmlowp's 16-bit
 * fixed-point ones; scales are combined in float32 as the C++ code does. Bit-exact with
 * Android's reference where that is well defined. Where it is not, the cell follows TFLite
 * and the operation's documented meaning:
 * - peephole weights read the previous cell state for the input and forget gates and the new
 *   one for the output gate, over numUnits elements (Android reads the not yet written
 *   output buffer, over outputSize elements);
 * - without layer normalization the gate biases join the matrix products (Android drops
 *   them: its biases reach the gates only through layer normalization);
 * - the hidden state is q = h / scale + zeroPoint and the projection takes that zero point
 *   out (Android subtracts it there and adds it back: the same results when it is 0);
 * - the projection clip is in units of the output state's scale, around its zero point
 *   (Android divides it by the projection weights' scale);
 * - layer normalization guards a variance below 1 with max(1, 10000 x weights scale) as
 *   TFLite does (Android's min(1, ...) hands a variance of 0 to the inverse square root).
 */
import {
  clamp,
  multiplyByQuantizedMultiplier,
  type QuantizedMultiplier,
  quantizeMultiplier,
  roundingDivideByPOT,
} from "./fixed_point.ts";
import { getInvSqrtQuantizedMultiplierExp } from "./gemmlowp_fixed_point.ts";
import { logistic16, tanh16 } from "./quantized_lstm.ts";

const INT16_MIN = -32768;
const INT16_MAX = 32767;
/** Q0.15 one, as the reference's `Sub1Vector` spells it. */
const ONE_Q15 = 32767;

/** Quantized data with the scale (and zero point) that give it meaning. */
export interface Quantized<T> {
  data: T;
  scale: number;
  zeroPoint: number;
}

/** The operands of one gate. */
export interface IntegerLstmGate {
  /** [numUnits, inputSize]. */
  inputWeights: Quantized<Int8Array>;
  /** [numUnits, outputSize]. */
  recurrentWeights: Quantized<Int8Array>;
  /** [numUnits]: added by layer normalization when there is one, else to the products. */
  bias: Int32Array;
  /** [numUnits] peephole weights times the cell state, or null. */
  peephole: Quantized<Int16Array> | null;
  /** [numUnits] layer-normalization weights, or null. */
  layerNorm: Quantized<Int16Array> | null;
  /** Scale of the gate's summed products (Q3.12, i.e. 2^-12, without layer norm). */
  intermediateScale: number;
}

/** The cell's weights and parameters, constant from step to step. */
export interface IntegerLstmCell {
  /** Null with CIFG (coupled input and forget gates): the input gate is 1 - forget. */
  inputGate: IntegerLstmGate | null;
  forgetGate: IntegerLstmGate;
  cellGate: IntegerLstmGate;
  outputGate: IntegerLstmGate;
  /** [outputSize, numUnits] weights and an optional [outputSize] bias, or null. */
  projection: { weights: Quantized<Int8Array>; bias: Int32Array | null } | null;
  /** Bound of |cell state| in real units; 0: none. */
  cellClip: number;
  /** Bound of |projected output| in real units; 0: none. */
  projectionClip: number;
  /** Quantization of the hidden state o * tanh(c), the input of the projection. */
  hiddenScale: number;
  hiddenZeroPoint: number;
}

/** One time step's sizes, inputs and outputs. */
export interface IntegerLstmStep {
  batch: number;
  inputSize: number;
  numUnits: number;
  outputSize: number;
  /** [batch, inputSize]. */
  input: Quantized<Int8Array>;
  /** [batch, outputSize]; the outputs are quantized as it is. */
  outputStateIn: Quantized<Int8Array>;
  /** [batch, numUnits], scale a power of two from 2^-15 to 2^-9. */
  cellStateIn: Quantized<Int16Array>;
  outputStateOut: Int8Array;
  cellStateOut: Int16Array;
  output: Int8Array;
}

/**
 * The exponent k of a scale 2^k (NNAPI `CheckedLog2`: within 1e-3 of an integer), or
 * undefined when the scale is no power of two.
 */
export function powerOfTwoExponent(scale: number): number | undefined {
  const log2 = Math.log2(Math.fround(scale));
  const rounded = Math.round(log2);
  return Math.abs(log2 - rounded) < 1e-3 ? rounded : undefined;
}

/** NNAPI `QuantizeMultiplier`: multipliers below 2^-31 flush to zero. */
function multiplierOf(real: number): QuantizedMultiplier {
  const q = quantizeMultiplier(real);
  return q.shift < -31 ? { multiplier: 0, shift: 0 } : q;
}

/** a * b / divisor as the reference computes it: float32 scales, float32 arithmetic. */
function scaleRatio(a: number, b: number, divisor: number): number {
  const f = Math.fround;
  return f(f(f(a) * f(b)) / f(divisor));
}

function wrap16(x: number): number {
  return (x << 16) >> 16;
}

/**
 * `bias - zeroPoint x rowSum(weights)` per row (int32 wrap-around, as the C++): folds the
 * vector's zero point into the bias so the products can use the raw int8 values.
 */
function foldZeroPoint(
  weights: Int8Array,
  shape: { rows: number; cols: number },
  zeroPoint: number,
  bias: Int32Array | null,
): Int32Array {
  const folded = new Int32Array(shape.rows);
  for (let r = 0; r < shape.rows; r++) {
    let rowSum = 0;
    for (let c = 0; c < shape.cols; c++) rowSum += weights[r * shape.cols + c];
    folded[r] = ((bias?.[r] ?? 0) + Math.imul(rowSum | 0, -zeroPoint)) | 0;
  }
  return folded;
}

/**
 * `out[b, r] = clamp(out[b, r] + rescale(bias[r] + sum_c vector[b, c] * weights[r, c]) +
 * zeroPoint)` (the reference's `MatrixBatchVectorMultiplyAccumulate`), int32 accumulation.
 */
function accumulateProducts(
  vector: Int8Array,
  weights: Int8Array,
  out: Int16Array | Int8Array,
  options: {
    bias: Int32Array;
    multiplier: QuantizedMultiplier;
    shape: { batch: number; rows: number; cols: number };
    zeroPoint: number;
  },
): void {
  const { batch, rows, cols } = options.shape;
  const { multiplier, shift } = options.multiplier;
  const [min, max] = out instanceof Int16Array ? [INT16_MIN, INT16_MAX] : [-128, 127];
  for (let b = 0; b < batch; b++) {
    for (let r = 0; r < rows; r++) {
      let acc = options.bias[r];
      for (let c = 0; c < cols; c++) acc += vector[b * cols + c] * weights[r * cols + c];
      const rescaled = multiplyByQuantizedMultiplier(acc | 0, multiplier, shift);
      const i = b * rows + r;
      out[i] = clamp(rescaled + options.zeroPoint + out[i], min, max);
    }
  }
}

/** C++ integer division by a positive divisor: truncates toward zero, exactly. */
function divideTruncating(numerator: number, divisor: number): number {
  let q = Math.trunc(numerator / divisor);
  // The float quotient may round across an integer; step back to the exact one.
  if (numerator >= 0) {
    if (q * divisor > numerator) q--;
    else if ((q + 1) * divisor <= numerator) q++;
  } else {
    if (q * divisor < numerator) q++;
    else if ((q - 1) * divisor >= numerator) q--;
  }
  return q;
}

/**
 * The reference's `ApplyLayerNorm` on each batch row of `gate` (in place): normalize to mean
 * 0 and variance 1 with 10 extra fraction bits, times the weights, plus the bias, rescaled
 * by the weights' scale into Q3.12.
 */
export function applyLayerNorm(
  gate: Int16Array,
  norm: { weights: Quantized<Int16Array>; bias: Int32Array },
  shape: { batch: number; units: number },
): void {
  const { batch, units } = shape;
  const { weights, bias } = norm;
  const { multiplier, shift } = multiplierOf(Math.fround(weights.scale));
  const varianceGuard = Math.max(1, Math.trunc(Math.fround(10000 * Math.fround(weights.scale))));
  const twoPow20 = 1 << 20;
  for (let b = 0; b < batch; b++) {
    const row = gate.subarray(b * units, (b + 1) * units);
    let sum = 0;
    let sumOfSquares = 0;
    for (const v of row) {
      sum += v;
      sumOfSquares += v * v;
    }
    const mean = divideTruncating(sum * 1024, units);
    const variance = sumOfSquares * Math.trunc(twoPow20 / units) - mean * mean;
    let variance32 = divideTruncating(variance, twoPow20) | 0;
    if (variance32 < 1) variance32 = varianceGuard;
    const inverse = getInvSqrtQuantizedMultiplierExp(variance32, -1);
    for (let j = 0; j < units; j++) {
      const shifted = 1024 * row[j] - mean;
      const normalized = multiplyByQuantizedMultiplier(shifted, inverse.multiplier, inverse.shift);
      const weighted = (Math.imul(normalized, weights.data[j]) + bias[j]) | 0;
      const rounded = divideTruncating(weighted > 0 ? weighted + 512 : weighted - 512, 1024);
      const q312 = multiplyByQuantizedMultiplier(rounded, multiplier, shift + 12);
      row[j] = clamp(q312, INT16_MIN, INT16_MAX);
    }
  }
}

/** A gate before its activation, Q3.12: products, peephole, layer normalization. */
function gateInput(
  gate: IntegerLstmGate,
  step: IntegerLstmStep,
  options: { cellState: Int16Array; cellShift: number },
): Int16Array {
  const { batch, inputSize, numUnits, outputSize, input, outputStateIn } = step;
  const out = new Int16Array(batch * numUnits);
  const products = [
    [input, gate.inputWeights, inputSize, gate.layerNorm ? null : gate.bias],
    [outputStateIn, gate.recurrentWeights, outputSize, null],
  ] as const;
  for (const [vector, weights, cols, bias] of products) {
    accumulateProducts(vector.data, weights.data, out, {
      bias: foldZeroPoint(weights.data, { rows: numUnits, cols }, vector.zeroPoint, bias),
      multiplier: multiplierOf(scaleRatio(weights.scale, vector.scale, gate.intermediateScale)),
      shape: { batch, rows: numUnits, cols },
      zeroPoint: 0,
    });
  }
  if (gate.peephole) {
    const scale = Math.fround(
      2 ** options.cellShift * Math.fround(gate.peephole.scale) /
        Math.fround(gate.intermediateScale),
    );
    const { multiplier, shift } = multiplierOf(scale);
    for (let i = 0; i < out.length; i++) {
      const product = gate.peephole.data[i % numUnits] * options.cellState[i];
      const rescaled = multiplyByQuantizedMultiplier(product, multiplier, shift);
      out[i] = clamp(rescaled + out[i], INT16_MIN, INT16_MAX);
    }
  }
  if (gate.layerNorm) {
    applyLayerNorm(out, { weights: gate.layerNorm, bias: gate.bias }, { batch, units: numUnits });
  }
  return out;
}

function sigmoidInPlace(gate: Int16Array): Int16Array {
  for (let i = 0; i < gate.length; i++) gate[i] = logistic16(gate[i], 3);
  return gate;
}

/** The quantized bound of a clip in real units (0: none), truncated as the C++ casts. */
function quantizedClip(clip: number, scale: number, limit: number): number {
  if (!(clip > 0)) return 0;
  return Math.trunc(clamp(Math.fround(Math.fround(clip) / Math.fround(scale)), -limit - 1, limit));
}

/** The hidden state o * tanh(c) as int8 in the hidden quantization. */
function hiddenState(
  cell: IntegerLstmCell,
  outputGate: Int16Array,
  options: { cellState: Int16Array; cellShift: number },
): Int8Array {
  const hiddenScale = Math.fround(2 ** -15 / Math.fround(cell.hiddenScale) * 2 ** -15);
  const { multiplier, shift } = multiplierOf(hiddenScale);
  const hidden = new Int8Array(outputGate.length);
  for (let i = 0; i < hidden.length; i++) {
    const t = tanh16(options.cellState[i], options.cellShift + 15);
    const q = multiplyByQuantizedMultiplier(outputGate[i] * t, multiplier, shift);
    hidden[i] = clamp(q + cell.hiddenZeroPoint, -128, 127);
  }
  return hidden;
}

/** The output: the projected hidden state (clipped) or, without projection, the hidden one. */
function project(cell: IntegerLstmCell, hidden: Int8Array, step: IntegerLstmStep): void {
  const { batch, numUnits, outputSize, output, outputStateIn } = step;
  if (!cell.projection) {
    output.set(hidden);
    return;
  }
  const { weights, bias } = cell.projection;
  output.fill(0);
  accumulateProducts(hidden, weights.data, output, {
    bias: foldZeroPoint(
      weights.data,
      { rows: outputSize, cols: numUnits },
      cell.hiddenZeroPoint,
      bias,
    ),
    multiplier: multiplierOf(scaleRatio(weights.scale, cell.hiddenScale, outputStateIn.scale)),
    shape: { batch, rows: outputSize, cols: numUnits },
    zeroPoint: outputStateIn.zeroPoint,
  });
  const clip = quantizedClip(cell.projectionClip, outputStateIn.scale, 127);
  if (clip > 0) {
    const zeroPoint = outputStateIn.zeroPoint;
    for (let i = 0; i < output.length; i++) {
      output[i] = clamp(
        output[i],
        Math.max(-128, zeroPoint - clip),
        Math.min(127, zeroPoint + clip),
      );
    }
  }
}

/**
 * One QUANTIZED_LSTM time step: the forget, cell and input gates, the new cell state, the
 * output gate, the hidden state and its projection. Writes the three outputs of `step`.
 */
export function integerLstmStep(cell: IntegerLstmCell, step: IntegerLstmStep): void {
  const cellShift = powerOfTwoExponent(step.cellStateIn.scale);
  if (cellShift === undefined || cellShift < -15 || cellShift > -9) {
    throw new RangeError(`cell state scale ${step.cellStateIn.scale} is not 2^-15 .. 2^-9`);
  }
  const previous = { cellState: step.cellStateIn.data, cellShift };
  const forget = sigmoidInPlace(gateInput(cell.forgetGate, step, previous));
  const cellGate = gateInput(cell.cellGate, step, previous);
  for (let i = 0; i < cellGate.length; i++) cellGate[i] = tanh16(cellGate[i], 3);
  const inputGate = cell.inputGate
    ? sigmoidInPlace(gateInput(cell.inputGate, step, previous))
    : forget.map((f) => ONE_Q15 - f);

  const cellState = step.cellStateOut;
  const cellClip = quantizedClip(cell.cellClip, step.cellStateIn.scale, INT16_MAX);
  for (let i = 0; i < cellState.length; i++) {
    const kept = wrap16(roundingDivideByPOT(forget[i] * previous.cellState[i], 15));
    const added = wrap16(roundingDivideByPOT(inputGate[i] * cellGate[i], 30 + cellShift));
    const c = clamp(kept + added, INT16_MIN, INT16_MAX);
    cellState[i] = cellClip > 0 ? clamp(c, -cellClip, cellClip) : c;
  }

  const outputGate = sigmoidInPlace(gateInput(cell.outputGate, step, { cellState, cellShift }));
  project(cell, hiddenState(cell, outputGate, { cellState, cellShift }), step);
  step.outputStateOut.set(step.output);
}
