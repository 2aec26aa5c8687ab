/**
 * The quant8 forms of CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED on `cpu-simd`
 * (`kernels/q8_conv_simd128.ts`): uint8 or (HAL 1.3) int8 asymmetric inputs, a constant
 * asymmetric or per-channel symmetric filter and int32 bias, constant parameters, static
 * shapes. Weights are packed once at preparation with the filter zero point subtracted; the
 * output is bit for bit the reference kernel's, which runs any call the kernel was not
 * planned for.
 */
import {
  packQ8DepthwiseWeights,
  packQ8GemmWeights,
  q8GemmLength,
  type Q8GemmShape,
  type Quant8Values,
  unpackQ8DepthwiseWeights,
  unpackQ8GemmWeights,
} from "../../../kernels/q8_packing.ts";
import {
  q8Conv2dSimd,
  q8DepthwiseConv2dSimd,
  q8FullyConnectedSimd,
  type Q8OutputStage,
  type Q8Runner,
} from "../../../kernels/q8_conv_simd128.ts";
import { packedDepthwiseLength } from "../../../kernels/f32_packing.ts";
import { elementCount, type TensorData, type TensorInfo } from "../../../nnapi/tensor.ts";
import {
  convolutionGeometry,
  type ConvolutionType,
} from "../../../operations/common/convolution.ts";
import { convolutionOutputStage } from "../../../operations/common/quantization.ts";
import { isQuant8Asymm } from "../../../operations/common/signed.ts";
import { checkFusedActivation } from "../../../operations/common/scalars.ts";
import { conv2d } from "../../../operations/conv_2d.ts";
import { depthwiseConv2d } from "../../../operations/depthwise_conv_2d.ts";
import { fullyConnected, geometryOf } from "../../../operations/fully_connected.ts";
import { type Kernel, OperationError } from "../../../operations/operation.ts";
import type { StepImplementation, StepOperands } from "../device.ts";
import { constantParams, plannedNhwcKernel } from "./convolution.ts";

const SIGNED = "TENSOR_QUANT8_ASYMM_SIGNED";

function isQuant8Values(value: unknown): value is Quant8Values {
  return value instanceof Uint8Array || value instanceof Int8Array;
}

/** The filter's offset as packed: minus its zero point (0 for per-channel filters). */
function filterOffsetOf(filter: TensorInfo): number {
  return filter.type === "TENSOR_QUANT8_SYMM_PER_CHANNEL" ? 0 : -filter.zeroPoint;
}

/**
 * The output stage on the operands' own values: the reference runs int8 operands as uint8
 * ones shifted by 128 (`common/signed.ts`), so the stage is built for those and its offsets
 * and clamp moved back; the integers it computes are the same.
 */
function outputStage(
  operands: { input: TensorInfo; filter: TensorInfo; output: TensorInfo },
  channels: number,
  activation: number,
): Q8OutputStage {
  const shifted = (t: TensorInfo) =>
    t.type === SIGNED
      ? { ...t, type: "TENSOR_QUANT8_ASYMM" as const, zeroPoint: t.zeroPoint + 128 }
      : t;
  const stage = convolutionOutputStage(
    {
      input: { ...shifted(operands.input), data: null },
      filter: { ...shifted(operands.filter), data: null },
      output: { ...shifted(operands.output), data: null },
    },
    channels,
    activation,
  );
  const back = operands.output.type === SIGNED ? 128 : 0;
  return {
    inputOffset: -operands.input.zeroPoint,
    outputOffset: stage.outputOffset - back,
    multipliers: stage.multipliers,
    shifts: stage.shifts,
    activation: { min: stage.activation.min - back, max: stage.activation.max - back },
  };
}

/** A new array of the filter's raw type for unpacking. */
function filterArray(filter: TensorInfo, length: number): Quant8Values {
  return filter.type === "TENSOR_QUANT8_ASYMM" ? new Uint8Array(length) : new Int8Array(length);
}

