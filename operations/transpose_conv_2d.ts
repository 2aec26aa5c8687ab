/**
 * TRANSPOSE_CONV_2D (HAL 1.2): the transpose (gradient) of CONV_2D: input [b, h, w, inDepth]
 * (or NCHW), filter [outDepth, filterHeight, filterWidth, inDepth], bias [outDepth], with a
 * fused activation (Android 10 `TransposeConv2D.cpp`). Output extent per axis:
 * stride * (in - 1) + filter - padHead - padTail.
 *
 * Forms (by input count; the NCHW flag is always present):
 * - 11: explicit left/right/top/bottom padding, strides, activation, layout;
 * - 9: the output shape as a 1-D TENSOR_INT32 of 4 (in the output's layout), implicit padding
 *   (SAME/VALID code) resolved against it, strides, activation, layout.
 * The right and bottom padding may be negative (NNAPI lets them pick among the output sizes
 * a stride > 1 makes possible). Types: float32, float16, quant8 asymm with a quant8 asymm
 * filter or a per-channel symmetric int8 filter (channelDim 0).
 */
import {
  transposeConv2dFloat,
  transposeConv2dQuantized,
  type TransposeConvGeometry,
} from "../kernels/conv_transpose.ts";
import { activationRangeFloat } from "../kernels/fixed_point.ts";
import { elementCount, type TensorData, type TensorInfo } from "../nnapi/tensor.ts";
import { type OperandType, PADDING_SAME } from "../nnapi/types.ts";
import {
  checkConvolutionOperandRanks,
  checkConvolutionRanks,
  checkFilterQuantization,
} from "./common/convolution.ts";
import { layoutShape, nhwcData, nhwcDims, writeNhwc } from "./common/layout.ts";
import { checkInputType } from "./common/operand_types.ts";
import { checkPaddingCode, type Padding2d } from "./common/padding.ts";
import { convolutionOutputStage } from "./common/quantization.ts";
import { checkFusedActivation } from "./common/scalars.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  type Kernel,
  type OperationDefinition,
  type PrepareInput,
  scalarOf,
  scalarValue,
  tensorValue,
} from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

const IMPLICIT_INPUTS = 9;
const EXPLICIT_INPUTS = 11;
const OUTPUT_SHAPE = 3;

/** The resolved parameters of one call. */
export interface TransposeConvParams {
  padding: Padding2d;
  strideWidth: number;
  strideHeight: number;
  activation: number;
  nchw: boolean;
}

/**
 * NNAPI `calculateExplicitPaddingTransposeConv`: the head/tail padding an implicit scheme
 * means for one axis of output extent `outSize`. SAME pads as CONV_2D would for an input of
 * that size, except that the tail always fits the last stride exactly (so it may be
 * negative); VALID pads nothing.
 */
function transposePadding(
  outSize: number,
  stride: number,
  filterSize: number,
  scheme: number,
): { head: number; tail: number } {
  if (scheme !== PADDING_SAME) return { head: 0, tail: 0 };
  const inSize = Math.trunc((outSize + stride - 1) / stride);
  const covered = (inSize - 1) * stride + filterSize;
  const head = covered > outSize ? Math.trunc((covered - outSize) / 2) : 0;
  return { head, tail: covered - outSize - head };
}

/**
 * Reads the scalar parameters (`scalar(i)` gives input i's value, `outputShape()` the
 * implicit form's output shape tensor) and resolves implicit padding, with NNAPI's checks.
 */
