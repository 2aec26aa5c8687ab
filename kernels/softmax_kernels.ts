/**
 * SOFTMAX along any axis: float, and uint8 with the exact gemmlowp fixed-point arithmetic of
 * TFLite `optimized_ops::Softmax` as the NNAPI CPU reference runs it (input_beta_multiplier
 * and left shift, diff_min, Q5.26 differences, Q12.19 accumulation, output scale 1/256).
 */
import { quantizeMultiplierGreaterThanOne, roundingDivideByPOT } from "./fixed_point.ts";
import {
  calculateInputRadius,
  expOnNegativeValues,
  fixedMul,
  getReciprocal,
  multiplyByQuantizedMultiplierGreaterThanOne,
  rescale,
} from "./gemmlowp_fixed_point.ts";

/** Sizes around the softmax axis: outer * axis * inner elements. */
export interface AxisSplit {
  outer: number;
  axis: number;
  inner: number;
}

/** Splits a shape around `axis` (already non-negative). */
export function splitAtAxis(shape: readonly number[], axis: number): AxisSplit {
  let outer = 1;
  let inner = 1;
  for (let d = 0; d < axis; d++) outer *= shape[d];
  for (let d = axis + 1; d < shape.length; d++) inner *= shape[d];
  return { outer, axis: shape[axis], inner };
}

/** Float softmax: exp((x - max) * beta) / sum along the axis. */
export function softmaxFloat32(
  input: Float32Array,
  split: AxisSplit,
  beta: number,
  out: Float32Array,
): void {
  const { outer, axis, inner } = split;
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < inner; i++) {
      const start = o * axis * inner + i;
      const end = start + axis * inner;
      let max = -Infinity;
      for (let p = start; p < end; p += inner) if (input[p] > max) max = input[p];
      let sum = 0;
      for (let p = start; p < end; p += inner) {
        const e = Math.exp((input[p] - max) * beta);
        out[p] = e;
        sum += e;
      }
      for (let p = start; p < end; p += inner) out[p] /= sum;
    }
  }
}

const SCALED_DIFF_INTEGER_BITS = 5;
const ACCUMULATION_INTEGER_BITS = 12;

/** Fixed-point parameters of quantized softmax. */
export interface SoftmaxQuant8Params {
  inputMultiplier: number;
  inputLeftShift: number;
  /** Differences from the row maximum below this contribute nothing. */
  diffMin: number;
}

/**
 * The parameters NNAPI derives from beta and the input scale; null when the multiplier is
 * not above 1 (`QuantizeMultiplierGreaterThanOne` fails and so does NNAPI).
 */
export function softmaxQuant8Params(beta: number, inputScale: number): SoftmaxQuant8Params | null {
  const real = Math.min(
    beta * inputScale * 2 ** (31 - SCALED_DIFF_INTEGER_BITS),
    2 ** 31 - 1,
  );
  const q = quantizeMultiplierGreaterThanOne(real);
  if (!q) return null;
  return {
    inputMultiplier: q.multiplier,
    inputLeftShift: q.shift,
    diffMin: -calculateInputRadius(SCALED_DIFF_INTEGER_BITS, q.shift),
  };
}

/** Quantized softmax on uint8 (output scale 1/256, zero point 0). */
export function softmaxQuant8(
  input: Uint8Array,
  split: AxisSplit,
  p: SoftmaxQuant8Params,
  out: Uint8Array,
): void {
  // exp(diff) in Q0.31 for every possible difference 0..-255 (-1 marks "below diffMin").
  const expOfDiff = new Int32Array(256);
  for (let d = 0; d < 256; d++) {
    const diff = -d;
    expOfDiff[d] = diff >= p.diffMin
      ? expOnNegativeValues(
        multiplyByQuantizedMultiplierGreaterThanOne(diff, p.inputMultiplier, p.inputLeftShift),
        SCALED_DIFF_INTEGER_BITS,
      )
      : -1;
  }
  const { outer, axis, inner } = split;
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < inner; i++) {
      const start = o * axis * inner + i;
      const end = start + axis * inner;
      let max = 0;
      for (let q = start; q < end; q += inner) if (input[q] > max) max = input[q];
      let sumOfExps = 0;
      for (let q = start; q < end; q += inner) {
        const e = expOfDiff[max - input[q]];
        if (e >= 0) sumOfExps = (sumOfExps + rescale(e, 0, ACCUMULATION_INTEGER_BITS)) | 0;
      }
      const { scale, numBitsOverUnit } = getReciprocal(sumOfExps, ACCUMULATION_INTEGER_BITS);
      const exponent = numBitsOverUnit + 31 - 8;
      for (let q = start; q < end; q += inner) {
        const e = expOfDiff[max - input[q]];
        if (e < 0) {
          out[q] = 0;
        } else {
          const v = roundingDivideByPOT(fixedMul(scale, e), exponent);
          out[q] = v < 0 ? 0 : v > 255 ? 255 : v;
        }
      }
    }
  }
}
