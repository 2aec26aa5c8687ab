/**
 * DEPTHWISE_CONV_2D: per-channel 2-D convolution of an NHWC (or, HAL 1.2, NCHW) input with
 * a [1, filterHeight, filterWidth, inDepth * depthMultiplier] filter plus a bias, with a
 * fused activation; output channel `c * depthMultiplier + m` filters input channel `c`.
 *
 * Forms (by input count; Android 10 `validateOperation` and CpuExecutor):
 * - 8: implicit padding (SAME/VALID code), strides, depth multiplier, activation (HAL 1.0);
 * - 11 with input 8 INT32: explicit left/right/top/bottom padding, strides, depth
 *   multiplier, activation (HAL 1.0);
 * - 9 / 11 with input 8 BOOL: implicit + NCHW flag [+ dilation] (HAL 1.2);
 * - 12 / 14: explicit + NCHW flag [+ dilation] (HAL 1.2).
 * Types: float32, float16 (HAL 1.2), quant8 asymm with a quant8 asymm filter, or (HAL 1.2)
 * a per-channel symmetric int8 filter (channelDim 3).
 */
import { biasScaleMatches, quantizedOutputStage } from "../../kernels/conv_common.ts";
import {
  depthwiseConv2dFloat,
  depthwiseConv2dQuantized,
  type DepthwiseGeometry,
} from "../../kernels/conv_depthwise.ts";
import { activationRangeFloat, activationRangeQuantized } from "../../kernels/fixed_point.ts";
import { elementCount, type Tensor, type TensorInfo } from "../tensor.ts";
import type { HalVersion, OperandType } from "../types.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  type OperationDefinition,
  type OperationSignature,
  type PrepareInput,
  scalarOf,
  scalarValue,
} from "./operation.ts";
import {
  checkActivation,
  checkPaddingCode,
  checkWindow,
  effectiveFilterSize,
  explicitPadding2d,
  layoutShape,
  nhwcData,
  nhwcDims,
  outputSize2d,
  type Padding2d,
  writeNhwc,
} from "./padding.ts";

/** Where the optional parameters of one DEPTHWISE_CONV_2D form sit. */
interface DepthwiseForm {
  explicit: boolean;
  /** Index of the NCHW flag, or -1. */
  layout: number;
  /** Index of the width dilation factor (height follows), or -1. */
  dilation: number;
}

/** The form of a DEPTHWISE_CONV_2D call from its input count and the type of input 8. */
function depthwiseForm(count: number, type8: OperandType | undefined): DepthwiseForm | undefined {
  if (count === 8) return { explicit: false, layout: -1, dilation: -1 };
  if (count === 9 && type8 === "BOOL") return { explicit: false, layout: 8, dilation: -1 };
  if (count === 11 && type8 === "BOOL") return { explicit: false, layout: 8, dilation: 9 };
  if (count === 11 && type8 === "INT32") return { explicit: true, layout: -1, dilation: -1 };
  if (count === 12 && type8 === "INT32") return { explicit: true, layout: 11, dilation: -1 };
  if (count === 14 && type8 === "INT32") return { explicit: true, layout: 11, dilation: 12 };
  return undefined;
}

/** The resolved parameters of one DEPTHWISE_CONV_2D call. */
interface DepthwiseParams {
  padding: Padding2d;
  strideWidth: number;
  strideHeight: number;
  dilationWidth: number;
  dilationHeight: number;
  depthMultiplier: number;
  activation: number;
  nchw: boolean;
}

/**
 * Reads the scalar parameters (`scalar(i)` gives input i's value) and resolves implicit
 * padding against the input and filter shapes, with NNAPI's checks.
 */
