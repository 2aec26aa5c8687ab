/** Unary elementwise kernels: FLOOR and DEQUANTIZE. */

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
