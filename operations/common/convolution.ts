/**
 * What CONV_2D and DEPTHWISE_CONV_2D share (Android 10 `conv_2d::validate` /
 * `Conv2dParam::initialize` and the DEPTHWISE_CONV_2D twins): the forms their input counts
 * select, the scalar parameters (DEPTHWISE_CONV_2D has a depth multiplier before the
 * activation, so its later inputs sit one position further), the operand checks, the
 * output shape and the NHWC kernel dispatch.
 *
 * Forms by input count, with base = 7 (CONV_2D) or 8 (DEPTHWISE_CONV_2D) and the type of
 * input `base`:
 * - base: implicit padding (SAME/VALID code), strides, [depth multiplier,] activation;
 * - base + 3 with an INT32: explicit left/right/top/bottom padding instead (HAL 1.0);
 * - base + 1 / base + 3 with a BOOL: implicit + NCHW flag [+ dilation] (HAL 1.2);
 * - base + 4 / base + 6: explicit + NCHW flag [+ dilation] (HAL 1.2).
 */
import type {
  depthwiseConv2dFloat,
  depthwiseConv2dQuantized,
  DepthwiseGeometry,
} from "../../kernels/conv_depthwise.ts";
import { activationRangeFloat } from "../../kernels/fixed_point.ts";
import { elementCount, type Tensor, type TensorInfo } from "../../nnapi/tensor.ts";
import type { HalVersion, OperandType } from "../../nnapi/types.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  type OperationSignature,
  scalarOf,
} from "../operation.ts";
import { layoutShape, nhwcData, nhwcDims, writeNhwc } from "./layout.ts";
import { checkInputType } from "./operand_types.ts";
import {
  checkPaddingCode,
  checkWindow,
  effectiveFilterSize,
  explicitPadding2d,
  outputSize2d,
  type Padding2d,
} from "./padding.ts";
import { checkBiasScale, convolutionOutputStage } from "./quantization.ts";
import { checkFusedActivation } from "./scalars.ts";

/** The two operations this module serves. */
export type ConvolutionType = "CONV_2D" | "DEPTHWISE_CONV_2D";

/** Where the optional parameters of one form sit. */
interface ConvolutionForm {
  explicit: boolean;
  /** Index of the NCHW flag, or -1. */
  layout: number;
  /** Index of the width dilation factor (height follows), or -1. */
  dilation: number;
}

/** Inputs of the implicit-padding HAL 1.0 form. */
function baseCount(type: ConvolutionType): number {
  return type === "DEPTHWISE_CONV_2D" ? 8 : 7;
}

/** The form of a call from its input count and the type of input `base`. */
function convolutionForm(
  type: ConvolutionType,
  types: readonly (OperandType | undefined)[],
): ConvolutionForm | undefined {
  const base = baseCount(type);
  const count = types.length;
  const flag = types[base];
  if (count === base) return { explicit: false, layout: -1, dilation: -1 };
  if (count === base + 1 && flag === "BOOL") {
    return { explicit: false, layout: base, dilation: -1 };
  }
  if (count === base + 3 && flag === "BOOL") {
    return { explicit: false, layout: base, dilation: base + 1 };
  }
  if (count === base + 3 && flag === "INT32") return { explicit: true, layout: -1, dilation: -1 };
  if (count === base + 4 && flag === "INT32") {
    return { explicit: true, layout: base + 3, dilation: -1 };
  }
  if (count === base + 6 && flag === "INT32") {
    return { explicit: true, layout: base + 3, dilation: base + 4 };
  }
  return undefined;
}

/** The resolved parameters of one call. */
export interface ConvolutionParams {
  padding: Padding2d;
  strideWidth: number;
  strideHeight: number;
  dilationWidth: number;
  dilationHeight: number;
  /** 1 for CONV_2D. */
  depthMultiplier: number;
  activation: number;
  nchw: boolean;
}

/**
 * Reads the scalar parameters (`scalar(i)` gives input i's value) and resolves implicit
 * padding against the input and filter shapes, with NNAPI's checks.
 */
