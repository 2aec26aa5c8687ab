/**
 * Normalizations along one axis: L2_NORMALIZATION (float, and uint8 with TFLite's exact
 * inverse-square-root fixed point) and LOCAL_RESPONSE_NORMALIZATION (float).
 * Shapes are given as outer * axis * inner element counts around the normalized axis.
 */
import {
  getInvSqrtQuantizedMultiplierExp,
  multiplyByQuantizedMultiplierSmallerThanOneExp,
} from "./gemmlowp_fixed_point.ts";
import type { AxisSplit } from "./axis_split.ts";

/**
 * Smallest norm divided by, so that an all-zero vector maps to zeros instead of NaN: HAL 1.3
 * defines that result ("logical zero"), earlier HALs left it undefined.
 */
const L2_EPSILON = 1e-6;

/**
 * 1/sqrt(sum) for sums of 0 and 1, as TFLite's `GetInvSqrtQuantizedMultiplierExp` has special
 * cased them since 2020 (Android 11): a multiplier just below 1 and no shift. Android 10's
 * version overflowed for a sum of 1 (one element one step from the zero point came out with
 * the wrong sign); a sum of 0 (every element at the zero point) gives logical zero either way.
 */
const INV_SQRT_OF_ONE = { multiplier: 0x7fffffff, shift: 0 };

/** Float L2 normalization: x / max(sqrt(sum x^2), 1e-6) along the axis. */
export function l2NormalizationFloat32(
  input: Float32Array,
  split: AxisSplit,
  out: Float32Array,
): void {
  const { outer, axis, inner } = split;
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < inner; i++) {
      const start = o * axis * inner + i;
      const end = start + axis * inner;
      let sum = 0;
      for (let p = start; p < end; p += inner) sum += input[p] * input[p];
      const norm = Math.max(Math.sqrt(sum), L2_EPSILON);
      for (let p = start; p < end; p += inner) out[p] = input[p] / norm;
    }
  }
}

/**
 * Quantized (uint8) L2 normalization as TFLite's uint8 `L2Normalization`: output scale
 * 1/128, zero point 128. A vector whose elements all sit at the input zero point gives the
 * output zero point 128 (logical zero, as HAL 1.3 defines it).
 */
export function l2NormalizationQuant8(
  input: Uint8Array,
  zeroPoint: number,
  split: AxisSplit,
  out: Uint8Array,
): void {
  const { outer, axis, inner } = split;
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < inner; i++) {
      const start = o * axis * inner + i;
      const end = start + axis * inner;
      let sum = 0;
      for (let p = start; p < end; p += inner) {
        const diff = input[p] - zeroPoint;
        sum = (sum + diff * diff) | 0;
      }
      const { multiplier, shift } = sum <= 1
        ? INV_SQRT_OF_ONE
        : getInvSqrtQuantizedMultiplierExp(sum, -1);
      for (let p = start; p < end; p += inner) {
        const diff = input[p] - zeroPoint;
        const v = multiplyByQuantizedMultiplierSmallerThanOneExp(128 * diff, multiplier, shift) +
          128;
        out[p] = v < 0 ? 0 : v > 255 ? 255 : v;
      }
    }
  }
}

/** LOCAL_RESPONSE_NORMALIZATION parameters. */
export interface LrnParams {
  radius: number;
  bias: number;
  alpha: number;
  beta: number;
}

/**
 * Float local response normalization:
 * x_i * (bias + alpha * sum_{|j-i| <= radius} x_j^2) ^ -beta along the axis.
 */
export function localResponseNormalizationFloat32(
  input: Float32Array,
  split: AxisSplit,
  params: LrnParams,
  out: Float32Array,
): void {
  const { outer, axis, inner } = split;
  const { radius, bias, alpha, beta } = params;
  const squares = new Float64Array(axis);
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < inner; i++) {
      const base = o * axis * inner + i;
      for (let c = 0; c < axis; c++) {
        const x = input[base + c * inner];
        squares[c] = x * x;
      }
      for (let c = 0; c < axis; c++) {
        const from = Math.max(0, c - radius);
        const to = Math.min(axis, c + radius + 1);
        let sum = 0;
        for (let d = from; d < to; d++) sum += squares[d];
        const p = base + c * inner;
        out[p] = input[p] * Math.pow(bias + alpha * sum, -beta);
      }
    }
  }
}