function transposeConvParams(
  inputs: readonly TensorInfo[],
  scalar: (index: number) => number,
  outputShape: () => TensorData,
): TransposeConvParams {
  const count = inputs.length;
  check(
    count === IMPLICIT_INPUTS || count === EXPLICIT_INPUTS,
    `unsupported TRANSPOSE_CONV_2D form with ${count} inputs`,
  );
  let padding: Padding2d;
  let strideWidth: number, strideHeight: number, activationAt: number, nchw: boolean;
  if (count === EXPLICIT_INPUTS) {
    padding = { left: scalar(3), right: scalar(4), top: scalar(5), bottom: scalar(6) };
    strideWidth = scalar(7);
    strideHeight = scalar(8);
    activationAt = 9;
    nchw = scalar(10) !== 0;
  } else {
    const shapeInput = inputs[OUTPUT_SHAPE];
    check(
      shapeInput.shape.length === 1 && shapeInput.shape[0] === 4,
      `input ${OUTPUT_SHAPE} (output shape) has shape [${shapeInput.shape}], expected [4]`,
    );
    const scheme = scalar(4);
    checkPaddingCode(scheme, "input 4 (padding scheme)");
    strideWidth = scalar(5);
    strideHeight = scalar(6);
    activationAt = 7;
    nchw = scalar(8) !== 0;
    const shape = outputShape();
    const [, outHeight, outWidth] = nhwcDims(Array.from(shape, Number), nchw);
    const filterShape = inputs[1].shape;
    const w = transposePadding(outWidth, strideWidth, filterShape[2], scheme);
    const h = transposePadding(outHeight, strideHeight, filterShape[1], scheme);
    padding = { left: w.head, right: w.tail, top: h.head, bottom: h.tail };
  }
  const activation = scalar(activationAt);
  check(
    padding.left >= 0 && padding.top >= 0,
    `left and top padding (${padding.left}, ${padding.top}) must be non-negative`,
  );
  check(
    strideWidth > 0 && strideHeight > 0,
    `strides (${strideWidth}, ${strideHeight}) must be positive`,
  );
  checkFusedActivation(activation, `input ${activationAt}`);
  return { padding, strideWidth, strideHeight, activation, nchw };
}

/** Output extent of one axis (`computeOutSizeTransposeConv`). */
function outputExtent(
  inSize: number,
  filterSize: number,
  stride: number,
  head: number,
  tail: number,
) {
  return stride * (inSize - 1) + filterSize - head - tail;
}

/** The NHWC kernel geometry of a call from its (layout-ordered) shapes and parameters. */
function geometry(
  inputShape: readonly number[],
  filterShape: readonly number[],
  outputShape: readonly number[],
  p: TransposeConvParams,
): TransposeConvGeometry {
  const [batches, inHeight, inWidth, inDepth] = nhwcDims(inputShape, p.nchw);
  const [, outHeight, outWidth, outDepth] = nhwcDims(outputShape, p.nchw);
  return {
    batches,
    inHeight,
    inWidth,
    inDepth,
    outHeight,
    outWidth,
    outDepth,
    filterHeight: filterShape[1],
    filterWidth: filterShape[2],
    strideHeight: p.strideHeight,
    strideWidth: p.strideWidth,
    padTop: p.padding.top,
    padLeft: p.padding.left,
  };
}

/**
 * The NHWC geometry, fused activation and layout of a call whose scalars (and output shape
 * operand) are constants, for device kernels bound at preparation; throws as `prepare` does.
 */
export function plannedTransposeConv(
  inputs: readonly PrepareInput[],
  outputShape: readonly number[],
): { geometry: TransposeConvGeometry; activation: number; nchw: boolean } {
  const p = transposeConvParams(
    inputs,
    (i) => scalarValue(inputs[i], `input ${i}`),
    () => tensorValue(inputs[OUTPUT_SHAPE], `input ${OUTPUT_SHAPE} (output shape)`),
  );
  return {
    geometry: geometry(inputs[0].shape, inputs[1].shape, outputShape, p),
    activation: p.activation,
    nchw: p.nchw,
  };
}

/** The parameters of a call whose scalars (and output shape operand) are constants. */
export function transposeConvolutionParams(inputs: readonly PrepareInput[]): TransposeConvParams {
  return transposeConvParams(
    inputs,
    (i) => scalarValue(inputs[i], `input ${i}`),
    () => tensorValue(inputs[OUTPUT_SHAPE], `input ${OUTPUT_SHAPE} (output shape)`),
  );
}

/** Reference kernel: NHWC scatter (float or Android 10 quantized arithmetic). */
const reference: Kernel = (inputs, outputs) => {
  const [input, filter, bias] = inputs;
  const output = outputs[0];
  if (elementCount(output.shape) === 0) return;
  const p = transposeConvParams(
    inputs,
    (i) => scalarOf(inputs[i]),
    () => inputs[OUTPUT_SHAPE].data!,
  );
  const g = geometry(input.shape, filter.shape, output.shape, p);
  const inData = nhwcData(input, p.nchw);
  if (input.type === "TENSOR_QUANT8_ASYMM") {
    const stage = convolutionOutputStage({ input, filter, output }, g.outDepth, p.activation);
    writeNhwc(output, p.nchw, (out) => {
      transposeConv2dQuantized(g, inData, filter.data!, bias.data!, stage, out);
    });
  } else {
    const range = activationRangeFloat(p.activation);
    writeNhwc(output, p.nchw, (out) => {
      transposeConv2dFloat(g, inData, filter.data!, bias.data!, range, out);
    });
  }
};

