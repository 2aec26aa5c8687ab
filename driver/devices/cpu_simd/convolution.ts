/**
 * CONV_2D and DEPTHWISE_CONV_2D on `cpu-simd`: float32 with a constant filter and bias,
 * weights packed once at preparation (`kernels/f32_packing.ts`), the generated SIMD (or
 * plain-JS) kernel bound to them when an executor binds the plan, and the raw weights
 * rebuilt from the packed ones when the reference kernel is needed after all.
 */
import {
  packDepthwiseWeights,
  packedDepthwiseLength,
  packedGemmLength,
  packGemmWeights,
  unpackDepthwiseWeights,
  unpackGemmWeights,
} from "../../../kernels/f32_packing.ts";
import { activationRangeFloat } from "../../../kernels/fixed_point.ts";
import {
  createF32Conv2d,
  createF32DepthwiseConv2d,
  type F32Runner,
} from "../../../kernels/manifest.ts";
import {
  elementCount,
  sameShape,
  type TensorData,
  type TensorInfo,
} from "../../../nnapi/tensor.ts";
import {
  type Kernel,
  OperationError,
  type PrepareInput,
  scalarValue,
  ValueNotYetKnown,
} from "../../../operations/operation.ts";
import { nhwcData, writeNhwc } from "../../../operations/common/layout.ts";

import {
  convolutionGeometry,
  type ConvolutionParams,
  convolutionParams,
  type ConvolutionType,
} from "../../../operations/common/convolution.ts";
import { conv2d } from "../../../operations/conv_2d.ts";
import { depthwiseConv2d } from "../../../operations/depthwise_conv_2d.ts";
import type { StepImplementation, StepOperands } from "../device.ts";

/** The parameters of a call whose scalars are all constants, or undefined. */
export function constantParams(
  inputs: readonly PrepareInput[],
  type: ConvolutionType,
): ConvolutionParams | undefined {
  try {
    return convolutionParams(inputs, (i) => scalarValue(inputs[i], `input ${i}`), type);
  } catch (error) {
    // Scalars given at execution, or faults the reference kernel reports when it runs.
    if (error instanceof ValueNotYetKnown || error instanceof OperationError) return undefined;
    throw error;
  }
}

/**
 * Preparation-time packing for the optimized float32 kernels (`kernels/manifest.ts`): a
 * float32 call with a constant filter and bias gets its weights re-laid out once, CONV_2D
 * in the GEMM layout ([outDepth / 8][8 biases, filterHeight x filterWidth x inDepth rows
 * of 8]) and DEPTHWISE_CONV_2D in the depthwise layout (a bias row, then the filter's
 * [filterHeight][filterWidth] rows of channels). Anything else packs nothing.
 */
function packConvolution(
  inputs: readonly PrepareInput[],
  type: ConvolutionType,
): TensorData[] | undefined {
  const [input, filter, bias] = inputs;
  if (input.type !== "TENSOR_FLOAT32") return undefined;
  if (!(filter.value instanceof Float32Array) || !(bias.value instanceof Float32Array)) {
    return undefined;
  }
  if (filter.shape.length !== 4 || constantParams(inputs, type) === undefined) return undefined;
  const [outDepth, filterHeight, filterWidth, depth] = filter.shape;
  if (type === "CONV_2D") {
    const taps = filterHeight * filterWidth * depth;
    return [packGemmWeights(filter.value, bias.value, { channels: outDepth, depth: taps })];
  }
  const taps = filterHeight * filterWidth;
  return [packDepthwiseWeights(filter.value, bias.value, { channels: depth, taps })];
}

/** Filter and bias (inputs 1 and 2) rebuilt from the packed weights of {@link packConvolution}. */
function unpackConvolution(
  inputs: readonly TensorInfo[],
  packed: readonly TensorData[],
  type: ConvolutionType,
): TensorData[] {
  const [outDepth, filterHeight, filterWidth, depth] = inputs[1].shape;
  const { weights, bias } = type === "CONV_2D"
    ? unpackGemmWeights(packed[0], {
      channels: outDepth,
      depth: filterHeight * filterWidth * depth,
    })
    : unpackDepthwiseWeights(packed[0], { channels: depth, taps: filterHeight * filterWidth });
  return [weights, bias];
}

/**
 * Binds the optimized float32 kernel of a call whose weights were packed at preparation
 * (see {@link packConvolution}); undefined keeps the reference kernel. The bound kernel
 * runs only on the shapes it was planned for and hands any other call to `reference`.
 */
