/**
 * ONNX spatial padding (pads, auto_pad, ceil_mode) as NNAPI's explicit padding or implicit
 * padding scheme, for the image operations in NCHW (dims[2] = height, dims[3] = width).
 */
import type { NodeView } from "../node_view.ts";

/** NNAPI PaddingCode. */
const PADDING_SAME = 1;

export type SpatialPadding =
  | { kind: "explicit"; top: number; left: number; bottom: number; right: number }
  | { kind: "implicit"; scheme: number };

/** Padding that makes the output ceil(size / stride) long (ONNX SAME_UPPER / SAME_LOWER). */
function samePadding(
  size: number,
  kernel: number,
  stride: number,
  dilation: number,
  upper: boolean,
) {
  const effective = (kernel - 1) * dilation + 1;
  const out = Math.ceil(size / stride);
  const total = Math.max((out - 1) * stride + effective - size, 0);
  const small = Math.floor(total / 2);
  return upper ? [small, total - small] : [total - small, small];
}

/** The padding of a windowed operation over NCHW `dims`. */
export function spatialPadding(
  node: NodeView,
  dims: readonly number[],
  kernel: readonly number[],
  strides: readonly number[],
  dilations: readonly number[],
): SpatialPadding {
  const autoPad = node.string("auto_pad", "NOTSET");
  switch (autoPad) {
    case "NOTSET": {
      const pads = node.ints("pads", [0, 0, 0, 0]);
      if (pads.length !== 4) throw new Error(`pads has ${pads.length} values, expected 4`);
      const [top, left, bottom, right] = pads;
      return { kind: "explicit", top, left, bottom, right };
    }
    case "VALID":
      return { kind: "explicit", top: 0, left: 0, bottom: 0, right: 0 };
    case "SAME_UPPER":
    case "SAME_LOWER": {
      const upper = autoPad === "SAME_UPPER";
      const [h, w] = [dims[2], dims[3]];
      if (h === 0 || w === 0) {
        if (upper) return { kind: "implicit", scheme: PADDING_SAME };
        throw new Error("auto_pad SAME_LOWER needs the spatial size known at conversion");
      }
      const [top, bottom] = samePadding(h, kernel[0], strides[0], dilations[0], upper);
      const [left, right] = samePadding(w, kernel[1], strides[1], dilations[1], upper);
      return { kind: "explicit", top, left, bottom, right };
    }
    default:
      throw new Error(`auto_pad '${autoPad}' is not an ONNX padding mode`);
  }
}

/**
 * Extra end padding so a pooling output has ceil((size + pads - kernel) / stride) + 1
 * windows, dropping a last window that would start in the end padding (as onnxruntime does).
 */
export function ceilModeExtra(
  size: number,
  kernel: number,
  stride: number,
  begin: number,
  end: number,
): number {
  const span = size + begin + end - kernel;
  let out = Math.ceil(span / stride) + 1;
  if ((out - 1) * stride >= size + begin) out--;
  return Math.max((out - 1) * stride + kernel - (size + begin + end), 0);
}
