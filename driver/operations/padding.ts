/**
 * Spatial geometry shared by the windowed operations (CONV_2D, DEPTHWISE_CONV_2D and the
 * pooling operations): NNAPI implicit padding schemes, their conversion to explicit padding
 * (`calculateExplicitPadding` of nn/common/OperationsUtils) and the output size formula
 * (`computeOutSize`), with the dilation factor of the HAL 1.2 forms; plus the activation
 * code check, the NCHW <-> NHWC adapters of the HAL 1.2 layout flag (kernels run NHWC), and
 * the validation / shape inference / dispatch the three pooling operations share.
 */
import { nchwToNhwc, nhwcToNchw } from "../../kernels/conv_common.ts";
import {
  type ActivationRange,
  activationRangeFloat,
  activationRangeQuantized,
} from "../../kernels/fixed_point.ts";
import type { Pool2dGeometry } from "../../kernels/pool_2d.ts";
import {
  allocate,
  elementCount,
  type Tensor,
  type TensorData,
  type TensorInfo,
} from "../tensor.ts";
import type { HalVersion, OperandType } from "../types.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  type OperationSignature,
  type PrepareInput,
  scalarOf,
  scalarValue,
} from "./operation.ts";

/** `ANEURALNETWORKS_PADDING_SAME`: pad so that the output size is ceil(input / stride). */
export const PADDING_SAME = 1;
/** `ANEURALNETWORKS_PADDING_VALID`: no padding. */
export const PADDING_VALID = 2;

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

/** Checks a fused activation code (NONE, RELU, RELU1, RELU6). */
export function checkActivation(code: number, what: string): void {
  check(
    Number.isInteger(code) && code >= 0 && code <= 3,
    `${what} is ${code}, expected a fused activation code 0..3`,
  );
}

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

/** The resolved parameters of one pooling call (AVERAGE/MAX/L2_POOL_2D). */
export interface PoolParams {
  padding: Padding2d;
  strideWidth: number;
  strideHeight: number;
  filterWidth: number;
  filterHeight: number;
  activation: number;
  nchw: boolean;
}

/**
 * Reads the scalar parameters of a pooling operation (Android 10 `PoolingParam`): 10/11
 * inputs = explicit padding, 7/8 = implicit scheme; the last of 8/11 is the NCHW flag.
 */
export function poolParams(
  count: number,
  scalar: (index: number) => number,
  inputShape: readonly number[],
): PoolParams {
  const explicit = count >= 10;
  const nchw = (count === 8 || count === 11) && scalar(count - 1) !== 0;
  const [, inHeight, inWidth] = nhwcDims(inputShape, nchw);
  const first = explicit ? 5 : 2;
  const strideWidth = scalar(first);
  const strideHeight = scalar(first + 1);
  const filterWidth = scalar(first + 2);
  const filterHeight = scalar(first + 3);
  const activation = scalar(first + 4);
  check(
    filterWidth > 0 && filterHeight > 0,
    `filter size (${filterWidth}, ${filterHeight}) must be positive`,
  );
  let padding: Padding2d;
  if (explicit) {
    padding = { left: scalar(1), right: scalar(2), top: scalar(3), bottom: scalar(4) };
  } else {
    const scheme = scalar(1);
    checkPaddingCode(scheme, "input 1 (padding scheme)");
    padding = explicitPadding2d(
      scheme,
      inWidth,
      inHeight,
      strideWidth,
      strideHeight,
      filterWidth,
      filterHeight,
    );
  }
  checkActivation(activation, "the fused activation");
  checkWindow(padding, strideWidth, strideHeight, filterWidth, filterHeight);
  return { padding, strideWidth, strideHeight, filterWidth, filterHeight, activation, nchw };
}