function selectConvolutionKernel(
  inputs: readonly PrepareInput[],
  outputs: readonly TensorInfo[],
  packed: readonly TensorData[],
  options: { type: ConvolutionType; reference: Kernel },
): Kernel | undefined {
  const { type, reference } = options;
  const [input, filter] = inputs;
  const output = outputs[0];
  const weights = packed[0];
  if (input.type !== "TENSOR_FLOAT32" || packed.length !== 1) return undefined;
  if (!(weights instanceof Float32Array) || filter.shape.length !== 4) return undefined;
  const p = constantParams(inputs, type);
  if (!p || elementCount(output.shape) === 0) return undefined;
  const g = convolutionGeometry(input.shape, filter.shape, output.shape, p);
  const taps = g.filterHeight * g.filterWidth;
  const expected = type === "CONV_2D"
    ? packedGemmLength(g.outDepth, taps * g.inDepth)
    : packedDepthwiseLength(g.outDepth, taps);
  if (weights.length !== expected) return undefined;
  const choice = { activation: activationRangeFloat(p.activation) };
  const run: F32Runner = type === "CONV_2D"
    ? createF32Conv2d(g, weights, choice)
    : createF32DepthwiseConv2d(g, weights, choice);
  const shapes = { input: input.shape, output: output.shape, nchw: p.nchw };
  return plannedNhwcKernel(
    (data, out) => {
      if (!(data instanceof Float32Array) || !(out instanceof Float32Array)) {
        throw new OperationError("float32 convolution operands must hold float32 data");
      }
      run(data, out);
      return true;
    },
    shapes,
    reference,
  );
}

/**
 * A bound kernel: `run` on the planned shapes, on NHWC data (NCHW tensors transposed around
 * it); the reference kernel on any other call, or when `run` could not (returns false).
 */
export function plannedNhwcKernel(
  run: (data: TensorData, out: TensorData) => boolean,
  shapes: { input: readonly number[]; output: readonly number[]; nchw: boolean },
  reference: Kernel,
): Kernel {
  return (inputs, outputs) => {
    const x = inputs[0], y = outputs[0];
    if (!sameShape(x.shape, shapes.input) || !sameShape(y.shape, shapes.output)) {
      return reference(inputs, outputs);
    }
    const data = nhwcData(x, shapes.nchw);
    let ran = false;
    writeNhwc(y, shapes.nchw, (out) => {
      ran = run(data, out);
    });
    if (!ran) reference(inputs, outputs);
  };
}

/**
 * Float32 with a constant filter, bias and parameters (input extents may be known only at
 * execution: the kernel is bound per shape).
 */
function supportsConvolution({ inputs }: StepOperands, type: ConvolutionType): boolean {
  const [input, filter, bias] = inputs;
  return input.type === "TENSOR_FLOAT32" && filter.shape.length === 4 &&
    filter.value instanceof Float32Array && bias.value instanceof Float32Array &&
    constantParams(inputs, type) !== undefined;
}

/** CONV_2D on the SIMD CPU: 1x1 stride-1 as a GEMM, others as a direct convolution. */
export const conv2dSimd: StepImplementation<"CONV_2D"> = {
  type: "CONV_2D",
  supports: (step) => supportsConvolution(step, "CONV_2D"),
  pack: ({ inputs }) => packConvolution(inputs, "CONV_2D"),
  packReplaces: [1, 2],
  unpack: (inputs, packed) => unpackConvolution(inputs, packed, "CONV_2D"),
  bind: ({ inputs, outputs }, packed) =>
    selectConvolutionKernel(inputs, outputs, packed, {
      type: "CONV_2D",
      reference: conv2d.execute,
    }),
};

/** DEPTHWISE_CONV_2D on the SIMD CPU: the manifest's depthwise kernel. */
export const depthwiseConv2dSimd: StepImplementation<"DEPTHWISE_CONV_2D"> = {
  type: "DEPTHWISE_CONV_2D",
  supports: (step) => supportsConvolution(step, "DEPTHWISE_CONV_2D"),
  pack: ({ inputs }) => packConvolution(inputs, "DEPTHWISE_CONV_2D"),
  packReplaces: [1, 2],
  unpack: (inputs, packed) => unpackConvolution(inputs, packed, "DEPTHWISE_CONV_2D"),
  bind: ({ inputs, outputs }, packed) =>
    selectConvolutionKernel(inputs, outputs, packed, {
      type: "DEPTHWISE_CONV_2D",
      reference: depthwiseConv2d.execute,
    }),
};
