/**
 * Pieces shared by the convolution-like kernels (CONV_2D, DEPTHWISE_CONV_2D,
 * FULLY_CONNECTED): the convolution geometry and the quantized output stage parameters of
 * the Android 10 NNAPI CPU implementation.
 */
import { type ActivationRange, quantizeMultiplier } from "./fixed_point.ts";
import type { Window2dGeometry } from "./window_2d.ts";

/** Extents and window parameters of a 2-D convolution (NHWC). */
export interface Conv2dGeometry extends Window2dGeometry {
  inDepth: number;
  outDepth: number;
  dilationHeight: number;
  dilationWidth: number;
}

/**
 * The quantized output stage: per output channel, the accumulator (plus bias) is scaled
 * by `multipliers[c] * 2^shifts[c]` (TFLite `MultiplyByQuantizedMultiplier`, positive shift =
 * left), offset by the output zero point and clamped to the activation range.
 */
export interface QuantizedOutputStage {
  /** Added to every input value: minus the input zero point. */
  inputOffset: number;
  /** Added to every filter value: minus the filter zero point (0 for symmetric filters). */
  filterOffset: number;
  /** The output zero point. */
  outputOffset: number;
  /** Q31 multiplier per output channel. */
  multipliers: Int32Array;
  /** Signed power-of-two exponent per output channel (left shift when positive). */
  shifts: Int32Array;
  /** Clamp range (already including the output zero point). */
  activation: ActivationRange;
}

/**
 * NNAPI `GetQuantizedConvolutionMultipler` + `QuantizeMultiplier`: the real multiplier
 * `float(inputScale * filterScale) / outputScale` computed in double precision, as a Q31
 * multiplier and a signed exponent. Multipliers >= 1 are allowed (HAL 1.2).
 */
export function convolutionMultiplier(
  inputScale: number,
  filterScale: number,
  outputScale: number,
): { multiplier: number; shift: number } {
  const inputProductScale = Math.fround(inputScale * filterScale);
  return quantizeMultiplier(inputProductScale / outputScale);
}

/**
 * NNAPI's bias scale rule for quantized convolutions: |input*filter - bias| within 1e-6 of
 * the smaller of the two (float product widened to double).
 */
export function biasScaleMatches(
  inputScale: number,
  filterScale: number,
  biasScale: number,
): boolean {
  const product = Math.fround(inputScale * filterScale);
  return product >= 0 && Math.abs(product - biasScale) <= 1e-6 * Math.min(product, biasScale);
}

/**
 * Builds the output stage for a quantized convolution: one multiplier shared by all
 * channels (`filterScales` of length 1) or one per output channel (per-channel filters).
 */
export function quantizedOutputStage(
  channels: number,
  inputScale: number,
  inputZeroPoint: number,
  filterScales: readonly number[],
  filterZeroPoint: number,
  outputScale: number,
  outputZeroPoint: number,
  activation: ActivationRange,
): QuantizedOutputStage {
  const multipliers = new Int32Array(channels);
  const shifts = new Int32Array(channels);
  for (let c = 0; c < channels; c++) {
    const scale = filterScales.length === 1 ? filterScales[0] : filterScales[c];
    const q = convolutionMultiplier(inputScale, scale, outputScale);
    multipliers[c] = q.multiplier;
    shifts[c] = q.shift;
  }
  return {
    inputOffset: -inputZeroPoint,
    filterOffset: -filterZeroPoint,
    outputOffset: outputZeroPoint,
    multipliers,
    shifts,
    activation,
  };
}