/** Output shape of a pooling operation (Android 10 `pooling::prepare`). */
export function poolOutputShape(
  inputShape: readonly number[],
  p: PoolParams,
): number[] {
  check(inputShape.length === 4, `input 0 has rank ${inputShape.length}, expected 4`);
  const [batches, inHeight, inWidth, channels] = nhwcDims(inputShape, p.nchw);
  check(
    inHeight > 0 && inWidth > 0 && channels > 0,
    `only the batch dimension may be 0 (input [${inputShape}])`,
  );
  const [outHeight, outWidth] = outputSize2d(
    inHeight,
    inWidth,
    p.filterHeight,
    p.filterWidth,
    p.strideHeight,
    p.strideWidth,
    p.padding,
  );
  return layoutShape(batches, outHeight, outWidth, channels, p.nchw);
}

/**
 * Validates a pooling signature (Android 10 `pooling::validate`): 7/10 inputs (HAL 1.0) or
 * 8/11 with the NCHW flag (HAL 1.2); `inputTypes` lists the supported input types
 * (float16 needs HAL 1.2). Quantized outputs must keep the input's scale and zero point.
 */
export function validatePool(
  signature: OperationSignature,
  inputTypes: readonly OperandType[],
): HalVersion {
  checkArity(signature, [7, 8, 10, 11], 1);
  const input = signature.inputs[0];
  check(
    inputTypes.includes(input.type),
    `input 0 (operand ${input.index}) has unsupported type ${input.type}`,
  );
  const count = signature.inputs.length;
  const layout = count === 8 || count === 11;
  const expected: OperandType[] = [input.type];
  for (let i = 1; i < count; i++) expected.push(layout && i === count - 1 ? "BOOL" : "INT32");
  checkTypes(signature, expected, [input.type]);
  checkRank(input, "input 0", (r) => r === 4, "4");
  const output = signature.outputs[0];
  if (input.type === "TENSOR_QUANT8_ASYMM") {
    check(
      output.scale === input.scale && output.zeroPoint === input.zeroPoint,
      `output 0 (operand ${output.index}) has scale ${output.scale} and zero point ` +
        `${output.zeroPoint}, expected the input's ${input.scale} and ${input.zeroPoint}`,
    );
  }
  return layout || input.type === "TENSOR_FLOAT16" ? "V1_2" : "V1_0";
}

/** Infers a pooling output shape. */
export function preparePool(
  inputs: readonly PrepareInput[],
  _outputs: readonly TensorInfo[],
): number[][] {
  const p = poolParams(
    inputs.length,
    (i) => scalarValue(inputs[i], `input ${i}`),
    inputs[0].shape,
  );
  return [poolOutputShape(inputs[0].shape, p)];
}

/** A pooling kernel on NHWC data. */
export type PoolKernel = (
  g: Pool2dGeometry,
  input: TensorData,
  activation: ActivationRange,
  output: TensorData,
) => void;

/**
 * Runs a pooling kernel: resolves the parameters, the activation range (quantized with the
 * output's scale and zero point for quant8) and the layout.
 */
export function executePool(
  inputs: readonly Tensor[],
  outputs: readonly Tensor[],
  kernel: PoolKernel,
): void {
  const input = inputs[0];
  const output = outputs[0];
  if (elementCount(output.shape) === 0) return;
  const p = poolParams(inputs.length, (i) => scalarOf(inputs[i]), input.shape);
  const [batches, inHeight, inWidth, depth] = nhwcDims(input.shape, p.nchw);
  const [, outHeight, outWidth] = nhwcDims(output.shape, p.nchw);
  const geometry: Pool2dGeometry = {
    batches,
    inHeight,
    inWidth,
    depth,
    outHeight,
    outWidth,
    filterHeight: p.filterHeight,
    filterWidth: p.filterWidth,
    strideHeight: p.strideHeight,
    strideWidth: p.strideWidth,
    padTop: p.padding.top,
    padLeft: p.padding.left,
  };
  const range = output.type === "TENSOR_QUANT8_ASYMM"
    ? activationRangeQuantized(p.activation, output.scale, output.zeroPoint)
    : activationRangeFloat(p.activation);
  const inData = nhwcData(input, p.nchw);
  writeNhwc(output, p.nchw, (out) => kernel(geometry, inData, range, out));
}
