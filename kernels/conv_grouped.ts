/**
 * Reference GROUPED_CONV_2D kernels on NHWC data with an [outDepth, filterHeight,
 * filterWidth, inDepth / groups] filter: the channels are split into `groups` equal slices
 * and output channel `oc` (of group `oc / (outDepth / groups)`) convolves only its group's
 * input slice. With one group this is CONV_2D. The float kernel accumulates in double
 * precision; the quantized one reproduces the Android 10 NNAPI integer arithmetic (int32
 * accumulation of offset products, bias, TFLite `MultiplyByQuantizedMultiplier`, zero point,
 * clamp), per output channel for per-channel filters.
 */
import type { Conv2dGeometry, QuantizedOutputStage } from "./conv_common.ts";
import { type ActivationRange, multiplyByQuantizedMultiplier } from "./fixed_point.ts";
import type { Numbers, ReadonlyNumbers } from "./typed_arrays.ts";
import { forEachOutputPixel } from "./window_2d.ts";

/** Grouped convolution geometry: a convolution geometry plus the number of groups. */
export interface GroupedGeometry extends Conv2dGeometry {
  groups: number;
}

/**
 * Calls `emit(o, oc, sum)` for every output element (NHWC offset `o`, channel `oc`) with the
 * window sum of `(input + inputOffset) * (filter + filterOffset)` over its group's channels.
 */
function forEachSum(
  g: GroupedGeometry,
  input: ReadonlyNumbers,
  filter: ReadonlyNumbers,
  inputOffset: number,
  filterOffset: number,
  emit: (o: number, oc: number, sum: number) => void,
): void {
  const { inHeight, inWidth, inDepth, filterHeight, filterWidth, outDepth, groups } = g;
  const groupDepth = inDepth / groups;
  const outGroupDepth = outDepth / groups;
  const filterStride = filterHeight * filterWidth * groupDepth;
  forEachOutputPixel(g, (pixel, b, iy0, fy0, fy1, ix0, fx0, fx1) => {
    const batchBase = b * inHeight * inWidth * inDepth;
    let o = pixel * outDepth;
    for (let oc = 0; oc < outDepth; oc++) {
      const channelBase = Math.floor(oc / outGroupDepth) * groupDepth;
      const filterBase = oc * filterStride;
      let sum = 0;
      for (let fy = fy0; fy < fy1; fy++) {
        const rowBase = batchBase + (iy0 + fy * g.dilationHeight) * inWidth * inDepth +
          channelBase;
        const filterRow = filterBase + fy * filterWidth * groupDepth;
        for (let fx = fx0; fx < fx1; fx++) {
          let i = rowBase + (ix0 + fx * g.dilationWidth) * inDepth;
          let f = filterRow + fx * groupDepth;
          const end = i + groupDepth;
          for (; i < end; i++, f++) sum += (input[i] + inputOffset) * (filter[f] + filterOffset);
        }
      }
      emit(o++, oc, sum);
    }
  });
}

/** Float grouped convolution: output = clamp(bias + window sum of input * filter). */
export function groupedConv2dFloat(
  g: GroupedGeometry,
  input: ReadonlyNumbers,
  filter: ReadonlyNumbers,
  bias: ReadonlyNumbers,
  activation: ActivationRange,
  output: Numbers,
): void {
  const { min, max } = activation;
  forEachSum(g, input, filter, 0, 0, (o, oc, sum) => {
    const v = sum + bias[oc];
    output[o] = v < min ? min : v > max ? max : v;
  });
}

/**
 * Quantized grouped convolution (uint8 input/output; uint8 filter with a zero point, or int8
 * per-channel symmetric filter with `filterOffset` 0 and per-channel multipliers).
 */
export function groupedConv2dQuantized(
  g: GroupedGeometry,
  input: ReadonlyNumbers,
  filter: ReadonlyNumbers,
  bias: ReadonlyNumbers,
  q: QuantizedOutputStage,
  output: Numbers,
): void {
  const { min, max } = q.activation;
  forEachSum(g, input, filter, q.inputOffset, q.filterOffset, (o, oc, sum) => {
    // The sum is exact in a double (|terms| < 2^17); wrap to int32 like the C++ accumulator.
    const acc = (sum + bias[oc]) | 0;
    const v = multiplyByQuantizedMultiplier(acc, q.multipliers[oc], q.shifts[oc]) +
      q.outputOffset;
    output[o] = v < min ? min : v > max ? max : v;
  });
}
