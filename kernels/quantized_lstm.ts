/**
 * The quantized LSTM cell of NNAPI QUANTIZED_16BIT_LSTM (Android 10 `QuantizedLSTM.cpp`,
 * after TFLite's legacy `reference_ops::LstmCell<4>`): a fully connected layer on the
 * concatenated uint8 input and previous output with int32 accumulators, down-scaled to
 * int16 Q3.12 gate pre-activations, then the gates and the cell state in 16-bit
 * fixed point using gemmlowp's `FixedPoint<int16_t, N>` logistic and tanh. A fixed-point
 * value is its raw int16 held in a JS number; the number of integer bits is passed
 * explicitly where the C++ templates carry it in the type. Bit-exact with the C++ code.
 */
import { multiplyByQuantizedMultiplier, roundingDivideByPOT } from "./fixed_point.ts";

const INT16_MAX = 32767;
const INT16_MIN = -32768;

/** C++ conversion of an int to int16_t (wraps). */
function wrap16(x: number): number {
  return (x << 16) >> 16;
}

/** gemmlowp `SaturatingRoundingDoublingHighMul` on int16. */
function mul16(a: number, b: number): number {
  if (a === INT16_MIN && b === INT16_MIN) return INT16_MAX;
  const ab = a * b;
  const nudge = ab >= 0 ? 1 << 14 : 1 - (1 << 14);
  return wrap16(Math.trunc((ab + nudge) / (1 << 15)));
}

/** gemmlowp `SaturatingAdd` on int16. */
function saturatingAdd16(a: number, b: number): number {
  return Math.max(INT16_MIN, Math.min(INT16_MAX, a + b));
}

/** gemmlowp `SaturatingRoundingMultiplyByPOT<exponent>` on int16. */
function saturatingRoundingMultiplyByPOT16(x: number, exponent: number): number {
  if (exponent === 0) return x;
  if (exponent < 0) return roundingDivideByPOT(x, -exponent);
  const threshold = (1 << (15 - exponent)) - 1;
  if (x > threshold) return INT16_MAX;
  if (x < -threshold) return INT16_MIN;
  return wrap16(x << exponent);
}

/** gemmlowp `Rescale<dstIntegerBits>` of an int16 value with `srcIntegerBits` integer bits. */
function rescale16(x: number, srcIntegerBits: number, dstIntegerBits: number): number {
  return saturatingRoundingMultiplyByPOT16(x, srcIntegerBits - dstIntegerBits);
}

/** gemmlowp `RescaleConstantInitializer`: an int32 fixed-point constant as int16. */
function constant16(int32Value: number): number {
  return wrap16(roundingDivideByPOT(int32Value, 16));
}

/** gemmlowp `RoundingHalfSum` on int16. */
function roundingHalfSum16(a: number, b: number): number {
  const sum = a + b;
  return wrap16(Math.trunc((sum + (sum >= 0 ? 1 : -1)) / 2));
}

const ONE_Q0 = INT16_MAX;
const EXP_MINUS_ONE_EIGHTH = constant16(1895147668);
const ONE_THIRD = constant16(715827883);
const CONSTANT_48_OVER_17 = constant16(1515870810);
const CONSTANT_NEG_32_OVER_17 = constant16(-1010580540);
const ONE_HALF = constant16(1 << 30);
/** exp(-2^k) multipliers of the barrel shifter, k = -2..4. */
const EXP_BARREL: readonly (readonly [number, number])[] = [
  [-2, constant16(1672461947)],
  [-1, constant16(1302514674)],
  [0, constant16(790015084)],
  [1, constant16(290630308)],
  [2, constant16(39332535)],
  [3, constant16(720401)],
  [4, constant16(242)],
];

/** exp(a) for a in [-1/4, 0), both Q0.15. */
function expOnIntervalBetweenNegativeOneQuarterAnd0Excl(a: number): number {
  const x = wrap16(a + (1 << 12));
  const x2 = mul16(x, x);
  const x3 = mul16(x2, x);
  const x4 = mul16(x2, x2);
  const x4Over4 = saturatingRoundingMultiplyByPOT16(x4, -2);
  const poly = saturatingRoundingMultiplyByPOT16(
    wrap16(mul16(wrap16(x4Over4 + x3), ONE_THIRD) + x2),
    -1,
  );
  return wrap16(EXP_MINUS_ONE_EIGHTH + mul16(EXP_MINUS_ONE_EIGHTH, wrap16(x + poly)));
}

