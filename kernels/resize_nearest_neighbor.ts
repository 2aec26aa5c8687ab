/**
 * RESIZE_NEAREST_NEIGHBOR kernel: Android 11 NNAPI's `resizeNearestNeighbor` (TFLite's
 * `GetNearestNeighbor`), with HAL 1.3's align_corners and half_pixel_centers. Output index o
 * reads source index min(floor(o * scale), in - 1); with aligned corners the product is
 * rounded half away from zero instead of floored, and with half-pixel centers it is
 * (o + 0.5) * scale, floored and kept at least 0. The scale is in / out, or
 * (in - 1) / (out - 1) with aligned corners (and out > 1), all in float32. With neither flag
 * this is exactly the Android 10 (HAL 1.2) kernel. Copies values, so it serves every
 * element type and both layouts.
 */
import { type ImageDims, imageIndex } from "./image_layout.ts";
import { type ResizeGeometry, resizeScale } from "./resize_bilinear.ts";
import type { Numbers, ReadonlyNumbers } from "./typed_arrays.ts";

/** Source index along one axis for each output index. */
function sourceIndices(
  inSize: number,
  outSize: number,
  options: { alignCorners: boolean; halfPixelCenters: boolean },
): Int32Array {
  const { alignCorners, halfPixelCenters } = options;
  const scale = resizeScale(inSize, outSize, alignCorners);
  const result = new Int32Array(outSize);
  for (let o = 0; o < outSize; o++) {
    const position = Math.fround((halfPixelCenters ? o + 0.5 : o) * scale);
    // position >= 0, where Math.round's half-up is C's roundf (half away from zero).
    const index = Math.min(alignCorners ? Math.round(position) : Math.floor(position), inSize - 1);
    result[o] = halfPixelCenters ? Math.max(index, 0) : index;
  }
  return result;
}

/** Resizes `input` as `geometry` says into `output` by nearest-neighbor sampling. */
export function resizeNearestNeighbor(
  input: ReadonlyNumbers,
  output: Numbers,
  geometry: ResizeGeometry,
): void {
  const { dims, outHeight, outWidth, nchw } = geometry;
  const coordinates = {
    alignCorners: geometry.alignCorners ?? false,
    halfPixelCenters: geometry.halfPixelCenters ?? false,
  };
  const out: ImageDims = { ...dims, height: outHeight, width: outWidth };
  const from = imageIndex(dims, nchw);
  const to = imageIndex(out, nchw);
  const inChannelStride = nchw ? dims.height * dims.width : 1;
  const outChannelStride = nchw ? outHeight * outWidth : 1;
  const ys = sourceIndices(dims.height, outHeight, coordinates);
  const xs = sourceIndices(dims.width, outWidth, coordinates);
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
