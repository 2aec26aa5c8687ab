/**
 * Reference DEPTHWISE_CONV_2D kernels on NHWC data with a [1, filterHeight, filterWidth,
 * outDepth] filter, where output channel `ic * depthMultiplier + m` filters input channel
 * `ic`. Each output pixel accumulates all its channels at once in a scratch row, so the
 * inner loop runs along contiguous channels.
 */
import type { Conv2dGeometry, QuantizedOutputStage } from "./conv_common.ts";
import { type ActivationRange, multiplyByQuantizedMultiplier } from "./fixed_point.ts";
import type { Numbers, ReadonlyNumbers } from "./typed_arrays.ts";
import { forEachOutputPixel } from "./window_2d.ts";

/** Depthwise geometry: a convolution geometry plus the channel multiplier. */
export interface DepthwiseGeometry extends Conv2dGeometry {
  depthMultiplier: number;
}

/**
 * Accumulates, for every output pixel, sum over the window of `(input + inputOffset) *
 * (filter + filterOffset)` per output channel into `acc`, then calls `emit` with the
 * output offset of the pixel. Shared by the float and quantized kernels.
 */
function forEachPixel(
  g: DepthwiseGeometry,
  input: ReadonlyNumbers,
  filter: ReadonlyNumbers,
  inputOffset: number,
  filterOffset: number,
  acc: Float64Array,
  emit: (outBase: number) => void,
): void {
  const { inHeight, inWidth, inDepth, filterWidth, outDepth, depthMultiplier } = g;
  forEachOutputPixel(g, (pixel, b, iy0, fy0, fy1, ix0, fx0, fx1) => {
    const batchBase = b * inHeight * inWidth * inDepth;
    acc.fill(0);
    for (let fy = fy0; fy < fy1; fy++) {
      const rowBase = batchBase + (iy0 + fy * g.dilationHeight) * inWidth * inDepth;
      for (let fx = fx0; fx < fx1; fx++) {
        const i0 = rowBase + (ix0 + fx * g.dilationWidth) * inDepth;
        const f0 = (fy * filterWidth + fx) * outDepth;
        if (depthMultiplier === 1) {
          for (let c = 0; c < inDepth; c++) {
            acc[c] += (input[i0 + c] + inputOffset) * (filter[f0 + c] + filterOffset);
          }
        } else {
          for (let ic = 0, oc = 0; ic < inDepth; ic++) {
            const v = input[i0 + ic] + inputOffset;
            for (let m = 0; m < depthMultiplier; m++, oc++) {
              acc[oc] += v * (filter[f0 + oc] + filterOffset);
            }
          }
        }
      }
    }
    emit(pixel * outDepth);
  });
}

/** Float depthwise convolution: output = clamp(bias + window sum of input * filter). */
export function depthwiseConv2dFloat(
  g: DepthwiseGeometry,
  input: ReadonlyNumbers,
  filter: ReadonlyNumbers,
  bias: ReadonlyNumbers,
  activation: ActivationRange,
  output: Numbers,
): void {
  const { min, max } = activation;
  const outDepth = g.outDepth;
  const acc = new Float64Array(outDepth);
  forEachPixel(g, input, filter, 0, 0, acc, (outBase) => {
    for (let oc = 0; oc < outDepth; oc++) {
      const v = acc[oc] + bias[oc];
      output[outBase + oc] = v < min ? min : v > max ? max : v;
    }
  });
}

/**
 * Quantized depthwise convolution (uint8 input/output; uint8 filter with zero point or
 * int8 per-channel filter), with the Android 10 NNAPI output stage.
 */
export function depthwiseConv2dQuantized(
  g: DepthwiseGeometry,
  input: ReadonlyNumbers,
  filter: ReadonlyNumbers,
  bias: ReadonlyNumbers,
  q: QuantizedOutputStage,
  output: Numbers,
): void {
  const { min, max } = q.activation;
  const { multipliers, shifts, outputOffset } = q;
  const outDepth = g.outDepth;
  const acc = new Float64Array(outDepth);
  forEachPixel(g, input, filter, q.inputOffset, q.filterOffset, acc, (outBase) => {
    for (let oc = 0; oc < outDepth; oc++) {
      const sum = (acc[oc] + bias[oc]) | 0;
      let v = multiplyByQuantizedMultiplier(sum, multipliers[oc], shifts[oc]) + outputOffset;
      v = v < min ? min : v > max ? max : v;
      output[outBase + oc] = v;
    }
  });
}