/** TRANSPOSE_CONV_2D definition. */
export const transposeConv2d: OperationDefinition<"TRANSPOSE_CONV_2D"> = withSignedQuant8({
  type: "TRANSPOSE_CONV_2D",

  validate(signature) {
    checkArity(signature, [IMPLICIT_INPUTS, EXPLICIT_INPUTS], 1);
    const [input, filter] = signature.inputs;
    checkInputType(input, 0, ["TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_QUANT8_ASYMM"]);
    const quantized = input.type === "TENSOR_QUANT8_ASYMM";
    const perChannel = quantized && filter.type === "TENSOR_QUANT8_SYMM_PER_CHANNEL";
    const explicit = signature.inputs.length === EXPLICIT_INPUTS;
    const expected: OperandType[] = [
      input.type,
      perChannel ? filter.type : input.type,
      quantized ? "TENSOR_INT32" : input.type,
      ...(explicit
        ? new Array<OperandType>(7).fill("INT32")
        : ["TENSOR_INT32", "INT32", "INT32", "INT32", "INT32"] as OperandType[]),
      "BOOL",
    ];
    checkTypes(signature, expected, [input.type]);
    checkConvolutionOperandRanks(signature);
    if (!explicit) {
      checkRank(signature.inputs[OUTPUT_SHAPE], "input 3 (output shape)", (r) => r === 1, "1");
    }
    checkRank(signature.outputs[0], "output 0", (r) => r === 4, "4");
    checkFilterQuantization(signature, { quantized, perChannel, channelDim: 0 });
    return "V1_2";
  },

  prepare(inputs) {
    const [input, filter, bias] = inputs;
    checkConvolutionRanks(inputs);
    const p = transposeConvParams(
      inputs,
      (i) => scalarValue(inputs[i], `input ${i}`),
      () => tensorValue(inputs[OUTPUT_SHAPE], `input ${OUTPUT_SHAPE} (output shape)`),
    );
    const [batches, inHeight, inWidth, inDepth] = nhwcDims(input.shape, p.nchw);
    const [outDepth, filterHeight, filterWidth, filterDepth] = filter.shape;
    check(
      filterDepth === inDepth,
      `input 1 (filter) has depth ${filterDepth}, but the input has ${inDepth} channels`,
    );
    check(
      bias.shape[0] === outDepth,
      `input 2 (bias) has ${bias.shape[0]} elements, expected ${outDepth} (filter outputs)`,
    );
    check(
      inHeight > 0 && inWidth > 0 && inDepth > 0 && outDepth > 0 && filterHeight > 0 &&
        filterWidth > 0,
      `only the batch dimension may be 0 (input [${input.shape}], filter [${filter.shape}])`,
    );
    const cq = filter.channelQuant;
    check(
      filter.type !== "TENSOR_QUANT8_SYMM_PER_CHANNEL" ||
        (cq !== undefined && cq.scales.length === outDepth),
      `input 1 (filter) needs ${outDepth} channel scales`,
    );
    const { padding } = p;
    const outHeight = outputExtent(
      inHeight,
      filterHeight,
      p.strideHeight,
      padding.top,
      padding.bottom,
    );
    const outWidth = outputExtent(inWidth, filterWidth, p.strideWidth, padding.left, padding.right);
    check(
      outHeight > 0 && outWidth > 0,
      `the output would be ${outHeight}x${outWidth}; padding (${padding.left}, ${padding.right}, ` +
        `${padding.top}, ${padding.bottom}) leaves nothing`,
    );
    return [layoutShape(batches, outHeight, outWidth, outDepth, p.nchw)];
  },

  /** Each input element meets filterHeight x filterWidth taps of every output channel. */
  cost(inputs) {
    const [outDepth, filterHeight, filterWidth] = inputs[1].shape;
    return elementCount(inputs[0].shape) * outDepth * filterHeight * filterWidth;
  },

  execute: reference,
});
