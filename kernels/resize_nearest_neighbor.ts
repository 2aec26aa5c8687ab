/**
 * RESIZE_NEAREST_NEIGHBOR kernel: TFLite `reference_ops::ResizeNearestNeighbor` with
 * align_corners = false, as Android 10 NNAPI calls it: output pixel (y, x) copies input pixel
 * (min(floor(y * inHeight / outHeight), inHeight - 1), likewise for x), the scales computed
 * in float32. Copies values, so it serves every element type and both layouts.
 */
import { type ImageDims, imageIndex } from "./image_layout.ts";
import type { Numbers, ReadonlyNumbers } from "./typed_arrays.ts";

/** Source index along one axis for each output index. */
function sourceIndices(inSize: number, outSize: number): Int32Array {
  const scale = Math.fround(inSize / outSize);
  const result = new Int32Array(outSize);
  for (let o = 0; o < outSize; o++) {
    result[o] = Math.min(Math.floor(Math.fround(o * scale)), inSize - 1);
  }
  return result;
}

/** Resizes `input` (extents `dims`) to outHeight x outWidth by nearest-neighbor sampling. */
export function resizeNearestNeighbor(
  input: ReadonlyNumbers,
  dims: ImageDims,
  outHeight: number,
  outWidth: number,
  nchw: boolean,
  output: Numbers,
): void {
  const out: ImageDims = { ...dims, height: outHeight, width: outWidth };
  const from = imageIndex(dims, nchw);
  const to = imageIndex(out, nchw);
  const inChannelStride = nchw ? dims.height * dims.width : 1;
  const outChannelStride = nchw ? outHeight * outWidth : 1;
  const ys = sourceIndices(dims.height, outHeight);
  const xs = sourceIndices(dims.width, outWidth);
  for (let b = 0; b < dims.batches; b++) {
    for (let y = 0; y < outHeight; y++) {
      for (let x = 0; x < outWidth; x++) {
        const i = from(b, ys[y], xs[x], 0);
        const o = to(b, y, x, 0);
        for (let c = 0; c < dims.depth; c++) {
          output[o + c * outChannelStride] = input[i + c * inChannelStride];
        }
      }
    }
  }
}
