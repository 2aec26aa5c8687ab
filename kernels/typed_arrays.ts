/**
 * The array types every kernel reads and writes, and the float16 <-> float32 staging NNAPI
 * uses for its float16 kernels (convert the inputs, run the float32 kernel, convert back).
 */

/** Any typed array read as numbers (float32/float16/uint8/int8/int32 data). */
export interface ReadonlyNumbers {
  readonly length: number;
  readonly [index: number]: number;
}

/** Any typed array written as numbers. */
export interface Numbers {
  readonly length: number;
  [index: number]: number;
}

/** Float data of either width (TENSOR_FLOAT32 or TENSOR_FLOAT16). */
export type FloatData = Float32Array | Float16Array;

/** The values as float32: the array itself when it already is, else a widened copy. */
export function toFloat32(data: FloatData): Float32Array {
  return data instanceof Float32Array ? data : Float32Array.from(data);
}

/** Like {@link toFloat32}, keeping null (an omitted optional operand) as null. */
export function toFloat32OrNull(data: FloatData | null): Float32Array | null {
  return data === null ? null : toFloat32(data);
}

/** A float32 scratch array for an output, or the output itself when it is float32. */
export function float32Scratch(out: FloatData): Float32Array {
  return out instanceof Float32Array ? out : new Float32Array(out.length);
}

/** Stores float32 results into `out` (rounding to float16 when `out` is float16). */
export function storeFloat32(out: FloatData, values: Float32Array): void {
  if (out !== values) out.set(values);
}

/**
 * Runs `compute` on float32 views of the outputs: float32 outputs are passed through,
 * float16 ones get float32 staging buffers that are narrowed into them afterwards.
 */
export function withFloat32Outputs(
  outputs: readonly FloatData[],
  compute: (outputs: Float32Array[]) => void,
): void {
  const staged = outputs.map(float32Scratch);
  compute(staged);
  outputs.forEach((o, i) => storeFloat32(o, staged[i]));
}
