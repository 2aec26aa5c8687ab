/**
 * How the optimized convolution kernels read their NHWC input: either in place, or as a
 * zero-padded copy that covers every window, so that their inner loops never test bounds
 * (padding becomes zeros that the windows read like any other pixel). The copy can also
 * repeat each channel `depthMultiplier` times (a depthwise convolution then becomes one
 * with a multiplier of 1) and pad each pixel to a channel stride (whole SIMD vectors).
 */
import type { Conv2dGeometry } from "./conv_common.ts";

/** The input region the windows of a convolution cover, in padded coordinates. */
export interface WindowInput {
  /** Rows and columns from the first window's first tap to the last window's last tap. */
  height: number;
  width: number;
  /** Padded position of input pixel (0, 0): the top and left padding. */
  top: number;
  left: number;
  /** Whether every covered pixel is an input pixel (no padding is read). */
  inside: boolean;
}

/** The covered region of a convolution's windows. */
export function windowInput(g: Conv2dGeometry): WindowInput {
  const height = (g.outHeight - 1) * g.strideHeight + (g.filterHeight - 1) * g.dilationHeight + 1;
  const width = (g.outWidth - 1) * g.strideWidth + (g.filterWidth - 1) * g.dilationWidth + 1;
  const inside = g.padTop === 0 && g.padLeft === 0 && height <= g.inHeight &&
    width <= g.inWidth;
  return { height, width, top: g.padTop, left: g.padLeft, inside };
}

/** Layout of a padded input copy: the covered region with a per-pixel channel stride. */
export interface PaddedInput extends WindowInput {
  /** Channels repeated per input channel (1 for CONV_2D). */
  depthMultiplier: number;
  /** Floats per pixel, at least `inDepth * depthMultiplier` (the rest are zeros). */
  pixelStride: number;
}

/** Floats a padded copy of all batches takes. */
export function paddedInputLength(g: Conv2dGeometry, p: PaddedInput): number {
  return g.batches * p.height * p.width * p.pixelStride;
}

/**
 * Writes the padded copy (layout `p`) of the input of convolution `g` at float `offset` in
 * `target`: zeros outside the input, input channel `c` at channels `c * depthMultiplier`
 * to `c * depthMultiplier + depthMultiplier - 1`.
 */
export function copyPaddedInput(
  input: Float32Array,
  target: Float32Array,
  options: { g: Conv2dGeometry; p: PaddedInput; offset: number },
): void {
  const { g, p, offset } = options;
  const { inHeight, inWidth, inDepth } = g;
  const { height, width, top, left, depthMultiplier, pixelStride } = p;
  const dense = depthMultiplier === 1 && pixelStride === inDepth;
  const x0 = Math.max(0, left);
  const x1 = Math.min(width, left + inWidth);
  // Dense rows overwrite their input pixels, so only the border needs zeros (one pass over
  // the copy rather than two); with channel padding or repeats, every float is cleared.
  if (!dense || x1 <= x0) target.fill(0, offset, offset + paddedInputLength(g, p));
  if (x1 <= x0) return;
  const rowFloats = width * pixelStride;
  for (let b = 0; b < g.batches; b++) {
    for (let py = 0; py < height; py++) {
      const iy = py - top;
      const row = offset + (b * height + py) * rowFloats;
      if (iy < 0 || iy >= inHeight) {
        if (dense) target.fill(0, row, row + rowFloats);
        continue;
      }
      let from = ((b * inHeight + iy) * inWidth + (x0 - left)) * inDepth;
      let to = row + x0 * pixelStride;
      if (dense) {
        target.fill(0, row, to);
        target.set(input.subarray(from, from + (x1 - x0) * inDepth), to);
        target.fill(0, row + x1 * pixelStride, row + rowFloats);
        continue;
      }
      for (let x = x0; x < x1; x++, from += inDepth, to += pixelStride) {
        for (let c = 0, t = to; c < inDepth; c++) {
          const v = input[from + c];
          for (let m = 0; m < depthMultiplier; m++) target[t++] = v;
        }
      }
    }
  }
}
