/**
 * SOFTMAX along any axis: float, and uint8 with the exact gemmlowp fixed-point arithmetic of
 * TFLite `optimized_ops::Softmax` as the NNAPI CPU reference runs it (input_beta_multiplier
 * and left shift, diff_min, Q5.26 differences, Q12.19 accumulation, output scale 1/256).
 */
import type { AxisSplit } from "./axis_split.ts";
import {
  multiplyByQuantizedMultiplierGreaterThanOne,
  quantizeMultiplierGreaterThanOne,
  roundingDivideByPOT,
} from "./fixed_point.ts";
import {
  calculateInputRadius,
  expOnNegativeValues,
  fixedMul,
  getReciprocal,
  rescale,
} from "./gemmlowp_fixed_point.ts";

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

/** Fixed-point parameters of quantized softmax, with the table they determine. */
export interface SoftmaxQuant8Params {
  inputMultiplier: number;
  inputLeftShift: number;
  /** Differences from the row maximum below this contribute nothing. */
  diffMin: number;
  /** exp(diff) in Q0.31 for every possible difference 0..-255 (-1 marks "below diffMin"). */
  expOfDiff: Int32Array;
}

/**
 * The parameters NNAPI derives from beta and the input scale; null when the multiplier is
 * not above 1 (`QuantizeMultiplierGreaterThanOne` fails and so does NNAPI). Computing them
 * builds a 256-entry table: do it once per compilation where beta and the scale are known.
 */
export function softmaxQuant8Params(beta: number, inputScale: number): SoftmaxQuant8Params | null {
  const real = Math.min(
    beta * inputScale * 2 ** (31 - SCALED_DIFF_INTEGER_BITS),
    2 ** 31 - 1,
  );
  const q = quantizeMultiplierGreaterThanOne(real);
  if (!q) return null;
  const diffMin = -calculateInputRadius(SCALED_DIFF_INTEGER_BITS, q.shift);
  const expOfDiff = new Int32Array(256);
  for (let d = 0; d < 256; d++) {
    const diff = -d;
    expOfDiff[d] = diff >= diffMin
      ? expOnNegativeValues(
        multiplyByQuantizedMultiplierGreaterThanOne(diff, q.multiplier, q.shift),
        SCALED_DIFF_INTEGER_BITS,
      )
      : -1;
  }
  return { inputMultiplier: q.multiplier, inputLeftShift: q.shift, diffMin, expOfDiff };
}

/** Quantized softmax on uint8 (output scale 1/256, zero point 0). */
export function softmaxQuant8(
  input: Uint8Array,
  split: AxisSplit,
  p: SoftmaxQuant8Params,
  out: Uint8Array,
): void {
  const { expOfDiff } = p;
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