export function convolutionParams(
  inputs: readonly TensorInfo[],
  scalar: (index: number) => number,
  type: ConvolutionType,
): ConvolutionParams {
  const depthwise = type === "DEPTHWISE_CONV_2D";
  const form = convolutionForm(type, inputs.map((t) => t.type));
  check(form !== undefined, `unsupported ${type} form with ${inputs.length} inputs`);
  const filterShape = inputs[1].shape;
  const nchw = form.layout >= 0 && scalar(form.layout) !== 0;
  const dilationWidth = form.dilation >= 0 ? scalar(form.dilation) : 1;
  const dilationHeight = form.dilation >= 0 ? scalar(form.dilation + 1) : 1;
  check(
    dilationWidth > 0 && dilationHeight > 0,
    `dilation factors (${dilationWidth}, ${dilationHeight}) must be positive`,
  );
  const [, inHeight, inWidth] = nhwcDims(inputs[0].shape, nchw);
  let padding: Padding2d | undefined;
  let scheme = 0;
  let next: number;
  if (form.explicit) {
    padding = { left: scalar(3), right: scalar(4), top: scalar(5), bottom: scalar(6) };
    next = 7;
  } else {
    scheme = scalar(3);
    checkPaddingCode(scheme, "input 3 (padding scheme)");
    next = 4;
  }
  const strideWidth = scalar(next);
  const strideHeight = scalar(next + 1);
  const depthMultiplier = depthwise ? scalar(next + 2) : 1;
  const activationAt = depthwise ? next + 3 : next + 2;
  const activation = scalar(activationAt);
  padding ??= explicitPadding2d(
    scheme,
    inWidth,
    inHeight,
    strideWidth,
    strideHeight,
    filterShape[2],
    filterShape[1],
    dilationWidth,
    dilationHeight,
  );
  check(depthMultiplier > 0, `the depth multiplier ${depthMultiplier} must be positive`);
  checkFusedActivation(activation, `input ${activationAt}`);
  checkWindow(
    padding,
    strideWidth,
    strideHeight,
    effectiveFilterSize(filterShape[2], dilationWidth),
    effectiveFilterSize(filterShape[1], dilationHeight),
  );
  return {
    padding,
    strideWidth,
    strideHeight,
    dilationWidth,
    dilationHeight,
    depthMultiplier,
    activation,
    nchw,
  };
}

const SUPPORTED_INPUTS: readonly OperandType[] = [
  "TENSOR_FLOAT32",
  "TENSOR_FLOAT16",
  "TENSOR_QUANT8_ASYMM",
];

/**
 * Checks operand types and quantization (a per-channel filter is quantized along its
 * output-channel dimension: 0 for CONV_2D, 3 for DEPTHWISE_CONV_2D); returns the HAL
 * version the form needs.
 */
export function validateConvolution(
  signature: OperationSignature,
  type: ConvolutionType,
): HalVersion {
  const base = baseCount(type);
  checkArity(signature, [0, 1, 3, 4, 6].map((extra) => base + extra), 1);
  const [input, filter] = signature.inputs;
  const form = convolutionForm(type, signature.inputs.map((o) => o.type));
  check(
    form !== undefined,
    `${signature.inputs.length} inputs with input ${base} of type ` +
      `${signature.inputs[base]?.type} match no ${type} form`,
  );
  checkInputType(input, 0, SUPPORTED_INPUTS);
  const quantized = input.type === "TENSOR_QUANT8_ASYMM";
  const perChannel = quantized && filter.type === "TENSOR_QUANT8_SYMM_PER_CHANNEL";
  const expected: OperandType[] = [
    input.type,
    perChannel ? filter.type : input.type,
    quantized ? "TENSOR_INT32" : input.type,
  ];
  for (let i = 3; i < signature.inputs.length; i++) {
    expected.push(i === form.layout ? "BOOL" : "INT32");
  }
  checkTypes(signature, expected, [input.type]);
  checkConvolutionOperandRanks(signature);
  const meetsScaleConstraint = checkFilterQuantization(signature, {
    quantized,
    perChannel,
    channelDim: type === "DEPTHWISE_CONV_2D" ? 3 : 0,
  });
  const needsV12 = input.type === "TENSOR_FLOAT16" || perChannel || form.layout >= 0 ||
    form.dilation >= 0 || !meetsScaleConstraint;
  return needsV12 ? "V1_2" : "V1_0";
}

/** Checks the declared ranks of the input (4), the filter (4) and the bias (1). */
export function checkConvolutionOperandRanks(signature: OperationSignature): void {
  const [input, filter, bias] = signature.inputs;
  checkRank(input, "input 0", (r) => r === 4, "4");
  checkRank(filter, "input 1 (filter)", (r) => r === 4, "4");
  checkRank(bias, "input 2 (bias)", (r) => r === 1, "1");
}

/**
 * Checks a quantized filter: a per-channel one is quantized along its output-channel
 * dimension with one scale per channel; otherwise the bias scale rule applies. Returns
 * whether the HAL 1.0 scale constraint holds (false means the form needs HAL 1.2).
 */
export function checkFilterQuantization(
  signature: OperationSignature,
  form: { quantized: boolean; perChannel: boolean; channelDim: number },
): boolean {
  const filter = signature.inputs[1];
  if (form.perChannel) {
    const cq = filter.channelQuant;
    check(
      cq !== undefined && cq.channelDim === form.channelDim,
      `input 1 (operand ${filter.index}) must be quantized per channel along dimension ` +
        `${form.channelDim}`,
    );
    const outDepth = filter.dimensions[form.channelDim];
    check(
      !outDepth || cq.scales.length === outDepth,
      `input 1 (operand ${filter.index}) has ${cq.scales.length} channel scales for ` +
        `${outDepth} output channels`,
    );
    return true;
  }
  return form.quantized ? checkBiasScale(signature, "filter") : true;
}