/** `run` as a planned kernel (`plannedNhwcKernel`), on 8-bit data only. */
function boundKernel(
  run: Q8Runner,
  shapes: { input: readonly number[]; output: readonly number[]; nchw: boolean },
  reference: Kernel,
): Kernel {
  return plannedNhwcKernel(
    (data, out) => {
      if (!isQuant8Values(data) || !isQuant8Values(out)) {
        throw new OperationError("quant8 operands must hold 8-bit data");
      }
      return run(data, out);
    },
    shapes,
    reference,
  );
}

/** Shapes of a convolution's filter in the packed layouts. */
function convolutionShape(filter: TensorInfo, type: ConvolutionType) {
  const [outDepth, filterHeight, filterWidth, depth] = filter.shape;
  const taps = filterHeight * filterWidth;
  return type === "CONV_2D"
    ? { gemm: { channels: outDepth, taps, depth } as Q8GemmShape }
    : { depthwise: { channels: depth, taps } };
}

/**
 * Quant8 input, a constant quant8 filter and int32 bias, constant parameters (input extents
 * may be known only at execution: the kernel is bound per shape).
 */
function supportsConvolution({ inputs }: StepOperands, type: ConvolutionType): boolean {
  const [input, filter, bias] = inputs;
  return isQuant8Asymm(input.type) && filter.shape.length === 4 && isQuant8Values(filter.value) &&
    bias.value instanceof Int32Array && constantParams(inputs, type) !== undefined;
}

function packConvolution(
  { inputs }: StepOperands,
  type: ConvolutionType,
): TensorData[] | undefined {
  const [, filter, bias] = inputs;
  if (!isQuant8Values(filter.value) || !(bias.value instanceof Int32Array)) return undefined;
  const shape = convolutionShape(filter, type);
  const offset = filterOffsetOf(filter);
  return [
    shape.gemm
      ? packQ8GemmWeights(filter.value, offset, bias.value, shape.gemm)
      : packQ8DepthwiseWeights(filter.value, offset, bias.value, shape.depthwise!),
  ];
}

function unpackConvolution(
  inputs: readonly TensorInfo[],
  packed: readonly TensorData[],
  type: ConvolutionType,
): TensorData[] {
  const filter = inputs[1];
  const shape = convolutionShape(filter, type);
  const into = filterArray(filter, elementCount(filter.shape));
  const offset = filterOffsetOf(filter);
  const words = packed[0] as Int32Array;
  const raw = shape.gemm
    ? unpackQ8GemmWeights(words, offset, shape.gemm, into)
    : unpackQ8DepthwiseWeights(words, offset, shape.depthwise!, into);
  return [raw.filter, raw.bias];
}

function bindConvolution(
  { inputs, outputs }: StepOperands,
  packed: readonly TensorData[],
  options: { type: ConvolutionType; reference: Kernel },
): Kernel | undefined {
  const { type, reference } = options;
  const [input, filter] = inputs;
  const output = outputs[0];
  const words = packed[0];
  const p = constantParams(inputs, type);
  if (!p || !(words instanceof Int32Array) || elementCount(output.shape) === 0) return undefined;
  const g = convolutionGeometry(input.shape, filter.shape, output.shape, p);
  const shape = convolutionShape(filter, type);
  const length = shape.gemm
    ? q8GemmLength(shape.gemm)
    : packedDepthwiseLength(shape.depthwise!.channels, shape.depthwise!.taps);
  if (words.length !== length) return undefined;
  const stage = outputStage({ input, filter, output }, g.outDepth, p.activation);
  const run = type === "CONV_2D"
    ? q8Conv2dSimd(g, words, stage)
    : q8DepthwiseConv2dSimd(g, words, stage);
  if (!run) return undefined;
  return boundKernel(run, { input: input.shape, output: output.shape, nchw: p.nchw }, reference);
}

/** A quant8 convolution step of `type` whose reference kernel is `reference`. */
function quant8Convolution<T extends ConvolutionType>(
  type: T,
  reference: Kernel,
): StepImplementation<T> {
  return {
    type,
    supports: (step) => supportsConvolution(step, type),
    pack: (step) => packConvolution(step, type),
    packReplaces: [1, 2],
    unpack: (inputs, packed) => unpackConvolution(inputs, packed, type),
    bind: (step, packed) => bindConvolution(step, packed, { type, reference }),
  };
}

