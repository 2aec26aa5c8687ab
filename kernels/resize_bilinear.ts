/**
 * RESIZE_BILINEAR kernel: TFLite's `reference_ops::ResizeBilinear` as Android 11's NNAPI
 * calls it, with HAL 1.3's align_corners and half_pixel_centers. Source coordinate of output
 * index o: o * scale, or (o + 0.5) * scale - 0.5 with half-pixel centers, where scale is
 * in / out, or (in - 1) / (out - 1) with aligned corners (and out > 1). The two taps are
 * max(floor(p), 0) and min(ceil(p), in - 1), weighted by p - low (so a coordinate outside
 * the image reads the edge pixel). Every step is float32 arithmetic (Math.fround after each
 * operation); quantized outputs truncate toward zero as the C++ float -> uint8 conversion
 * does. With neither flag this is exactly the Android 10 (HAL 1.0-1.2) kernel.
 */
import { type ImageDims, imageIndex } from "./image_layout.ts";
import type { Numbers } from "./typed_arrays.ts";

/** Where a resize reads: the input and output extents, layout and coordinate mapping. */
export interface ResizeGeometry {
  /** The input's extents (NHWC order whatever the layout). */
  dims: ImageDims;
  outHeight: number;
  outWidth: number;
  nchw: boolean;
  /** Map the centers of the corner pixels onto each other (HAL 1.3). */
  alignCorners?: boolean;
  /** Pixel centers at (0.5, 0.5) (HAL 1.3, TF 2's default); excludes alignCorners. */
  halfPixelCenters?: boolean;
}

/**
 * The float32 ratio of source to output coordinates along one axis (NNAPI
 * `calculateResizeScale`).
 */
export function resizeScale(inSize: number, outSize: number, alignCorners: boolean): number {
  return Math.fround(
    alignCorners && outSize > 1 ? (inSize - 1) / (outSize - 1) : inSize / outSize,
  );
}

/** One sampling position along an axis: the two source indices and the weights. */
interface Sample {
  low: number;
  high: number;
  frac: number;
  oneMinusFrac: number;
}

function samples(
  inSize: number,
  outSize: number,
  options: { alignCorners: boolean; halfPixelCenters: boolean },
): Sample[] {
  const f = Math.fround;
  const scale = resizeScale(inSize, outSize, options.alignCorners);
  const result: Sample[] = [];
  for (let o = 0; o < outSize; o++) {
    const position = options.halfPixelCenters ? f(f((o + 0.5) * scale) - 0.5) : f(o * scale);
    const low = Math.max(Math.floor(position), 0);
    const high = Math.min(Math.ceil(position), inSize - 1);
    const frac = f(position - low);
    result.push({ low, high, frac, oneMinusFrac: f(1 - frac) });
  }
  return result;
}

/**
 * Resizes `input` as `geometry` says into `output`. `quantized` truncates each result to an
 * integer (uint8 output); otherwise the float32 result is stored (a Float16Array output then
 * rounds it to float16).
 */
export function resizeBilinear(
  input: ArrayLike<number>,
  output: Numbers,
  options: ResizeGeometry & { quantized: boolean },
): void {
  const f = Math.fround;
  const { dims, outHeight, outWidth, nchw, quantized } = options;
  const coordinates = {
    alignCorners: options.alignCorners ?? false,
    halfPixelCenters: options.halfPixelCenters ?? false,
  };
  const out: ImageDims = { ...dims, height: outHeight, width: outWidth };
  // Offsets of channel 0; channel c adds c * channelStride.
  const from = imageIndex(dims, nchw);
  const to = imageIndex(out, nchw);
  const inChannelStride = nchw ? dims.height * dims.width : 1;
  const outChannelStride = nchw ? outHeight * outWidth : 1;
  const ys = samples(dims.height, outHeight, coordinates);
  const xs = samples(dims.width, outWidth, coordinates);
  for (let b = 0; b < dims.batches; b++) {
    for (let y = 0; y < outHeight; y++) {
      const sy = ys[y];
      for (let x = 0; x < outWidth; x++) {
        const sx = xs[x];
        const i00 = from(b, sy.low, sx.low, 0);
        const i10 = from(b, sy.high, sx.low, 0);
        const i01 = from(b, sy.low, sx.high, 0);
        const i11 = from(b, sy.high, sx.high, 0);
        const o = to(b, y, x, 0);
        for (let c = 0; c < dims.depth; c++) {
          const ci = c * inChannelStride;
          const t00 = f(f(input[i00 + ci] * sy.oneMinusFrac) * sx.oneMinusFrac);
          const t10 = f(f(input[i10 + ci] * sy.frac) * sx.oneMinusFrac);
          const t01 = f(f(input[i01 + ci] * sy.oneMinusFrac) * sx.frac);
          const t11 = f(f(input[i11 + ci] * sy.frac) * sx.frac);
          const value = f(f(f(t00 + t10) + t01) + t11);
          output[o + c * outChannelStride] = quantized ? Math.trunc(value) : value;
        }
      }
    }
  }
}
