/**
 * CONV_2D on NHWC float32 tensors, with the parameters decoded by the operations' own
 * helpers (`convolutionParams`: implicit or explicit padding, strides, dilation, fused
 * activation), run as the implicit GEMM of `gemm.ts`. The filter (a constant) is re-laid
 * out at preparation as [filterHeight][filterWidth][inDepth][outDepth / 4] vec4s,
 * zero-padded to whole channel groups, with the bias padded likewise; float16 where the
 * model is relaxed and the adapter has shader-f16.
 */
import type { TensorInfo } from "../../../../nnapi/tensor.ts";
import {
  convolutionGeometry,
  type ConvolutionParams,
  convolutionParams,
} from "../../../../operations/common/convolution.ts";
import { check, type PrepareInput } from "../../../../operations/operation.ts";
import type { DepthwiseGeometry } from "../../../../kernels/conv_depthwise.ts";
import { constantFloats, constantScalar, type GpuCommand, type KernelOptions } from "./common.ts";
import { gemmDispatch } from "./gemm.ts";

/**
 * The CONV_2D filter [outDepth, h, w, inDepth] as [h][w][inDepth][groups] vec4s of 4
 * output channels, and the bias as groups vec4s, both zero-padded; the filter as float16
 * when `f16Weights` (rounded to nearest, as the relaxed model allows).
 */
export function packConvFilter(
  filter: Float32Array,
  bias: Float32Array,
  shape: readonly number[],
  f16Weights = false,
): { filter: Float32Array | Float16Array; bias: Float32Array } {
  const [outDepth, height, width, inDepth] = shape;
  const groups = Math.ceil(outDepth / 4);
  const taps = height * width * inDepth;
  const packed = new Float32Array(taps * groups * 4);
  for (let oc = 0; oc < outDepth; oc++) {
    const g = oc >> 2, lane = oc & 3;
    for (let tap = 0; tap < taps; tap++) {
      packed[(tap * groups + g) * 4 + lane] = filter[oc * taps + tap];
    }
  }
  const paddedBias = new Float32Array(groups * 4);
  paddedBias.set(bias);
  return { filter: f16Weights ? new Float16Array(packed) : packed, bias: paddedBias };
}

/** The decoded parameters and geometry of a call, with NNAPI's checks; NCHW is not taken. */
export function convolutionOf(
  inputs: readonly PrepareInput[],
  outputs: readonly TensorInfo[],
  type: "CONV_2D" | "DEPTHWISE_CONV_2D",
): { p: ConvolutionParams; g: DepthwiseGeometry } {
  const p = convolutionParams(inputs, (i) => constantScalar(inputs[i]), type);
  check(!p.nchw, "the gpu device takes NHWC tensors only");
  return { p, g: convolutionGeometry(inputs[0].shape, inputs[1].shape, outputs[0].shape, p) };
}

/** The fused activation code of a CONV_2D or DEPTHWISE_CONV_2D call. */
export function convolutionActivation(
  type: "CONV_2D" | "DEPTHWISE_CONV_2D",
): (inputs: readonly PrepareInput[]) => number {
  return (inputs) => convolutionParams(inputs, (i) => constantScalar(inputs[i]), type).activation;
}

/** CONV_2D (constant filter and bias, NHWC). */
export function conv2dKernel(
  inputs: readonly PrepareInput[],
  outputs: readonly TensorInfo[],
  options: KernelOptions,
): GpuCommand[] {
  const { p, g } = convolutionOf(inputs, outputs, "CONV_2D");
  const packed = packConvFilter(
    constantFloats(inputs[1]),
    constantFloats(inputs[2]),
    inputs[1].shape,
    options.f16Weights,
  );
  return [gemmDispatch(g, packed, p.activation, options)];
}