/** Checks the ranks of the input (4), the filter (4) and the bias (1) at preparation. */
export function checkConvolutionRanks(inputs: readonly TensorInfo[]): void {
  const [input, filter, bias] = inputs;
  check(input.shape.length === 4, `input 0 has rank ${input.shape.length}, expected 4`);
  check(filter.shape.length === 4, `input 1 (filter) has rank ${filter.shape.length}, expected 4`);
  check(bias.shape.length === 1, `input 2 (bias) has rank ${bias.shape.length}, expected 1`);
}

/**
 * The output shape (in the input's layout) for `outDepth` channels, after checking that a
 * per-channel filter has one scale per output channel and that the window fits.
 */
export function convolutionOutputShape(
  inputs: readonly TensorInfo[],
  p: ConvolutionParams,
  outDepth: number,
): number[] {
  const [input, filter] = inputs;
  const cq = filter.channelQuant;
  check(
    filter.type !== "TENSOR_QUANT8_SYMM_PER_CHANNEL" ||
      (cq !== undefined && cq.scales.length === outDepth),
    `input 1 (filter) needs ${outDepth} channel scales`,
  );
  const [batches, inHeight, inWidth] = nhwcDims(input.shape, p.nchw);
  const [outHeight, outWidth] = outputSize2d(
    inHeight,
    inWidth,
    filter.shape[1],
    filter.shape[2],
    p.strideHeight,
    p.strideWidth,
    p.padding,
    p.dilationHeight,
    p.dilationWidth,
  );
  return layoutShape(batches, outHeight, outWidth, outDepth, p.nchw);
}

/**
 * Multiply-adds of a convolution call: each output reads filterHeight x filterWidth taps,
 * of every input channel for CONV_2D ([outDepth, h, w, inDepth] filter), of one for
 * DEPTHWISE_CONV_2D (the depth multiplier is in the output depth). Dilation spreads the
 * taps without adding any; padding taps count too (an upper bound).
 */
export function convolutionCost(
  inputs: readonly TensorInfo[],
  outputs: readonly TensorInfo[],
  type: ConvolutionType,
): number {
  const [, filterHeight, filterWidth, filterDepth] = inputs[1].shape;
  const depth = type === "CONV_2D" ? filterDepth : 1;
  return elementCount(outputs[0].shape) * filterHeight * filterWidth * depth;
}

/** The NHWC kernels of one convolution, float and quantized. */
export interface ConvolutionKernels {
  float: typeof depthwiseConv2dFloat;
  quantized: typeof depthwiseConv2dQuantized;
}

/** The NHWC kernel geometry of a call from its (layout-ordered) shapes and parameters. */
export function convolutionGeometry(
  inputShape: readonly number[],
  filterShape: readonly number[],
  outputShape: readonly number[],
  p: ConvolutionParams,
): DepthwiseGeometry {
  const [batches, inHeight, inWidth, inDepth] = nhwcDims(inputShape, p.nchw);
  const [, outHeight, outWidth, outDepth] = nhwcDims(outputShape, p.nchw);
  return {
    batches,
    inHeight,
    inWidth,
    inDepth,
    filterHeight: filterShape[1],
    filterWidth: filterShape[2],
    outHeight,
    outWidth,
    outDepth,
    strideHeight: p.strideHeight,
    strideWidth: p.strideWidth,
    dilationHeight: p.dilationHeight,
    dilationWidth: p.dilationWidth,
    padTop: p.padding.top,
    padLeft: p.padding.left,
    depthMultiplier: p.depthMultiplier,
  };
}

/**
 * Reference execution: resolves the parameters, runs the float or (Android 10 arithmetic)
 * quantized NHWC kernel, and transposes around it for NCHW tensors.
 */
export function executeConvolution(
  inputs: readonly Tensor[],
  outputs: readonly Tensor[],
  options: { type: ConvolutionType; kernels: ConvolutionKernels },
): void {
  const [input, filter, bias] = inputs;
  const output = outputs[0];
  if (elementCount(output.shape) === 0) return;
  const p = convolutionParams(inputs, (i) => scalarOf(inputs[i]), options.type);
  const geometry = convolutionGeometry(input.shape, filter.shape, output.shape, p);
  const inData = nhwcData(input, p.nchw);
  const { kernels } = options;
  if (input.type === "TENSOR_QUANT8_ASYMM") {
    const stage = convolutionOutputStage(
      { input, filter, output },
      geometry.outDepth,
      p.activation,
    );
    writeNhwc(output, p.nchw, (out) => {
      kernels.quantized(geometry, inData, filter.data!, bias.data!, stage, out);
    });
  } else {
    const range = activationRangeFloat(p.activation);
    writeNhwc(output, p.nchw, (out) => {
      kernels.float(geometry, inData, filter.data!, bias.data!, range, out);
    });
  }
}
