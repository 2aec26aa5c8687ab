/**
 * Activation kernels: the RELU family as clamps, LOGISTIC and TANH in float and in the
 * exact gemmlowp fixed-point form the NNAPI CPU reference uses for uint8 (TFLite
 * `optimized_ops::Logistic` / `Tanh` with kInputIntegerBits = 4).
 */
import {
  multiplyByQuantizedMultiplierGreaterThanOne,
  quantizeMultiplierGreaterThanOne,
  roundingDivideByPOT,
} from "./fixed_point.ts";
import { calculateInputRadius, fixedLogistic, fixedTanh } from "./gemmlowp_fixed_point.ts";

/** Largest finite float32 (C++ `std::numeric_limits<float>::max()`, RELU's upper bound). */
export const FLOAT32_MAX = 3.4028234663852886e38;

/**
 * Float clamp as NNAPI's `reluFloat`: min(max(lo, x), hi) with C++ `std::min/max`
 * semantics (NaN becomes `lo`).
 */
export function clampFloat32(input: Float32Array, out: Float32Array, lo: number, hi: number): void {
  const n = out.length;
  for (let i = 0; i < n; i++) {
    const x = input[i];
    const v = lo < x ? x : lo;
    out[i] = hi < v ? hi : v;
  }
}

/** Quantized clamp of the RELU family: bytes limited to [lo, hi]. */
export function clampQuant8(input: Uint8Array, out: Uint8Array, lo: number, hi: number): void {
  const n = out.length;
  for (let i = 0; i < n; i++) {
    const x = input[i];
    out[i] = x < lo ? lo : x > hi ? hi : x;
  }
}

/** Float logistic: 1 / (1 + exp(-x)). */
export function logisticFloat32(input: Float32Array, out: Float32Array): void {
  const n = out.length;
  for (let i = 0; i < n; i++) out[i] = 1 / (1 + Math.exp(-input[i]));
}

/** Float tanh. */
export function tanhFloat32(input: Float32Array, out: Float32Array): void {
  const n = out.length;
  for (let i = 0; i < n; i++) out[i] = Math.tanh(input[i]);
}

/** Input rescaling of quantized LOGISTIC/TANH: inputs become Q4.27 fixed-point values. */
export interface SigmoidQuant8Params {
  inputZeroPoint: number;
  inputMultiplier: number;
  inputLeftShift: number;
  /** Centered inputs at or beyond this magnitude saturate the output. */
  inputRangeRadius: number;
}

const INPUT_INTEGER_BITS = 4;

/**
 * The multiplier, shift and radius NNAPI derives from the input scale; null when the scale
 * is too small for `QuantizeMultiplierGreaterThanOne` (NNAPI then fails the execution).
 */
export function sigmoidQuant8Params(
  inputScale: number,
  inputZeroPoint: number,
): SigmoidQuant8Params | null {
  const q = quantizeMultiplierGreaterThanOne(inputScale * 2 ** (31 - INPUT_INTEGER_BITS));
  if (!q) return null;
  return {
    inputZeroPoint,
    inputMultiplier: q.multiplier,
    inputLeftShift: q.shift,
    inputRangeRadius: calculateInputRadius(INPUT_INTEGER_BITS, q.shift),
  };
}

/**
 * A 256-entry output table of quantized LOGISTIC/TANH: inputs at or beyond the radius
 * saturate to 0 or 255, the others get `inside(x)` of their Q4.27 value x (256 becomes 255).
 */
function sigmoidTable(p: SigmoidQuant8Params, inside: (x: number) => number): Uint8Array {
  const table = new Uint8Array(256);
  for (let q = 0; q < 256; q++) {
    const centered = q - p.inputZeroPoint;
    if (centered <= -p.inputRangeRadius) {
      table[q] = 0;
    } else if (centered >= p.inputRangeRadius) {
      table[q] = 255;
    } else {
      const v = inside(
        multiplyByQuantizedMultiplierGreaterThanOne(centered, p.inputMultiplier, p.inputLeftShift),
      );
      table[q] = v === 256 ? 255 : v;
    }
  }
  return table;
}

/** The 256-entry output table of quantized LOGISTIC (output scale 1/256, zero point 0). */
export function logisticQuant8Table(p: SigmoidQuant8Params): Uint8Array {
  // Q0.31 to Q23.8.
  return sigmoidTable(p, (x) => roundingDivideByPOT(fixedLogistic(x, INPUT_INTEGER_BITS), 23));
}

/** The 256-entry output table of quantized TANH (output scale 1/128, zero point 128). */
export function tanhQuant8Table(p: SigmoidQuant8Params): Uint8Array {
  // Q0.31 to Q24.7, recentered on 128.
  return sigmoidTable(p, (x) => roundingDivideByPOT(fixedTanh(x, INPUT_INTEGER_BITS), 24) + 128);
}

/** Maps every byte of `input` through a 256-entry table. */
export function lookupQuant8(input: Uint8Array, table: Uint8Array, out: Uint8Array): void {
  const n = out.length;
  for (let i = 0; i < n; i++) out[i] = table[input[i]];
}
