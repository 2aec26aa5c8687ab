/**
 * INSTANCE_NORMALIZATION on NHWC float32 data, as the HAL 1.2 CTS goldens expect: per batch
 * and channel over the height * width plane, (x - mean) * gamma / sigma + beta with
 * sigma = sqrt(mean(x^2) + epsilon). Note sigma is the root mean square, not the standard
 * deviation (the mean is not subtracted inside it): the goldens fail with the textbook
 * formula, so this kernel follows them.
 */
import type { ImageDims } from "./image_layout.ts";

/** The normalization's scalar parameters. */
export interface InstanceNormParams {
  gamma: number;
  beta: number;
  epsilon: number;
}

/** Normalizes each (batch, channel) plane of NHWC `input` into `out`. */
export function instanceNormalizationFloat32(
  input: Float32Array,
  dims: ImageDims,
  params: InstanceNormParams,
  out: Float32Array,
): void {
  const { batches, height, width, depth } = dims;
  const f = Math.fround;
  const gamma = f(params.gamma);
  const beta = f(params.beta);
  const epsilon = f(params.epsilon);
  const plane = height * width;
  const count = f(plane);
  for (let b = 0; b < batches; b++) {
    for (let d = 0; d < depth; d++) {
      const base = b * plane * depth + d;
      let mean = 0;
      let sigma = 0;
      for (let p = 0; p < plane; p++) {
        const x = input[base + p * depth];
        mean = f(mean + x);
        sigma = f(sigma + f(x * x));
      }
      mean = f(mean / count);
      sigma = f(Math.sqrt(f(f(sigma / count) + epsilon)));
      for (let p = 0; p < plane; p++) {
        const at = base + p * depth;
        out[at] = f(f(f(input[at] - mean) * gamma) / sigma) + beta;
      }
    }
  }
}
