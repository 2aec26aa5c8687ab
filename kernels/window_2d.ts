/**
 * The output-pixel walk shared by the windowed NHWC kernels (CONV_2D, DEPTHWISE_CONV_2D and
 * the pooling kernels): for each output pixel, where its window starts in the input and
 * which filter taps fall inside the input, so that the inner loops never test bounds.
 */

/** Extents and window parameters of a 2-D windowed operation (NHWC). */
export interface Window2dGeometry {
  batches: number;
  inHeight: number;
  inWidth: number;
  outHeight: number;
  outWidth: number;
  filterHeight: number;
  filterWidth: number;
  strideHeight: number;
  strideWidth: number;
  padTop: number;
  padLeft: number;
  /** Distance between filter taps (1 when absent, as for pooling). */
  dilationHeight?: number;
  dilationWidth?: number;
}

/**
 * For each output position along one axis, the first and one-past-last filter tap whose
 * input coordinate `position*stride - pad + tap*dilation` falls inside [0, inSize), as
 * pairs in one array (computed once per call so the inner loops never test bounds).
 */
export function tapRanges(
  outSize: number,
  stride: number,
  pad: number,
  taps: number,
  dilation: number,
  inSize: number,
): Int32Array {
  const ranges = new Int32Array(2 * outSize);
  for (let p = 0; p < outSize; p++) {
    const origin = p * stride - pad;
    let start = 0;
    while (start < taps && origin + start * dilation < 0) start++;
    let end = taps;
    while (end > start && origin + (end - 1) * dilation >= inSize) end--;
    ranges[2 * p] = start;
    ranges[2 * p + 1] = end;
  }
  return ranges;
}

/**
 * One output pixel: its number in NHWC order (times the output depth = its first output
 * element), its batch, and per axis the input coordinate of tap 0 and the taps [from, to)
 * that lie inside the input.
 */
export type OutputPixelVisitor = (
  pixel: number,
  batch: number,
  iy0: number,
  fy0: number,
  fy1: number,
  ix0: number,
  fx0: number,
  fx1: number,
) => void;

/** Calls `visit` for every output pixel, in NHWC order. */
export function forEachOutputPixel(g: Window2dGeometry, visit: OutputPixelVisitor): void {
  const rows = tapRanges(
    g.outHeight,
    g.strideHeight,
    g.padTop,
    g.filterHeight,
    g.dilationHeight ?? 1,
    g.inHeight,
  );
  const cols = tapRanges(
    g.outWidth,
    g.strideWidth,
    g.padLeft,
    g.filterWidth,
    g.dilationWidth ?? 1,
    g.inWidth,
  );
  let pixel = 0;
  for (let b = 0; b < g.batches; b++) {
    for (let oy = 0; oy < g.outHeight; oy++) {
      const iy0 = oy * g.strideHeight - g.padTop;
      const fy0 = rows[2 * oy], fy1 = rows[2 * oy + 1];
      for (let ox = 0; ox < g.outWidth; ox++) {
        const ix0 = ox * g.strideWidth - g.padLeft;
        visit(pixel++, b, iy0, fy0, fy1, ix0, cols[2 * ox], cols[2 * ox + 1]);
      }
    }
  }
}
