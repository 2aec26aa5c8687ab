/**
 * Weight packing for the optimized float32 convolution kernels, done once at preparation.
 * Output channels are grouped in blocks of {@link F32_BLOCK} (two f32x4 vectors), zero
 * padded, and each block starts with its biases, so a kernel streams one contiguous run of
 * memory per block (XNNPACK's GOI packing with the bias in front):
 * - GEMM layout (CONV_2D, FULLY_CONNECTED): per block, 8 biases then `depth` rows of 8
 *   weights, where `depth` runs over the filter's [filterHeight][filterWidth][inDepth]
 *   (a CONV_2D filter is an [outDepth][depth] matrix, as FULLY_CONNECTED weights are);
 * - depthwise layout (DEPTHWISE_CONV_2D): the filter's natural [filterHeight][filterWidth]
 *   [channels] order with a bias row in front and each row zero padded to whole blocks, so
 *   a tap's weights for 8 channels are one vector pair and a pixel's are one contiguous row.
 */
import type { ReadonlyNumbers } from "./typed_arrays.ts";

/** Output channels per packed block. */
export const F32_BLOCK = 8;

/** Number of packed blocks for `channels` output channels. */
export function blockCount(channels: number): number {
  return Math.ceil(channels / F32_BLOCK);
}

/** Packed length of GEMM-layout weights for `channels` outputs of `depth` inputs each. */
export function packedGemmLength(channels: number, depth: number): number {
  return blockCount(channels) * F32_BLOCK * (depth + 1);
}

/** A packed layout's words: float32, or int32 for the quant8 kernels (`q8_packing.ts`). */
export type PackedWords = Float32Array | Int32Array;

/**
 * Packs a row-major [channels][depth] weight matrix and its biases into the GEMM layout, into
 * `packed` when given (weights computed at execution, repacked before each run; the padding
 * lanes of the last block keep the zeros they started with).
 */
export function packGemmWeights<Words extends PackedWords = Float32Array>(
  weights: ReadonlyNumbers,
  bias: ReadonlyNumbers,
  shape: { channels: number; depth: number },
  packed: Words = new Float32Array(packedGemmLength(shape.channels, shape.depth)) as Words,
): Words {
  const { channels, depth } = shape;
  const blockLength = F32_BLOCK * (depth + 1);
  for (let block = 0; block < blockCount(channels); block++) {
    const base = block * blockLength;
    const lanes = Math.min(F32_BLOCK, channels - block * F32_BLOCK);
    for (let j = 0; j < lanes; j++) {
      const channel = block * F32_BLOCK + j;
      packed[base + j] = bias[channel];
      const row = channel * depth;
      for (let k = 0, to = base + F32_BLOCK + j; k < depth; k++, to += F32_BLOCK) {
        packed[to] = weights[row + k];
      }
    }
  }
  return packed;
}

/** Packed length of depthwise-layout weights: `taps + 1` rows of whole blocks. */
export function packedDepthwiseLength(channels: number, taps: number): number {
  return (taps + 1) * blockCount(channels) * F32_BLOCK;
}

/**
 * Packs a [taps][channels] depthwise filter (the DEPTHWISE_CONV_2D [1, filterHeight,
 * filterWidth, channels] filter) and its biases into the depthwise layout.
 */
export function packDepthwiseWeights<Words extends PackedWords = Float32Array>(
  filter: ReadonlyNumbers,
  bias: ReadonlyNumbers,
  shape: { channels: number; taps: number },
  packed: Words = new Float32Array(packedDepthwiseLength(shape.channels, shape.taps)) as Words,
): Words {
  const { channels, taps } = shape;
  const stride = blockCount(channels) * F32_BLOCK;
  for (let c = 0; c < channels; c++) packed[c] = bias[c];
  for (let t = 0; t < taps; t++) {
    for (let c = 0; c < channels; c++) packed[(t + 1) * stride + c] = filter[t * channels + c];
  }
  return packed;
}

/** Raw weights and biases rebuilt from a packed layout, float32 unless asked otherwise. */
export interface Unpacked<Words extends PackedWords> {
  weights: Words;
  bias: Words;
}

/** Inverse of {@link packGemmWeights}: the [channels][depth] weights and the biases. */
export function unpackGemmWeights<Words extends PackedWords = Float32Array>(
  packed: ReadonlyNumbers,
  shape: { channels: number; depth: number },
  into: Unpacked<Words> = {
    weights: new Float32Array(shape.channels * shape.depth),
    bias: new Float32Array(shape.channels),
  } as Unpacked<Words>,
): Unpacked<Words> {
  const { channels, depth } = shape;
  const { weights, bias } = into;
  const blockLength = F32_BLOCK * (depth + 1);
  for (let channel = 0; channel < channels; channel++) {
    const base = Math.floor(channel / F32_BLOCK) * blockLength;
    const j = channel % F32_BLOCK;
    bias[channel] = packed[base + j];
    for (let k = 0, from = base + F32_BLOCK + j; k < depth; k++, from += F32_BLOCK) {
      weights[channel * depth + k] = packed[from];
    }
  }
  return into;
}

/** Inverse of {@link packDepthwiseWeights}: the [taps][channels] filter and the biases. */
export function unpackDepthwiseWeights<Words extends PackedWords = Float32Array>(
  packed: ReadonlyNumbers,
  shape: { channels: number; taps: number },
  into: Unpacked<Words> = {
    weights: new Float32Array(shape.taps * shape.channels),
    bias: new Float32Array(shape.channels),
  } as Unpacked<Words>,
): Unpacked<Words> {
  const { channels, taps } = shape;
  const stride = blockCount(channels) * F32_BLOCK;
  const { weights, bias } = into;
  for (let c = 0; c < channels; c++) bias[c] = packed[c];
  for (let t = 0; t < taps; t++) {
    for (let c = 0; c < channels; c++) weights[t * channels + c] = packed[(t + 1) * stride + c];
  }
  return into;
}