/** Quant8 CONV_2D on the SIMD CPU. */
export const conv2dQuant8 = quant8Convolution("CONV_2D", conv2d.execute);

/** Quant8 DEPTHWISE_CONV_2D on the SIMD CPU. */
export const depthwiseConv2dQuant8 = quant8Convolution(
  "DEPTHWISE_CONV_2D",
  depthwiseConv2d.execute,
);

/** FULLY_CONNECTED's weights as a one-tap GEMM-layout filter. */
function fullyConnectedShape(weights: TensorInfo): Q8GemmShape {
  const [units, inputSize] = weights.shape;
  return { channels: units, taps: 1, depth: inputSize };
}

/** Quant8 FULLY_CONNECTED on the SIMD CPU (constant weights only). */
export const fullyConnectedQuant8: StepImplementation<"FULLY_CONNECTED"> = {
  type: "FULLY_CONNECTED",
  supports({ inputs }) {
    const [input, weights, bias, activation] = inputs;
    return isQuant8Asymm(input.type) && weights.shape.length === 2 &&
      isQuant8Values(weights.value) && bias.value instanceof Int32Array &&
      activation.value != null;
  },
  pack({ inputs }) {
    const [, weights, bias] = inputs;
    if (!isQuant8Values(weights.value) || !(bias.value instanceof Int32Array)) return undefined;
    const offset = filterOffsetOf(weights);
    return [packQ8GemmWeights(weights.value, offset, bias.value, fullyConnectedShape(weights))];
  },
  packReplaces: [1, 2],
  unpack(inputs, packed) {
    const weights = inputs[1];
    const into = filterArray(weights, elementCount(weights.shape));
    const shape = fullyConnectedShape(weights);
    const raw = unpackQ8GemmWeights(packed[0] as Int32Array, filterOffsetOf(weights), shape, into);
    return [raw.filter, raw.bias];
  },
  bind({ inputs, outputs }, packed) {
    const [input, weights, bias, activation] = inputs;
    const words = packed[0];
    if (!(words instanceof Int32Array) || activation.value == null) return undefined;
    const code = Number(activation.value[0]);
    let rows: number;
    try {
      rows = geometryOf(input.shape, weights.shape, bias.shape).batches;
      checkFusedActivation(code, "input 3 (activation)");
    } catch (error) {
      if (error instanceof OperationError) return undefined; // the reference kernel reports it
      throw error;
    }
    const shape = fullyConnectedShape(weights);
    if (rows === 0 || words.length !== q8GemmLength(shape)) return undefined;
    const stage = outputStage({ input, filter: weights, output: outputs[0] }, shape.channels, code);
    const run = q8FullyConnectedSimd(
      { rows, depth: shape.depth, channels: shape.channels },
      words,
      stage,
    );
    if (!run) return undefined;
    const shapes = { input: input.shape, output: outputs[0].shape, nchw: false };
    return boundKernel(run, shapes, fullyConnected.execute);
  },
};

/**
 * One step implementation of `float` and `quant8` for the same operation type, chosen by the
 * type of input 0 (both replace the same packed inputs).
 */
export function byInputType<T extends "CONV_2D" | "DEPTHWISE_CONV_2D" | "FULLY_CONNECTED">(
  float: StepImplementation<T>,
  quant8: StepImplementation<T>,
): StepImplementation<T> {
  const pick = (inputs: readonly TensorInfo[]) => isQuant8Asymm(inputs[0].type) ? quant8 : float;
  return {
    type: float.type,
    supports: (step) => pick(step.inputs).supports(step),
    pack: (step) => pick(step.inputs).pack?.(step),
    packReplaces: float.packReplaces,
    unpack: (inputs, packed) => pick(inputs).unpack!(inputs, packed),
    bind: (step, packed) => pick(step.inputs).bind(step, packed),
  };
}
