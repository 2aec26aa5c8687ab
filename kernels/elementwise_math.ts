/**
 * Elementwise kernels of the HAL 1.2 unary math, logical, CAST, SELECT and QUANTIZE
 * operations: plain loops over typed arrays, rounding as the NNAPI CPU reference does
 * (C `static_cast` truncation, `std::round` half away from zero, saturation to uint8).
 */
import { forEachBroadcastRow } from "./elementwise_binary.ts";
import { roundHalfAwayFromZero } from "./fixed_point.ts";
import type { Numbers, ReadonlyNumbers } from "./typed_arrays.ts";

// Each kernel is its own loop: one shared loop calling a function argument would see every
// function at one call site, which V8 then cannot inline (a call per element, ~20x slower).

/** ABS: |x|. */
export function absFloat32(input: Float32Array, out: Float32Array): void {
  for (let i = 0; i < out.length; i++) out[i] = Math.abs(input[i]);
}
/** EXP: e^x. */
export function expFloat32(input: Float32Array, out: Float32Array): void {
  for (let i = 0; i < out.length; i++) out[i] = Math.exp(input[i]);
}
/** erfc(z) for z >= 0: t exp(-z^2 + P(t)), t = 1 / (1 + z/2) (Numerical Recipes' erfcc). */
const ERFC_COEFFICIENTS = [
  -1.26551223,
  1.00002368,
  0.37409196,
  0.09678418,
  -0.18628806,
  0.27886807,
  -1.13520398,
  1.48851587,
  -0.82215223,
  0.17087277,
];

/**
 * erf(x) as 1 - erfc(|x|) with the Chebyshev-fitted erfc of Numerical Recipes (fractional
 * error below 1.2e-7 everywhere), its sign restored.
 */
export function erf(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  let p = 0;
  for (let i = ERFC_COEFFICIENTS.length - 1; i >= 0; i--) p = ERFC_COEFFICIENTS[i] + t * p;
  const e = 1 - t * Math.exp(-z * z + p);
  return x < 0 ? -e : e;
}
/** ERF: the error function. */
export function erfFloat32(input: Float32Array, out: Float32Array): void {
  for (let i = 0; i < out.length; i++) out[i] = erf(input[i]);
}
/** LOG: the natural logarithm (NaN below 0, -inf at 0). */
export function logFloat32(input: Float32Array, out: Float32Array): void {
  for (let i = 0; i < out.length; i++) out[i] = Math.log(input[i]);
}
/** NEG: -x. */
export function negFloat32(input: Float32Array, out: Float32Array): void {
  for (let i = 0; i < out.length; i++) out[i] = -input[i];
}
/** SIN: the sine of x radians. */
export function sinFloat32(input: Float32Array, out: Float32Array): void {
  for (let i = 0; i < out.length; i++) out[i] = Math.sin(input[i]);
}
/** SQRT: the square root. */
export function sqrtFloat32(input: Float32Array, out: Float32Array): void {
  for (let i = 0; i < out.length; i++) out[i] = Math.sqrt(input[i]);
}
/** RSQRT: 1 / sqrt(x). */
export function rsqrtFloat32(input: Float32Array, out: Float32Array): void {
  for (let i = 0; i < out.length; i++) out[i] = 1 / Math.sqrt(input[i]);
}

/** ABS on int32 (HAL 1.3), wrapping |-2^31| to -2^31 as two's complement does. */
export function absInt32(input: Int32Array, out: Int32Array): void {
  const n = out.length;
  for (let i = 0; i < n; i++) {
    const x = input[i];
    out[i] = (x < 0 ? -x : x) | 0;
  }
}

/** NEG on int32, wrapping -2^31 to itself as two's complement does. */
export function negInt32(input: Int32Array, out: Int32Array): void {
  const n = out.length;
  for (let i = 0; i < n; i++) out[i] = -input[i] | 0;
}

/** LOGICAL_NOT on bool8 (0 false, anything else true); writes 0 or 1. */
export function logicalNotBool8(input: Uint8Array, out: Uint8Array): void {
  const n = out.length;
  for (let i = 0; i < n; i++) out[i] = input[i] === 0 ? 1 : 0;
}