function depthwiseParams(
  types: readonly OperandType[],
  scalar: (index: number) => number,
  inputShape: readonly number[],
  filterShape: readonly number[],
): DepthwiseParams {
  const form = depthwiseForm(types.length, types[8]);
  check(form !== undefined, `unsupported DEPTHWISE_CONV_2D form with ${types.length} inputs`);
  const nchw = form.layout >= 0 && scalar(form.layout) !== 0;
  const dilationWidth = form.dilation >= 0 ? scalar(form.dilation) : 1;
  const dilationHeight = form.dilation >= 0 ? scalar(form.dilation + 1) : 1;
  check(
    dilationWidth > 0 && dilationHeight > 0,
    `dilation factors (${dilationWidth}, ${dilationHeight}) must be positive`,
  );
  const [, inHeight, inWidth] = nhwcDims(inputShape, nchw);
  let padding: Padding2d;
  let strideWidth: number, strideHeight: number, depthMultiplier: number, activation: number;
  if (form.explicit) {
    padding = { left: scalar(3), right: scalar(4), top: scalar(5), bottom: scalar(6) };
    strideWidth = scalar(7);
    strideHeight = scalar(8);
    depthMultiplier = scalar(9);
    activation = scalar(10);
  } else {
    const scheme = scalar(3);
    checkPaddingCode(scheme, "input 3 (padding scheme)");
    strideWidth = scalar(4);
    strideHeight = scalar(5);
    depthMultiplier = scalar(6);
    activation = scalar(7);
    padding = explicitPadding2d(
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
  }
  check(depthMultiplier > 0, `the depth multiplier ${depthMultiplier} must be positive`);
  checkActivation(activation, "the fused activation");
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

/** Checks DEPTHWISE_CONV_2D operand types and quantization; returns the HAL version needed. */
function validate(signature: OperationSignature): HalVersion {
  checkArity(signature, [8, 9, 11, 12, 14], 1);
  const [input, filter, bias] = signature.inputs;
  const form = depthwiseForm(signature.inputs.length, signature.inputs[8]?.type);
  check(
    form !== undefined,
    `${signature.inputs.length} inputs with input 8 of type ${signature.inputs[8]?.type} ` +
      `match no DEPTHWISE_CONV_2D form`,
  );
  check(
    SUPPORTED_INPUTS.includes(input.type),
    `input 0 (operand ${input.index}) has unsupported type ${input.type}`,
  );
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
  checkRank(input, "input 0", (r) => r === 4, "4");
  checkRank(filter, "input 1 (filter)", (r) => r === 4, "4");
  checkRank(bias, "input 2 (bias)", (r) => r === 1, "1");
  const output = signature.outputs[0];
  let meetsScaleConstraint = true;
  if (perChannel) {
    const cq = filter.channelQuant;
    check(
      cq !== undefined && cq.channelDim === 3,
      `input 1 (operand ${filter.index}) must be quantized per channel along dimension 3`,
    );
    const outDepth = filter.dimensions[3];
    check(
      !outDepth || cq.scales.length === outDepth,
      `input 1 (operand ${filter.index}) has ${cq.scales.length} channel scales for ` +
        `${outDepth} output channels`,
    );
  } else if (quantized) {
    check(
      biasScaleMatches(input.scale, filter.scale, bias.scale),
      `input 2 (operand ${bias.index}) has scale ${bias.scale}, expected input scale x ` +
        `filter scale = ${Math.fround(input.scale * filter.scale)}`,
    );
    meetsScaleConstraint = output.scale > Math.fround(input.scale * filter.scale);
  }
  const needsV12 = input.type === "TENSOR_FLOAT16" || perChannel || form.layout >= 0 ||
    form.dilation >= 0 || !meetsScaleConstraint;
  return needsV12 ? "V1_2" : "V1_0";
}

/** Infers the DEPTHWISE_CONV_2D output shape. */
function prepare(inputs: readonly PrepareInput[], _outputs: readonly TensorInfo[]): number[][] {
  const [input, filter, bias] = inputs;
  check(input.shape.length === 4, `input 0 has rank ${input.shape.length}, expected 4`);
  check(filter.shape.length === 4, `input 1 (filter) has rank ${filter.shape.length}, expected 4`);
  check(bias.shape.length === 1, `input 2 (bias) has rank ${bias.shape.length}, expected 1`);
  const p = depthwiseParams(
    inputs.map((t) => t.type),
    (i) => scalarValue(inputs[i], `input ${i}`),
    input.shape,
    filter.shape,
  );
  const [batches, inHeight, inWidth, inDepth] = nhwcDims(input.shape, p.nchw);
  const [filterBatch, filterHeight, filterWidth, outDepth] = filter.shape;
  check(filterBatch === 1, `input 1 (filter) has first dimension ${filterBatch}, expected 1`);
  check(
    bias.shape[0] === outDepth,
    `input 2 (bias) has ${bias.shape[0]} elements, expected ${outDepth} (filter depth)`,
  );
  check(
    inDepth * p.depthMultiplier === outDepth,
    `input 1 (filter) has depth ${outDepth}, expected ${inDepth} input channels x depth ` +
      `multiplier ${p.depthMultiplier}`,
  );
  check(
    inHeight > 0 && inWidth > 0 && inDepth > 0,
    `only the batch dimension may be 0 (input [${input.shape}])`,
  );
  const cq = filter.channelQuant;
  check(
    filter.type !== "TENSOR_QUANT8_SYMM_PER_CHANNEL" ||
      (cq !== undefined && cq.scales.length === outDepth),
    `input 1 (filter) needs ${outDepth} channel scales`,
  );
  const [outHeight, outWidth] = outputSize2d(
    inHeight,
    inWidth,
    filterHeight,
    filterWidth,
    p.strideHeight,
    p.strideWidth,
    p.padding,
    p.dilationHeight,
    p.dilationWidth,
  );
  return [layoutShape(batches, outHeight, outWidth, outDepth, p.nchw)];
}

/** Reference kernel: NHWC depthwise convolution (float or Android 10 quantized arithmetic). */
function execute(inputs: readonly Tensor[], outputs: readonly Tensor[]): void {
  const [input, filter, bias] = inputs;
  const output = outputs[0];
  if (elementCount(output.shape) === 0) return;
  const p = depthwiseParams(
    inputs.map((t) => t.type),
    (i) => scalarOf(inputs[i]),
    input.shape,
    filter.shape,
  );
  const [batches, inHeight, inWidth, inDepth] = nhwcDims(input.shape, p.nchw);
  const [, outHeight, outWidth, outDepth] = nhwcDims(output.shape, p.nchw);
  const geometry: DepthwiseGeometry = {
    batches,
    inHeight,
    inWidth,
    inDepth,
    filterHeight: filter.shape[1],
    filterWidth: filter.shape[2],
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
  const inData = nhwcData(input, p.nchw);
  if (input.type === "TENSOR_QUANT8_ASYMM") {
    const perChannel = filter.type === "TENSOR_QUANT8_SYMM_PER_CHANNEL";
    const stage = quantizedOutputStage(
      outDepth,
      input.scale,
      input.zeroPoint,
      perChannel ? filter.channelQuant!.scales : [filter.scale],
      perChannel ? 0 : filter.zeroPoint,
      output.scale,
      output.zeroPoint,
      activationRangeQuantized(p.activation, output.scale, output.zeroPoint),
    );
    writeNhwc(output, p.nchw, (out) => {
      depthwiseConv2dQuantized(geometry, inData, filter.data!, bias.data!, stage, out);
    });
  } else {
    const range = activationRangeFloat(p.activation);
    writeNhwc(output, p.nchw, (out) => {
      depthwiseConv2dFloat(geometry, inData, filter.data!, bias.data!, range, out);
    });
  }
}

/** DEPTHWISE_CONV_2D definition. */
export const depthwiseConv2d: OperationDefinition = {
  type: "DEPTHWISE_CONV_2D",
  validate,
  prepare,
  execute,
};