/** gemmlowp `exp_on_negative_values` on int16: exp(a) in Q0.15 for a <= 0. */
function expOnNegativeValues(a: number, integerBits: number): number {
  const fractionalBits = 15 - integerBits;
  const oneQuarter = 1 << (fractionalBits - 2);
  const mask = oneQuarter - 1;
  const aModQuarterMinusOneQuarter = wrap16((a & mask) - oneQuarter);
  let result = expOnIntervalBetweenNegativeOneQuarterAnd0Excl(
    rescale16(aModQuarterMinusOneQuarter, integerBits, 0),
  );
  const remainder = wrap16(aModQuarterMinusOneQuarter - a);
  for (const [exponent, multiplier] of EXP_BARREL) {
    if (integerBits > exponent && (remainder & (1 << (fractionalBits + exponent))) !== 0) {
      result = mul16(result, multiplier);
    }
  }
  if (integerBits > 5 && a < -(1 << (20 - integerBits))) result = 0;
  return a === 0 ? ONE_Q0 : result;
}

/** Newton-Raphson 1/(1 + a) in Q2.13 for a in (0, 1) Q0.15. */
function reciprocalOfOnePlusX(a: number): number {
  const halfDenominator = roundingHalfSum16(a, ONE_Q0);
  const one = 1 << 13;
  let x = wrap16(CONSTANT_48_OVER_17 + mul16(halfDenominator, CONSTANT_NEG_32_OVER_17));
  for (let i = 0; i < 3; i++) {
    const halfDenominatorTimesX = mul16(halfDenominator, x);
    const oneMinusHalfDenominatorTimesX = wrap16(one - halfDenominatorTimesX);
    x = wrap16(x + rescale16(mul16(x, oneMinusHalfDenominatorTimesX), 4, 2));
  }
  return x;
}

/** gemmlowp `logistic` of an int16 value with `integerBits` integer bits; Q0.15 result. */
export function logistic16(a: number, integerBits: number): number {
  if (a === 0) return ONE_HALF;
  const positive = a > 0;
  const absInput = positive ? a : wrap16(-a);
  const exp = expOnNegativeValues(wrap16(-absInput), integerBits);
  // one_over_one_plus_x_for_x_in_0_1: ExactMulByPot<-1> then Rescale<0> from 1 integer bit.
  const resultIfPositive = rescale16(reciprocalOfOnePlusX(exp), 1, 0);
  return positive ? resultIfPositive : wrap16(ONE_Q0 - resultIfPositive);
}

/** gemmlowp `tanh` of an int16 value with `integerBits` integer bits; Q0.15 result. */
export function tanh16(a: number, integerBits: number): number {
  if (a === 0) return 0;
  const negative = a < 0;
  const n = negative ? a : wrap16(-a);
  // neg_tanh_on_negative_values: ExactMulByPot<1> adds an integer bit.
  const exp = expOnNegativeValues(n, integerBits + 1);
  // one_minus_x_over_one_plus_x_for_x_in_0_1.
  const t = rescale16(wrap16(reciprocalOfOnePlusX(exp) - (1 << 13)), 2, 0);
  return negative ? wrap16(-t) : t;
}

/** Sizes and quantization parameters of one quantized LSTM step. */
export interface QuantizedLstmConfig {
  numBatches: number;
  inputSize: number;
  outputSize: number;
  /** Zero point of every weight matrix. */
  weightsZeroPoint: number;
  /** The fully connected layer's output multiplier (`QuantizeMultiplier(4096 * biasScale)`). */
  accumMultiplier: number;
  /** Its signed shift (left > 0). */
  accumShift: number;
}

/** The operands of one step. */
export interface QuantizedLstmOperands {
  /** [numBatches, inputSize] uint8, zero point 128. */
  input: Uint8Array;
  /** [numBatches, outputSize] uint8, zero point 128. */
  prevOutput: Uint8Array;
  /** [4 * outputSize, inputSize] uint8: the input, cell, forget and output gate weights. */
  inputWeights: readonly Uint8Array[];
  /** [outputSize, outputSize] each, gates in the same order. */
  recurrentWeights: readonly Uint8Array[];
  /** [outputSize] int32 each, gates in the same order. */
  biases: readonly Int32Array[];
  /** [numBatches, outputSize] int16, 4 integer bits. */
  prevCellState: Int16Array;
  /** [numBatches, outputSize] int16 output. */
  cellStateOut: Int16Array;
  /** [numBatches, outputSize] uint8 output. */
  output: Uint8Array;
}