/** A broadcasting bool8 binary kernel (LOGICAL_AND, LOGICAL_OR); writes 0 or 1. */
export type Bool8BinaryKernel = (
  a: Uint8Array,
  aShape: readonly number[],
  b: Uint8Array,
  bShape: readonly number[],
  out: Uint8Array,
  outShape: readonly number[],
) => void;

function broadcastBool8(f: (a: boolean, b: boolean) => boolean): Bool8BinaryKernel {
  return (a, aShape, b, bShape, out, outShape) => {
    forEachBroadcastRow(aShape, bShape, outShape, (ai, aStep, bi, bStep, oi, length) => {
      for (let k = 0; k < length; k++) {
        out[oi + k] = f(a[ai + k * aStep] !== 0, b[bi + k * bStep] !== 0) ? 1 : 0;
      }
    });
  };
}

/** LOGICAL_AND with broadcasting. */
export const logicalAndBool8: Bool8BinaryKernel = broadcastBool8((a, b) => a && b);
/** LOGICAL_OR with broadcasting. */
export const logicalOrBool8: Bool8BinaryKernel = broadcastBool8((a, b) => a || b);

/**
 * Copies numbers between element types as C `static_cast` does: into an integer array the
 * value is truncated toward zero (the typed array wraps values out of int32 range), and into
 * a uint8 array (`saturateUint8`) it is first clamped to [0, 255]. Float outputs round to
 * their own width on store.
 */
export function castElements(
  input: ReadonlyNumbers,
  out: Numbers,
  options: { truncate: boolean; saturateUint8: boolean },
): void {
  const n = out.length;
  const { truncate, saturateUint8 } = options;
  for (let i = 0; i < n; i++) {
    let x = input[i];
    if (saturateUint8) x = x < 0 ? 0 : x > 255 ? 255 : x;
    out[i] = truncate ? Math.trunc(x) : x;
  }
}

/** SELECT: `out[i] = condition[i] ? a[i] : b[i]` on same-shaped tensors. */
export function selectElements(
  condition: Uint8Array,
  a: ReadonlyNumbers,
  b: ReadonlyNumbers,
  out: Numbers,
): void {
  const n = out.length;
  for (let i = 0; i < n; i++) out[i] = condition[i] !== 0 ? a[i] : b[i];
}

/** The scale and zero point of a quantized tensor. */
export interface QuantParams {
  scale: number;
  zeroPoint: number;
}

/**
 * Re-expresses a uint8 value in another quantization as NNAPI's `requantize` does: the real
 * value in float32, divided by the new scale in double, rounded half away from zero and
 * saturated to [0, 255].
 */
export function requantizeUint8(value: number, from: QuantParams, to: QuantParams): number {
  const real = Math.fround((value - from.zeroPoint) * from.scale);
  const q = real / to.scale + to.zeroPoint;
  if (q < 0) return 0;
  if (q > 255) return 255;
  return roundHalfAwayFromZero(q);
}

/** SELECT on uint8 tensors, each input requantized to the output's quantization. */
export function selectQuant8(
  condition: Uint8Array,
  a: Uint8Array,
  aQuant: QuantParams,
  b: Uint8Array,
  bQuant: QuantParams,
  out: Uint8Array,
  outQuant: QuantParams,
): void {
  const n = out.length;
  for (let i = 0; i < n; i++) {
    out[i] = condition[i] !== 0
      ? requantizeUint8(a[i], aQuant, outQuant)
      : requantizeUint8(b[i], bQuant, outQuant);
  }
}

/**
 * QUANTIZE float values to uint8: `zeroPoint + round(x / scale)` with the division in
 * float32, rounding half away from zero, saturated to [0, 255].
 */
export function quantizeUint8(
  input: ReadonlyNumbers,
  scale: number,
  zeroPoint: number,
  out: Uint8Array,
): void {
  const n = out.length;
  for (let i = 0; i < n; i++) {
    const q = Math.fround(zeroPoint + roundHalfAwayFromZero(Math.fround(input[i] / scale)));
    // std::max(0, std::min(255, q)), which maps NaN to 255.
    out[i] = q < 255 ? (q > 0 ? q : 0) : 255;
  }
}
