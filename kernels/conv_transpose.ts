/**
 * Reference TRANSPOSE_CONV_2D kernels on NHWC data with an [outDepth, filterHeight,
 * filterWidth, inDepth] filter (Android 10 `TransposeConv2D.cpp`): every input pixel (y, x)
 * scatters `input . filter[k, i, j]` to output pixel (y * strideHeight - padTop + i,
 * x * strideWidth - padLeft + j), channel k, where that lies inside the output; then the
 * bias is added and the activation applied. The float kernel accumulates in double
 * precision; the quantized one reproduces the Android 10 integer arithmetic (int32
 * accumulation of offset products, bias, TFLite `MultiplyByQuantizedMultiplier`, zero
 * point, clamp), per output channel for per-channel filters.
 */
import type { QuantizedOutputStage } from "./conv_common.ts";
import { type ActivationRange, multiplyByQuantizedMultiplier } from "./fixed_point.ts";
import type { Numbers, ReadonlyNumbers } from "./typed_arrays.ts";

/** Extents and window parameters of a transposed convolution (NHWC). */
export interface TransposeConvGeometry {
  batches: number;
  inHeight: number;
  inWidth: number;
  inDepth: number;
  outHeight: number;
  outWidth: number;
  outDepth: number;
  filterHeight: number;
  filterWidth: number;
  strideHeight: number;
  strideWidth: number;
  /** Padding at the top and left of the output (the bottom/right follow from the sizes). */
  padTop: number;
  padLeft: number;
}

/**
 * The output sums (before bias) of `(input + inputOffset) * (filter + filterOffset)` over
 * every input pixel and filter tap landing on each output element, in NHWC order.
 */
function scatterSums(
  g: TransposeConvGeometry,
  input: ReadonlyNumbers,
  filter: ReadonlyNumbers,
  inputOffset: number,
  filterOffset: number,
): Float64Array {
  const { inHeight, inWidth, inDepth, outHeight, outWidth, outDepth } = g;
  const { filterHeight, filterWidth } = g;
  const sums = new Float64Array(g.batches * outHeight * outWidth * outDepth);
  const values = new Float64Array(inDepth);
  let inBase = 0;
  for (let b = 0; b < g.batches; b++) {
    const outBatch = b * outHeight * outWidth * outDepth;
    for (let y = 0; y < inHeight; y++) {
      const oy0 = y * g.strideHeight - g.padTop;
      for (let x = 0; x < inWidth; x++, inBase += inDepth) {
        const ox0 = x * g.strideWidth - g.padLeft;
        for (let d = 0; d < inDepth; d++) values[d] = input[inBase + d] + inputOffset;
        let f = 0;
        for (let k = 0; k < outDepth; k++) {
          for (let i = 0; i < filterHeight; i++) {
            const oy = oy0 + i;
            if (oy < 0 || oy >= outHeight) {
              f += filterWidth * inDepth;
              continue;
            }
            for (let j = 0; j < filterWidth; j++, f += inDepth) {
              const ox = ox0 + j;
              if (ox < 0 || ox >= outWidth) continue;
              let sum = 0;
              for (let d = 0; d < inDepth; d++) sum += values[d] * (filter[f + d] + filterOffset);
              sums[outBatch + (oy * outWidth + ox) * outDepth + k] += sum;
            }
          }
        }
      }
    }
  }
  return sums;
}

/** Float transposed convolution: output = clamp(bias + scattered input * filter). */
export function transposeConv2dFloat(
  g: TransposeConvGeometry,
  input: ReadonlyNumbers,
  filter: ReadonlyNumbers,
  bias: ReadonlyNumbers,
  activation: ActivationRange,
  output: Numbers,
): void {
  const { min, max } = activation;
  const sums = scatterSums(g, input, filter, 0, 0);
  const depth = g.outDepth;
  for (let o = 0; o < sums.length; o++) {
    const v = sums[o] + bias[o % depth];
    output[o] = v < min ? min : v > max ? max : v;
  }
}

/**
 * Quantized transposed convolution (uint8 input/output; uint8 filter with a zero point, or
 * int8 per-channel symmetric filter with `filterOffset` 0 and per-channel multipliers).
 */
export function transposeConv2dQuantized(
  g: TransposeConvGeometry,
  input: ReadonlyNumbers,
  filter: ReadonlyNumbers,
  bias: ReadonlyNumbers,
  q: QuantizedOutputStage,
  output: Numbers,
): void {
  const { min, max } = q.activation;
  const sums = scatterSums(g, input, filter, q.inputOffset, q.filterOffset);
  const depth = g.outDepth;
  for (let o = 0; o < sums.length; o++) {
    const c = o % depth;
    // Exact in a double (|terms| < 2^17); wrapped to int32 like the C++ accumulator.
    const acc = (sums[o] + bias[c]) | 0;
    const v = multiplyByQuantizedMultiplier(acc, q.multipliers[c], q.shifts[c]) + q.outputOffset;
    output[o] = v < min ? min : v > max ? max : v;
  }
}
