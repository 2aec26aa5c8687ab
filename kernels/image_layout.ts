/**
 * 4-D image layouts: the NHWC extents of an image whatever its layout, element indexing in
 * NHWC or NCHW (HAL 1.2's layout flag), and NCHW <-> NHWC transposes for kernels that only
 * run NHWC.
 */
import type { Numbers, ReadonlyNumbers } from "./typed_arrays.ts";

/** Image extents in NHWC order, whatever the data layout. */
export interface ImageDims {
  batches: number;
  height: number;
  width: number;
  depth: number;
}

/** Flat index of element (b, y, x, c) of an image in NHWC or NCHW layout. */
export function imageIndex(
  dims: ImageDims,
  nchw: boolean,
): (b: number, y: number, x: number, c: number) => number {
  const { height: h, width: w, depth: d } = dims;
  return nchw
    ? (b, y, x, c) => ((b * d + c) * h + y) * w + x
    : (b, y, x, c) => ((b * h + y) * w + x) * d + c;
}

/**
 * Transposes each of `batches` consecutive row-major [rows, cols] matrices of `src` into a
 * [cols, rows] matrix of `dst` (an NCHW image is [channels, plane] per batch, an NHWC one
 * [plane, channels]).
 */
function transposeBatches(
  src: ReadonlyNumbers,
  dst: Numbers,
  batches: number,
  rows: number,
  cols: number,
): void {
  const size = rows * cols;
  for (let b = 0; b < batches; b++) {
    const base = b * size;
    for (let r = 0; r < rows; r++) {
      let s = base + r * cols;
      let d = base + r;
      for (let c = 0; c < cols; c++, s++, d += rows) dst[d] = src[s];
    }
  }
}

/** Copies an NCHW tensor into `dst` in NHWC order. */
export function nchwToNhwc(
  src: ReadonlyNumbers,
  dst: Numbers,
  batches: number,
  channels: number,
  height: number,
  width: number,
): void {
  transposeBatches(src, dst, batches, channels, height * width);
}

/** Copies an NHWC tensor into `dst` in NCHW order. */
export function nhwcToNchw(
  src: ReadonlyNumbers,
  dst: Numbers,
  batches: number,
  channels: number,
  height: number,
  width: number,
): void {
  transposeBatches(src, dst, batches, height * width, channels);
}