/** Number of integer bits of the cell state (the only value Android supports). */
export const STATE_INTEGER_BITS = 4;

/**
 * The reference's concatenated weights [4 * outputSize, outputSize + inputSize]: per gate
 * block, the recurrent weights in the first outputSize columns, the input weights after.
 */
function concatenateWeights(
  inputWeights: readonly Uint8Array[],
  recurrentWeights: readonly Uint8Array[],
  inputSize: number,
  outputSize: number,
): Uint8Array {
  const depth = inputSize + outputSize;
  const weights = new Uint8Array(4 * outputSize * depth);
  for (let gate = 0; gate < 4; gate++) {
    for (let r = 0; r < outputSize; r++) {
      const row = (gate * outputSize + r) * depth;
      const recurrent = recurrentWeights[gate].subarray(r * outputSize, (r + 1) * outputSize);
      weights.set(recurrent, row);
      weights.set(
        inputWeights[gate].subarray(r * inputSize, (r + 1) * inputSize),
        row + outputSize,
      );
    }
  }
  return weights;
}

/**
 * One quantized LSTM step. Gates are ordered input, cell (modulation), forget, output.
 * As in Android 10, the fully connected layer multiplies the row [input, prev_output]
 * (input first) by the concatenated weights, whose columns hold the recurrent weights
 * first: column d pairs with the row's element d whatever matrix either came from. This
 * C++ layout is kept as is, because the CTS expects its results bit for bit.
 */
export function quantizedLstmStep(config: QuantizedLstmConfig, operands: QuantizedLstmOperands) {
  const { numBatches, inputSize, outputSize, weightsZeroPoint } = config;
  const { input, prevOutput, biases } = operands;
  const depth = inputSize + outputSize;
  const weights = concatenateWeights(
    operands.inputWeights,
    operands.recurrentWeights,
    inputSize,
    outputSize,
  );
  const concat = new Int32Array(depth);
  const gates = new Int16Array(4 * outputSize);
  for (let b = 0; b < numBatches; b++) {
    for (let d = 0; d < inputSize; d++) concat[d] = input[b * inputSize + d] - 128;
    for (let d = 0; d < outputSize; d++) {
      concat[inputSize + d] = prevOutput[b * outputSize + d] - 128;
    }
    for (let out = 0; out < 4 * outputSize; out++) {
      let accum = biases[Math.floor(out / outputSize)][out % outputSize];
      const row = out * depth;
      for (let d = 0; d < depth; d++) accum += concat[d] * (weights[row + d] - weightsZeroPoint);
      accum = multiplyByQuantizedMultiplier(accum | 0, config.accumMultiplier, config.accumShift);
      gates[out] = Math.max(INT16_MIN, Math.min(INT16_MAX, accum));
    }
    for (let c = 0; c < outputSize; c++) {
      const inputGate = logistic16(gates[c], 3);
      const modulationGate = tanh16(gates[outputSize + c], 3);
      const forgetGate = logistic16(gates[2 * outputSize + c], 3);
      const outputGate = logistic16(gates[3 * outputSize + c], 3);
      const inputTimesModulation = mul16(inputGate, modulationGate);
      const prevState = operands.prevCellState[b * outputSize + c];
      const prevStateTimesForget = mul16(forgetGate, prevState);
      const newState = saturatingAdd16(
        rescale16(inputTimesModulation, 0, STATE_INTEGER_BITS),
        prevStateTimesForget,
      );
      const newStateQ3 = rescale16(newState, STATE_INTEGER_BITS, 3);
      const outputActivation = mul16(outputGate, tanh16(newStateQ3, 3));
      operands.cellStateOut[b * outputSize + c] = newState;
      const rescaled = roundingDivideByPOT(outputActivation, 8);
      operands.output[b * outputSize + c] = 128 + Math.max(-128, Math.min(127, rescaled));
    }
  }
}
