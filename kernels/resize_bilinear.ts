/**
 * RESIZE_BILINEAR kernel: TFLite `reference_ops::ResizeBilinear` with align_corners = false
 * and no half-pixel centers, as Android 10 NNAPI calls it. Every step is float32 arithmetic
 * (Math.fround after each operation); quantized outputs truncate toward zero as the C++
 * float -> uint8 conversion does.
 */
import { type ImageDims, imageIndex } from "./image_layout.ts";
import type { Numbers } from "./typed_arrays.ts";

/** One sampling position along an axis: the two source indices and the fraction. */
interface Sample {
  low: number;
  high: number;
  frac: number;
  oneMinusFrac: number;
}

function samples(inSize: number, outSize: number): Sample[] {
  const f = Math.fround;
  const scale = f(inSize / outSize);
  const result: Sample[] = [];
  for (let o = 0; o < outSize; o++) {
    const position = f(o * scale);
    const low = Math.floor(position);
    const frac = f(position - low);
    result.push({ low, high: Math.min(low + 1, inSize - 1), frac, oneMinusFrac: f(1 - frac) });
  }
  return result;
}

/**
 * Resizes `input` (extents `dims`) to outHeight x outWidth. `quantized` truncates each result
 * to an integer (uint8 output); otherwise the float32 result is stored (a Float16Array output
 * then rounds it to float16).
 */
export function resizeBilinear(
  input: ArrayLike<number>,
  dims: ImageDims,
  outHeight: number,
  outWidth: number,
  nchw: boolean,
  quantized: boolean,
  output: Numbers,
): void {
  const f = Math.fround;
  const out: ImageDims = { ...dims, height: outHeight, width: outWidth };
  // Offsets of channel 0; channel c adds c * channelStride.
  const from = imageIndex(dims, nchw);
  const to = imageIndex(out, nchw);
  const inChannelStride = nchw ? dims.height * dims.width : 1;
  const outChannelStride = nchw ? outHeight * outWidth : 1;
  const ys = samples(dims.height, outHeight);
  const xs = samples(dims.width, outWidth);
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
