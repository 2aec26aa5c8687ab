/**
 * Reference pooling kernels (AVERAGE_POOL_2D, MAX_POOL_2D, L2_POOL_2D) on NHWC data, as
 * TFLite's reference ops define them: the window is clipped to the input (padding is never
 * counted), then the activation range clamps the result.
 */
import type { ActivationRange } from "./fixed_point.ts";
import type { Numbers, ReadonlyNumbers } from "./typed_arrays.ts";
import { forEachOutputPixel, type Window2dGeometry } from "./window_2d.ts";

/** Extents and window parameters of a pooling operation (NHWC). */
export interface Pool2dGeometry extends Window2dGeometry {
  depth: number;
}

/** Per output pixel: the clipped window and the offset of its first output channel. */
type WindowVisitor = (
  inBase: number,
  y0: number,
  y1: number,
  x0: number,
  x1: number,
  outBase: number,
) => void;

/** Calls `visit` for every output pixel with its clipped input window (input rows y0..y1-1, cols x0..x1-1). */
function forEachWindow(g: Pool2dGeometry, visit: WindowVisitor): void {
  const batchSize = g.inHeight * g.inWidth * g.depth;
  forEachOutputPixel(g, (pixel, b, iy0, fy0, fy1, ix0, fx0, fx1) => {
    visit(b * batchSize, iy0 + fy0, iy0 + fy1, ix0 + fx0, ix0 + fx1, pixel * g.depth);
  });
}

/** Sums each channel of the window into `acc` (squares when `square`). */
function windowSums(
  g: Pool2dGeometry,
  input: ReadonlyNumbers,
  inBase: number,
  y0: number,
  y1: number,
  x0: number,
  x1: number,
  square: boolean,
  acc: Float64Array,
): void {
  const { inWidth, depth } = g;
  acc.fill(0);
  for (let y = y0; y < y1; y++) {
    for (let x = x0; x < x1; x++) {
      const i0 = inBase + (y * inWidth + x) * depth;
      if (square) {
        for (let c = 0; c < depth; c++) acc[c] += input[i0 + c] * input[i0 + c];
      } else {
        for (let c = 0; c < depth; c++) acc[c] += input[i0 + c];
      }
    }
  }
}

/** Float average pooling: mean of the clipped window, then clamp. */
export function averagePoolFloat(
  g: Pool2dGeometry,
  input: ReadonlyNumbers,
  activation: ActivationRange,
  output: Numbers,
): void {
  const { min, max } = activation;
  const acc = new Float64Array(g.depth);
  forEachWindow(g, (inBase, y0, y1, x0, x1, outBase) => {
    windowSums(g, input, inBase, y0, y1, x0, x1, false, acc);
    const count = (y1 - y0) * (x1 - x0);
    for (let c = 0; c < g.depth; c++) {
      const v = acc[c] / count;
      output[outBase + c] = v < min ? min : v > max ? max : v;
    }
  });
}

/**
 * Quantized average pooling: integer mean rounded half up, `(sum + count/2) / count`,
 * then clamp to the quantized activation range (input and output share quantization).
 */
export function averagePoolQuantized(
  g: Pool2dGeometry,
  input: ReadonlyNumbers,
  activation: ActivationRange,
  output: Numbers,
): void {
  const { min, max } = activation;
  const acc = new Float64Array(g.depth);
  forEachWindow(g, (inBase, y0, y1, x0, x1, outBase) => {
    windowSums(g, input, inBase, y0, y1, x0, x1, false, acc);
    const count = (y1 - y0) * (x1 - x0);
    const half = Math.floor(count / 2);
    for (let c = 0; c < g.depth; c++) {
      const v = Math.floor((acc[c] + half) / count);
      output[outBase + c] = v < min ? min : v > max ? max : v;
    }
  });
}

/** Float L2 pooling: sqrt of the mean of squares over the clipped window, then clamp. */
export function l2PoolFloat(
  g: Pool2dGeometry,
  input: ReadonlyNumbers,
  activation: ActivationRange,
  output: Numbers,
): void {
  const { min, max } = activation;
  const acc = new Float64Array(g.depth);
  forEachWindow(g, (inBase, y0, y1, x0, x1, outBase) => {
    windowSums(g, input, inBase, y0, y1, x0, x1, true, acc);
    const count = (y1 - y0) * (x1 - x0);
    for (let c = 0; c < g.depth; c++) {
      const v = Math.sqrt(acc[c] / count);
      output[outBase + c] = v < min ? min : v > max ? max : v;
    }
  });
}

/** Max pooling (float or quantized data alike): window maximum, then clamp. */
export function maxPool(
  g: Pool2dGeometry,
  input: ReadonlyNumbers,
  activation: ActivationRange,
  output: Numbers,
): void {
  const { min, max } = activation;
  const { inWidth, depth } = g;
  const best = new Float64Array(depth);
  forEachWindow(g, (inBase, y0, y1, x0, x1, outBase) => {
    best.fill(-Infinity);
    for (let y = y0; y < y1; y++) {
      for (let x = x0; x < x1; x++) {
        const i0 = inBase + (y * inWidth + x) * depth;
        for (let c = 0; c < depth; c++) {
          const v = input[i0 + c];
          if (v > best[c]) best[c] = v;
        }
      }
    }
    for (let c = 0; c < depth; c++) {
      const v = best[c];
      output[outBase + c] = v < min ? min : v > max ? max : v;
    }
  });
}
