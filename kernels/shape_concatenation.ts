/**
 * CONCATENATION kernels (TFLite `Concatenation` / `ConcatenationWithScaling` as NNAPI
 * Concatenation.cpp calls them): joins tensors of equal rank along one axis.
 */
import { roundHalfAwayFromZero } from "./fixed_point.ts";
import type { Numbers } from "./typed_arrays.ts";

/** One tensor to join: its elements (row-major) and its shape. */
export interface ConcatPart {
  data: ArrayLike<number>;
  shape: readonly number[];
}

/**
 * Joins `parts` along `axis` into `output`; `convert[i]`, when given, maps each element of
 * part i (e.g. requantizes it). The parts agree on every dimension but `axis`.
 */
export function concatenate(
  parts: readonly ConcatPart[],
  axis: number,
  output: Numbers,
  convert?: readonly (((value: number) => number) | undefined)[],
): void {
  if (parts.length === 0) return;
  const shape = parts[0].shape;
  let outer = 1;
  for (let d = 0; d < axis; d++) outer *= shape[d];
  let inner = 1;
  for (let d = axis + 1; d < shape.length; d++) inner *= shape[d];
  let o = 0;
  for (let b = 0; b < outer; b++) {
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i];
      const size = part.shape[axis] * inner;
      const start = b * size;
      const map = convert?.[i];
      if (map) {
        for (let k = 0; k < size; k++) output[o++] = map(part.data[start + k]);
      } else if (size >= 32 && sameArrayType(part.data, output)) {
        // A block copy (memmove) rather than an element loop.
        (output as Float32Array).set((part.data as Float32Array).subarray(start, start + size), o);
        o += size;
      } else {
        for (let k = 0; k < size; k++) output[o++] = part.data[start + k];
      }
    }
  }
}

/**
 * Whether `data` is a typed array of `output`'s kind (so `set` copies the elements
 * unchanged; the casts above name one such kind for the type checker).
 */
function sameArrayType(data: ArrayLike<number>, output: Numbers): boolean {
  return ArrayBuffer.isView(data) && data.constructor === output.constructor;
}

/**
 * The TFLite `ConcatenationWithScaling` element mapping from one uint8 quantization to
 * another, in float32 as the reference computes it: round(q * scale + bias) + outZeroPoint
 * clamped to [0, 255], with scale = inScale * (1 / outScale) and bias = -inZeroPoint * scale.
 * Undefined when the quantizations are equal (the elements are copied).
 */
export function requantizeUint8(
  inScale: number,
  inZeroPoint: number,
  outScale: number,
  outZeroPoint: number,
): ((value: number) => number) | undefined {
  if (inScale === outScale && inZeroPoint === outZeroPoint) return undefined;
  const f = Math.fround;
  const scale = f(f(inScale) * f(1 / f(outScale)));
  const bias = f(-inZeroPoint * scale);
  return (q) => {
    const value = roundHalfAwayFromZero(f(f(q * scale) + bias)) + outZeroPoint;
    return value < 0 ? 0 : value > 255 ? 255 : value;
  };
}
