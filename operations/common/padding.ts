/**
 * Spatial geometry shared by the windowed operations (CONV_2D, DEPTHWISE_CONV_2D and the
 * pooling operations): NNAPI implicit padding schemes (`PADDING_SAME` pads so that the
 * output size is ceil(input / stride), `PADDING_VALID` pads nothing), their conversion to
 * explicit padding (`calculateExplicitPadding` of nn/common/OperationsUtils) and the output
 * size formula (`computeOutSize`), with the dilation factor of the HAL 1.2 forms.
 */
import { PADDING_SAME, PADDING_VALID } from "../../nnapi/types.ts";
import { check } from "../operation.ts";

/** Explicit padding of one spatial axis. */
export interface AxisPadding {
  head: number;
  tail: number;
}

/** Explicit padding of both spatial axes, in NNAPI's operand order. */
export interface Padding2d {
  left: number;
  right: number;
  top: number;
  bottom: number;
}

/** Checks an implicit padding code read from a model operand. */
export function checkPaddingCode(code: number, what: string): void {
  check(
    code === PADDING_SAME || code === PADDING_VALID,
    `${what} is ${code}, expected ${PADDING_SAME} (SAME) or ${PADDING_VALID} (VALID)`,
  );
}

/** Size of a dilated filter: the extent its taps span. */
export function effectiveFilterSize(filterSize: number, dilation = 1): number {
  return (filterSize - 1) * dilation + 1;
}

/**
 * NNAPI `calculateExplicitPadding`: the head/tail padding an implicit scheme means for one
 * axis. SAME splits the missing extent with the smaller half first; VALID pads nothing.
 */
export function explicitPadding(
  inSize: number,
  stride: number,
  filterSize: number,
  scheme: number,
  dilation = 1,
): AxisPadding {
  if (scheme !== PADDING_SAME) return { head: 0, tail: 0 };
  const outSize = Math.trunc((inSize + stride - 1) / stride);
  const needed = (outSize - 1) * stride + effectiveFilterSize(filterSize, dilation);
  if (needed <= inSize) return { head: 0, tail: 0 };
  const head = Math.trunc((needed - inSize) / 2);
  return { head, tail: needed - inSize - head };
}

/** NNAPI `computeOutSize`: output extent of one axis (C++ integer division). */
export function computeOutSize(
  imageSize: number,
  filterSize: number,
  stride: number,
  headPadding: number,
  tailPadding: number,
  dilation = 1,
): number {
  return Math.trunc(
    (imageSize - effectiveFilterSize(filterSize, dilation) + stride + headPadding + tailPadding) /
      stride,
  );
}

/** Explicit 2-D padding from an implicit scheme (width and height handled independently). */
export function explicitPadding2d(
  scheme: number,
  inWidth: number,
  inHeight: number,
  strideWidth: number,
  strideHeight: number,
  filterWidth: number,
  filterHeight: number,
  dilationWidth = 1,
  dilationHeight = 1,
): Padding2d {
  const w = explicitPadding(inWidth, strideWidth, filterWidth, scheme, dilationWidth);
  const h = explicitPadding(inHeight, strideHeight, filterHeight, scheme, dilationHeight);
  return { left: w.head, right: w.tail, top: h.head, bottom: h.tail };
}

/**
 * The checks NNAPI applies to window parameters before computing output sizes: paddings
 * non-negative and smaller than the (effective) filter, strides and dilations positive.
 */
export function checkWindow(
  padding: Padding2d,
  strideWidth: number,
  strideHeight: number,
  effectiveFilterWidth: number,
  effectiveFilterHeight: number,
): void {
  check(
    padding.left >= 0 && padding.right >= 0 && padding.top >= 0 && padding.bottom >= 0,
    `padding (${padding.left}, ${padding.right}, ${padding.top}, ${padding.bottom}) must be ` +
      `non-negative`,
  );
  check(
    strideWidth > 0 && strideHeight > 0,
    `strides (${strideWidth}, ${strideHeight}) must be positive`,
  );
  check(
    effectiveFilterWidth > padding.left && effectiveFilterWidth > padding.right,
    `horizontal padding (${padding.left}, ${padding.right}) must be smaller than the ` +
      `filter width ${effectiveFilterWidth}`,
  );
  check(
    effectiveFilterHeight > padding.top && effectiveFilterHeight > padding.bottom,
    `vertical padding (${padding.top}, ${padding.bottom}) must be smaller than the ` +
      `filter height ${effectiveFilterHeight}`,
  );
}

/** Output height and width of a window operation; both must be positive. */
export function outputSize2d(
  inHeight: number,
  inWidth: number,
  filterHeight: number,
  filterWidth: number,
  strideHeight: number,
  strideWidth: number,
  padding: Padding2d,
  dilationHeight = 1,
  dilationWidth = 1,
): [number, number] {
  const outHeight = computeOutSize(
    inHeight,
    filterHeight,
    strideHeight,
    padding.top,
    padding.bottom,
    dilationHeight,
  );
  const outWidth = computeOutSize(
    inWidth,
    filterWidth,
    strideWidth,
    padding.left,
    padding.right,
    dilationWidth,
  );
  check(
    outHeight > 0 && outWidth > 0,
    `the window does not fit the ${inHeight}x${inWidth} input (output ${outHeight}x${outWidth})`,
  );
  return [outHeight, outWidth];
}
