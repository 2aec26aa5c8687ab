/**
 * Dynamic quantization as ONNX's DynamicQuantizeLinear defines it and onnxruntime computes
 * it (`core/util/qmath.h`, MLAS's QuantizeLinear), in float32 arithmetic: a tensor's uint8
 * scale and zero point chosen from its own range (which always includes 0), and its values
 * quantized with them. Values are handed on centered (the uint8 value minus the zero
 * point), which is all an integer product needs.
 */

/** A tensor's dynamic uint8 quantization. */
export interface DynamicQuantization {
  scale: number;
  zeroPoint: number;
}

/** The largest uint8 value. */
const QMAX = 255;

/**
 * Adding then subtracting 1.5 * 2^52 rounds a float64 of magnitude below 2^51 to an
 * integer, ties to even (the default rounding of every addition).
 */
const ROUNDING = 6755399441055744;

/** `value` rounded to the nearest integer, ties to even (as `nearbyint` in the default mode). */
export function roundHalfToEven(value: number): number {
  return value + ROUNDING - ROUNDING;
}

/**
 * The scale and zero point of `x`: the range [min(x, 0), max(x, 0)] over 255 steps (a scale
 * of 1 when x is all zeros), the zero point -min / scale clamped to [0, 255] and rounded
 * half to even.
 */
export function dynamicQuantization(x: ArrayLike<number>): DynamicQuantization {
  let low = 0;
  let high = 0;
  for (let i = 0; i < x.length; i++) {
    const v = x[i];
    if (v < low) low = v;
    if (v > high) high = v;
  }
  const scale = high === low ? 1 : Math.fround(Math.fround(high - low) / QMAX);
  const initial = Math.fround(0 - Math.fround(low / scale));
  const zeroPoint = roundHalfToEven(Math.max(0, Math.min(QMAX, initial)));
  return { scale, zeroPoint };
}

/**
 * `x` quantized with `q` minus its zero point, into `out`: x / scale clamped to
 * [-zeroPoint, 255 - zeroPoint] and rounded half to even (MLAS's order: clamp, round, then
 * add the zero point, which the centered value leaves out).
 */
export function quantizeCentered(
  x: Float32Array,
  q: DynamicQuantization,
  out: Float32Array,
): void {
  const low = -q.zeroPoint;
  const high = QMAX - q.zeroPoint;
  const scale = q.scale;
  for (let i = 0; i < x.length; i++) {
    const scaled = Math.fround(x[i] / scale);
    out[i] = (scaled < low ? low : scaled > high ? high : scaled) + ROUNDING - ROUNDING;
  }
}

/**
 * The float32 results of the [rows, units] integer `sums` (exact float values): each
 * times `multiplier`, plus its unit's bias, clamped to `range` (a fused activation's).
 */
export function dequantizeSums(
  sums: Float32Array | Float64Array,
  multiplier: number,
  bias: ArrayLike<number>,
  range: { min: number; max: number },
  out: Float32Array,
): void {
  const units = bias.length;
  const { min, max } = range;
  for (let start = 0; start < sums.length; start += units) {
    for (let u = 0; u < units; u++) {
      const v = Math.fround(Math.fround(Math.fround(sums[start + u]) * multiplier) + bias[u]);
      out[start + u] = v < min ? min : v > max ? max : v;
    }
  }
}
