/**
 * Reference CONV_2D kernels on NHWC data with an [outDepth, filterHeight, filterWidth,
 * inDepth] filter: direct convolution with explicit padding, strides and dilation. The float
 * kernel accumulates in double precision; the quantized one reproduces the Android 10
 * NNAPI integer arithmetic (int32 accumulation of offset products, bias, TFLite
 * `MultiplyByQuantizedMultiplier`, zero point, clamp).
 */
import type { Conv2dGeometry, QuantizedOutputStage } from "./conv_common.ts";
import { type ActivationRange, multiplyByQuantizedMultiplier } from "./fixed_point.ts";
import type { Numbers, ReadonlyNumbers } from "./typed_arrays.ts";
import { forEachOutputPixel } from "./window_2d.ts";

/**
 * Float convolution: output = clamp(bias + sum(input * filter)). Works on any float
 * typed arrays (float32 in, float32 out; float16 callers convert around it).
 */
export function conv2dFloat(
  g: Conv2dGeometry,
  input: ReadonlyNumbers,
  filter: ReadonlyNumbers,
  bias: ReadonlyNumbers,
  activation: ActivationRange,
  output: Numbers,
): void {
  const { inHeight, inWidth, inDepth, filterHeight, filterWidth, outDepth } = g;
  const { min, max } = activation;
  const filterStride = filterHeight * filterWidth * inDepth;
  forEachOutputPixel(g, (pixel, b, iy0, fy0, fy1, ix0, fx0, fx1) => {
    const batchBase = b * inHeight * inWidth * inDepth;
    let o = pixel * outDepth;
    for (let oc = 0; oc < outDepth; oc++) {
      let acc = 0;
      const filterBase = oc * filterStride;
      for (let fy = fy0; fy < fy1; fy++) {
        const rowBase = batchBase + (iy0 + fy * g.dilationHeight) * inWidth * inDepth;
        const filterRow = filterBase + fy * filterWidth * inDepth;
        for (let fx = fx0; fx < fx1; fx++) {
          let i = rowBase + (ix0 + fx * g.dilationWidth) * inDepth;
          let f = filterRow + fx * inDepth;
          const end = i + inDepth;
          for (; i < end; i++, f++) acc += input[i] * filter[f];
        }
      }
      acc += bias[oc];
      output[o++] = acc < min ? min : acc > max ? max : acc;
    }
  });
}

/**
 * Quantized convolution (uint8 input/output; uint8 filter with a zero point, or int8
 * per-channel symmetric filter with `filterOffset` 0 and per-channel multipliers).
 */
export function conv2dQuantized(
  g: Conv2dGeometry,
  input: ReadonlyNumbers,
  filter: ReadonlyNumbers,
  bias: ReadonlyNumbers,
  q: QuantizedOutputStage,
  output: Numbers,
): void {
  const { inHeight, inWidth, inDepth, filterHeight, filterWidth, outDepth } = g;
  const { inputOffset, filterOffset, outputOffset, multipliers, shifts } = q;
  const { min, max } = q.activation;
  const filterStride = filterHeight * filterWidth * inDepth;
  forEachOutputPixel(g, (pixel, b, iy0, fy0, fy1, ix0, fx0, fx1) => {
    const batchBase = b * inHeight * inWidth * inDepth;
    let o = pixel * outDepth;
    for (let oc = 0; oc < outDepth; oc++) {
      // Exact in a double (|terms| < 2^17), wrapped to int32 like the C++ accumulator.
      let acc = 0;
      const filterBase = oc * filterStride;
      for (let fy = fy0; fy < fy1; fy++) {
        const rowBase = batchBase + (iy0 + fy * g.dilationHeight) * inWidth * inDepth;
        const filterRow = filterBase + fy * filterWidth * inDepth;
        for (let fx = fx0; fx < fx1; fx++) {
          let i = rowBase + (ix0 + fx * g.dilationWidth) * inDepth;
          let f = filterRow + fx * inDepth;
          const end = i + inDepth;
          for (; i < end; i++, f++) {
            acc += (input[i] + inputOffset) * (filter[f] + filterOffset);
          }
        }
      }
      acc = (acc + bias[oc]) | 0;
      let v = multiplyByQuantizedMultiplier(acc, multipliers[oc], shifts[oc]) + outputOffset;
      v = v < min ? min : v > max ? max : v;
      output[o++] = v;
    }
  });
}
