/**
 * ROI max pooling (Fast R-CNN): each region of interest, rounded to whole feature-map cells,
 * is divided into out-height x out-width bins and each bin takes the maximum of its cells.
 * NHWC data of any element type (values are only compared); float32 geometry as the Android
 * reference computes it.
 */
import { roundHalfAwayFromZero } from "./fixed_point.ts";
import type { ImageDims } from "./image_layout.ts";
import type { Numbers, ReadonlyNumbers } from "./typed_arrays.ts";

const f = Math.fround;

/** The parameters of one ROI pooling run. */
export interface RoiPoolingParams {
  outHeight: number;
  outWidth: number;
  /** Ratio of the original image to the feature map, per axis. */
  heightStride: number;
  widthStride: number;
  /** Value of a bin that covers no cell (the input's zero point). */
  emptyValue: number;
}

/**
 * ROI max pooling on NHWC data. `rois` holds real [x1, y1, x2, y2] per ROI in image
 * coordinates, `batchIds` the batch of each. Returns the index of the first malformed ROI
 * (bad batch, negative or out-of-map corner, inverted box), or -1 when all were pooled.
 */
export function roiPoolingNhwc(
  input: ReadonlyNumbers,
  dims: ImageDims,
  rois: ReadonlyNumbers,
  batchIds: ReadonlyNumbers,
  params: RoiPoolingParams,
  output: Numbers,
): number {
  const { height, width, depth } = dims;
  const heightScale = f(1 / params.heightStride);
  const widthScale = f(1 / params.widthStride);
  const { outHeight, outWidth } = params;
  let out = 0;
  for (let r = 0; r < batchIds.length; r++) {
    const batch = batchIds[r];
    const [x1, y1, x2, y2] = [rois[4 * r], rois[4 * r + 1], rois[4 * r + 2], rois[4 * r + 3]];
    const scaled = [
      f(x1 * widthScale),
      f(y1 * heightScale),
      f(x2 * widthScale),
      f(y2 * heightScale),
    ];
    const malformed = batch < 0 || batch >= dims.batches ||
      !(x1 >= 0 && y1 >= 0 && x2 >= 0 && y2 >= 0) || scaled[0] > width ||
      scaled[1] > height || scaled[2] > width || scaled[3] > height || x1 > x2 || y1 > y2;
    if (malformed) return r;
    const [wRoiStart, hRoiStart, wRoiEnd, hRoiEnd] = scaled.map(roundHalfAwayFromZero);
    const wStepSize = f(Math.max(wRoiEnd - wRoiStart + 1, 1) / outWidth);
    const hStepSize = f(Math.max(hRoiEnd - hRoiStart + 1, 1) / outHeight);
    const base = batch * height * width * depth;
    for (let i = 0; i < outHeight; i++) {
      const hStart = Math.min(Math.floor(f(f(hStepSize * i) + hRoiStart)), height);
      const hEnd = Math.min(Math.ceil(f(f(hStepSize * (i + 1)) + hRoiStart)), height);
      for (let j = 0; j < outWidth; j++) {
        const wStart = Math.min(Math.floor(f(f(wStepSize * j) + wRoiStart)), width);
        const wEnd = Math.min(Math.ceil(f(f(wStepSize * (j + 1)) + wRoiStart)), width);
        for (let k = 0; k < depth; k++) {
          let max = params.emptyValue;
          let first = true;
          for (let h = hStart; h < hEnd; h++) {
            for (let w = wStart; w < wEnd; w++) {
              const value = input[base + (h * width + w) * depth + k];
              if (first || value > max) {
                max = value;
                first = false;
              }
            }
          }
          output[out + k] = max;
        }
        out += depth;
      }
    }
  }
  return -1;
}
