/**
 * The data layouts of HAL 1.2's NCHW flag: operations reason in NHWC extents and kernels
 * run on NHWC data, so NCHW tensors are read through transposed copies and written back.
 */
import { type ImageDims, nchwToNhwc, nhwcToNchw } from "../../kernels/image_layout.ts";
import { allocate, type Tensor, type TensorData } from "../../nnapi/tensor.ts";

/** [batches, height, width, channels] of a rank-4 shape in the given layout. */
export function nhwcDims(
  shape: readonly number[],
  nchw: boolean,
): [number, number, number, number] {
  return nchw ? [shape[0], shape[2], shape[3], shape[1]] : [shape[0], shape[1], shape[2], shape[3]];
}

/** A rank-4 shape in the given layout from NHWC extents. */
export function layoutShape(
  batches: number,
  height: number,
  width: number,
  channels: number,
  nchw: boolean,
): number[] {
  return nchw ? [batches, channels, height, width] : [batches, height, width, channels];
}

/** The NHWC extents of a rank-4 image shape in the given layout, as the kernels take them. */
export function imageDims(shape: readonly number[], nchw: boolean): ImageDims {
  const [batches, height, width, depth] = nhwcDims(shape, nchw);
  return { batches, height, width, depth };
}

/** A rank-4 image shape in the given layout from NHWC extents. */
export function imageShape(dims: ImageDims, nchw: boolean): number[] {
  return layoutShape(dims.batches, dims.height, dims.width, dims.depth, nchw);
}

/** The data of a rank-4 tensor in NHWC order (a transposed copy when it is NCHW). */
export function nhwcData(tensor: Tensor, nchw: boolean): TensorData {
  const data = tensor.data!;
  if (!nchw) return data;
  const [n, c, h, w] = tensor.shape;
  const copy = allocate(tensor.type, data.length);
  nchwToNhwc(data, copy, n, c, h, w);
  return copy;
}

/**
 * Runs `compute` on an NHWC buffer for a rank-4 output and stores the result in the output
 * tensor (the output's own buffer when it is NHWC, a transposed copy when it is NCHW).
 */
export function writeNhwc(
  output: Tensor,
  nchw: boolean,
  compute: (data: TensorData) => void,
): void {
  const data = output.data!;
  if (!nchw) {
    compute(data);
    return;
  }
  const scratch = allocate(output.type, data.length);
  compute(scratch);
  const [n, c, h, w] = output.shape;
  nhwcToNchw(scratch, data, n, c, h, w);
}
