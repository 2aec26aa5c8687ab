/**
 * Weight packing for the quant8 SIMD kernels, done once at preparation in the float32
 * kernels' layouts (`f32_packing.ts`) with int32 words, the filter zero point already
 * subtracted (so the kernels multiply `x - inputZeroPoint` by `w - filterZeroPoint` and add
 * nothing else):
 * - GEMM layout (CONV_2D, FULLY_CONNECTED): each word holds two int16 weights of one output
 *   channel at consecutive depths (`i32x4.dot_i16x8_s` multiplies them by a pair of inputs
 *   and adds the two products); the depth of each filter tap is padded to even with a zero
 *   weight, as the staged input is with a zero value;
 * - depthwise layout (DEPTHWISE_CONV_2D): one int32 weight per word.
 * Biases are the int32 words in front, as in the float layouts.
 */
import {
  blockCount,
  F32_BLOCK,
  packDepthwiseWeights,
  packedDepthwiseLength,
  packGemmWeights,
  unpackDepthwiseWeights,
  unpackGemmWeights,
} from "./f32_packing.ts";
import type { ReadonlyNumbers } from "./typed_arrays.ts";

/** A quant8 filter's raw values: uint8 (asymmetric) or int8 (signed or per-channel). */
export type Quant8Values = Uint8Array | Int8Array;

/** Shape of a GEMM-layout filter: `taps` runs of `depth` values per output channel. */
export interface Q8GemmShape {
  channels: number;
  taps: number;
  depth: number;
}

/** Int16 pairs per filter tap (the depth rounded up to even, halved). */
export function pairsPerTap(depth: number): number {
  return (depth + 1) >> 1;
}

/** Int32 words of GEMM-layout quant8 weights. */
export function q8GemmLength({ channels, taps, depth }: Q8GemmShape): number {
  return blockCount(channels) * F32_BLOCK * (taps * pairsPerTap(depth) + 1);
}

/**
 * Packs a [channels][taps][depth] quant8 filter (`filterOffset` added to every value) and its
 * int32 biases into the GEMM layout of pair words.
 */
export function packQ8GemmWeights(
  filter: ReadonlyNumbers,
  filterOffset: number,
  bias: ReadonlyNumbers,
  shape: Q8GemmShape,
): Int32Array {
  const { channels, taps, depth } = shape;
  const pairs = pairsPerTap(depth);
  const words = new Int32Array(channels * taps * pairs);
  for (let c = 0, from = 0, to = 0; c < channels; c++) {
    for (let t = 0; t < taps; t++, from += depth) {
      for (let p = 0; p < pairs; p++) {
        const k = from + 2 * p;
        const low = filter[k] + filterOffset;
        const high = 2 * p + 1 < depth ? filter[k + 1] + filterOffset : 0;
        words[to++] = (low & 0xffff) | (high << 16);
      }
    }
  }
  const packed = new Int32Array(q8GemmLength(shape));
  return packGemmWeights(words, bias, { channels, depth: taps * pairs }, packed);
}

/** Inverse of {@link packQ8GemmWeights}: the filter (as `into`'s type) and the biases. */
export function unpackQ8GemmWeights(
  packed: Int32Array,
  filterOffset: number,
  shape: Q8GemmShape,
  filter: Quant8Values,
): { filter: Quant8Values; bias: Int32Array } {
  const { channels, taps, depth } = shape;
  const pairs = pairsPerTap(depth);
  const { weights: words, bias } = unpackGemmWeights(packed, { channels, depth: taps * pairs }, {
    weights: new Int32Array(channels * taps * pairs),
    bias: new Int32Array(channels),
  });
  for (let c = 0, from = 0, to = 0; c < channels; c++) {
    for (let t = 0; t < taps; t++) {
      for (let p = 0; p < pairs; p++) {
        const word = words[from++];
        filter[to++] = ((word << 16) >> 16) - filterOffset;
        if (2 * p + 1 < depth) filter[to++] = (word >> 16) - filterOffset;
      }
    }
  }
  return { filter, bias };
}

/**
 * Packs a [taps][channels] quant8 depthwise filter (`filterOffset` added) and its int32
 * biases into the depthwise layout.
 */
export function packQ8DepthwiseWeights(
  filter: ReadonlyNumbers,
  filterOffset: number,
  bias: ReadonlyNumbers,
  shape: { channels: number; taps: number },
): Int32Array {
  // A loop: TypedArray.from with a mapping runs about 60 ns an element in V8.
  const offsetFilter = new Int32Array(filter.length);
  for (let i = 0; i < filter.length; i++) offsetFilter[i] = filter[i] + filterOffset;
  const packed = new Int32Array(packedDepthwiseLength(shape.channels, shape.taps));
  return packDepthwiseWeights(offsetFilter, bias, shape, packed);
}

/** Inverse of {@link packQ8DepthwiseWeights}. */
export function unpackQ8DepthwiseWeights(
  packed: Int32Array,
  filterOffset: number,
  shape: { channels: number; taps: number },
  filter: Quant8Values,
): { filter: Quant8Values; bias: Int32Array } {
  const { weights, bias } = unpackDepthwiseWeights(packed, shape, {
    weights: new Int32Array(shape.taps * shape.channels),
    bias: new Int32Array(shape.channels),
  });
  for (let i = 0; i < weights.length; i++) filter[i] = weights[i] - filterOffset;
  return { filter, bias };
}
