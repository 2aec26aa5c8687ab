/**
 * Unary elementwise kernels (FLOOR, DEQUANTIZE) and the float16 <-> float32 staging NNAPI
 * uses for its float16 kernels (convert, run the float32 kernel, convert back).
 */

/** Float data of either width. */
export type FloatData = Float32Array | Float16Array;

/** The values as float32: the array itself when it already is, else a widened copy. */
export function toFloat32(data: FloatData): Float32Array {
  return data instanceof Float32Array ? data : Float32Array.from(data);
}

/** A float32 scratch array for an output, or the output itself when it is float32. */
export function float32Scratch(out: FloatData): Float32Array {
  return out instanceof Float32Array ? out : new Float32Array(out.length);
}

/** Stores float32 results into `out` (rounding to float16 when `out` is float16). */
export function storeFloat32(out: FloatData, values: Float32Array): void {
  if (out !== values) out.set(values);
}

/** FLOOR on float32 values. */
export function floorFloat32(input: Float32Array, out: Float32Array): void {
  const n = out.length;
  for (let i = 0; i < n; i++) out[i] = Math.floor(input[i]);
}

/** DEQUANTIZE with one scale and zero point: out = scale * (q - zeroPoint) in float32. */
export function dequantize(
  input: Uint8Array | Int8Array,
  scale: number,
  zeroPoint: number,
  out: Float32Array,
): void {
  const n = out.length;
  for (let i = 0; i < n; i++) out[i] = scale * (input[i] - zeroPoint);
}

/**
 * DEQUANTIZE of a per-channel quantized tensor (zero point 0): each element uses the scale
 * of its index along `channelDim`.
 */
export function dequantizePerChannel(
  input: Int8Array,
  shape: readonly number[],
  channelDim: number,
  scales: readonly number[],
  out: Float32Array,
): void {
  let inner = 1;
  for (let d = shape.length - 1; d > channelDim; d--) inner *= shape[d];
  const channels = shape[channelDim];
  const n = out.length;
  for (let i = 0; i < n; i++) {
    out[i] = scales[Math.floor(i / inner) % channels] * input[i];
  }
}
