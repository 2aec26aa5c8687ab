/**
 * Register-blocked float32 convolution kernels in plain JavaScript on packed weights (see
 * `f32_packing.ts`): each inner step keeps a tile of outputs (up to 2 pixels x 8 output
 * channels) in local variables, which V8 holds in registers, and streams the packed block
 * once per tile. Accumulation is in double precision like the reference kernels; only the
 * summation order differs. These are the portable fallback of the SIMD kernels.
 */
import type { Conv2dGeometry } from "./conv_common.ts";
import { blockCount, F32_BLOCK } from "./f32_packing.ts";
import {
  copyPaddedInput,
  type PaddedInput,
  paddedInputLength,
  windowInput,
} from "./f32_window_input.ts";

/** Sizes of a matrix product: `rows` x `depth` input times `depth` x `channels` weights. */
export interface GemmShape {
  rows: number;
  depth: number;
  channels: number;
}

/** Clamp bounds of the fused activation (-Infinity/Infinity when there is none). */
export interface F32Clamp {
  min: number;
  max: number;
}

/** A bound kernel: reads the whole input tensor, writes the whole output tensor. */
export type F32Runner = (input: Float32Array, output: Float32Array) => void;

let scratch = new Float32Array(0);

/**
 * A scratch array shared by the scalar kernels of this realm for their padded input
 * copies; kernels never nest, so one buffer (grown to the largest need) serves all.
 */
function sharedScratch(length: number): Float32Array {
  if (scratch.length < length) scratch = new Float32Array(length);
  return scratch;
}

function clampTo(v: number, min: number, max: number): number {
  return v < min ? min : v > max ? max : v;
}

/** Stores the first `lanes` of eight accumulators, clamped, at `out[o...]`. */
function store8(
  out: Float32Array,
  o: number,
  lanes: number,
  c: F32Clamp,
  a0: number,
  a1: number,
  a2: number,
  a3: number,
  a4: number,
  a5: number,
  a6: number,
  a7: number,
): void {
  const { min, max } = c;
  if (lanes === F32_BLOCK) {
    out[o] = clampTo(a0, min, max);
    out[o + 1] = clampTo(a1, min, max);
    out[o + 2] = clampTo(a2, min, max);
    out[o + 3] = clampTo(a3, min, max);
    out[o + 4] = clampTo(a4, min, max);
    out[o + 5] = clampTo(a5, min, max);
    out[o + 6] = clampTo(a6, min, max);
    out[o + 7] = clampTo(a7, min, max);
    return;
  }
  const values = [a0, a1, a2, a3, a4, a5, a6, a7];
  for (let j = 0; j < lanes; j++) out[o + j] = clampTo(values[j], min, max);
}

/**
 * `f32_gemm_2x8_scalar`: out[r][n] = clamp(bias[n] + sum_k a[r][k] * w[n][k]) over 2 rows x
 * 8 channels per tile (1 x 8 for the last odd row), weights in the GEMM layout.
 */
export function f32Gemm2x8Scalar(
  shape: GemmShape,
  packed: Float32Array,
  clamp: F32Clamp,
): F32Runner {
  const { rows, depth, channels } = shape;
  const blocks = blockCount(channels);
  const blockLength = F32_BLOCK * (depth + 1);
  return (a, out) => {
    let r = 0;
    for (; r + 2 <= rows; r += 2) {
      const a0 = r * depth;
      const end = a0 + depth;
      for (let nb = 0; nb < blocks; nb++) {
        let w = nb * blockLength;
        let c0 = packed[w], c1 = packed[w + 1], c2 = packed[w + 2], c3 = packed[w + 3];
        let c4 = packed[w + 4], c5 = packed[w + 5], c6 = packed[w + 6], c7 = packed[w + 7];
        let d0 = c0, d1 = c1, d2 = c2, d3 = c3, d4 = c4, d5 = c5, d6 = c6, d7 = c7;
        w += F32_BLOCK;
        for (let k = a0; k < end; k++, w += F32_BLOCK) {
          const x = a[k], y = a[k + depth];
          const w0 = packed[w], w1 = packed[w + 1], w2 = packed[w + 2], w3 = packed[w + 3];
          const w4 = packed[w + 4], w5 = packed[w + 5], w6 = packed[w + 6], w7 = packed[w + 7];
          c0 += x * w0, c1 += x * w1, c2 += x * w2, c3 += x * w3;
          c4 += x * w4, c5 += x * w5, c6 += x * w6, c7 += x * w7;
          d0 += y * w0, d1 += y * w1, d2 += y * w2, d3 += y * w3;
          d4 += y * w4, d5 += y * w5, d6 += y * w6, d7 += y * w7;
        }
        const lanes = Math.min(F32_BLOCK, channels - nb * F32_BLOCK);
        const o = r * channels + nb * F32_BLOCK;
        store8(out, o, lanes, clamp, c0, c1, c2, c3, c4, c5, c6, c7);
        store8(out, o + channels, lanes, clamp, d0, d1, d2, d3, d4, d5, d6, d7);
      }
    }
    if (r < rows) {
      const a0 = r * depth;
      const end = a0 + depth;
      for (let nb = 0; nb < blocks; nb++) {
        let w = nb * blockLength;
        let c0 = packed[w], c1 = packed[w + 1], c2 = packed[w + 2], c3 = packed[w + 3];
        let c4 = packed[w + 4], c5 = packed[w + 5], c6 = packed[w + 6], c7 = packed[w + 7];
        w += F32_BLOCK;
        for (let k = a0; k < end; k++, w += F32_BLOCK) {
          const x = a[k];
          c0 += x * packed[w], c1 += x * packed[w + 1], c2 += x * packed[w + 2];
          c3 += x * packed[w + 3], c4 += x * packed[w + 4], c5 += x * packed[w + 5];
          c6 += x * packed[w + 6], c7 += x * packed[w + 7];
        }
        const lanes = Math.min(F32_BLOCK, channels - nb * F32_BLOCK);
        store8(out, r * channels + nb * F32_BLOCK, lanes, clamp, c0, c1, c2, c3, c4, c5, c6, c7);
      }
    }
  };
}

/**
 * Where a scalar windowed kernel reads its input: in place when no window reads padding
 * (and the channels need no repetition or vector padding), else from a padded copy.
 */
interface Source {
  padded: PaddedInput | undefined;
  /** Floats between batches, rows and pixels of the source. */
  batchStride: number;
  rowStride: number;
  pixelStride: number;
}

function sourceOf(g: Conv2dGeometry, depthMultiplier: number, pixelStride: number): Source {
  const region = windowInput(g);
  if (region.inside && depthMultiplier === 1 && pixelStride === g.inDepth) {
    return {
      padded: undefined,
      batchStride: g.inHeight * g.inWidth * g.inDepth,
      rowStride: g.inWidth * g.inDepth,
      pixelStride,
    };
  }
  return {
    padded: { ...region, depthMultiplier, pixelStride },
    batchStride: region.height * region.width * pixelStride,
    rowStride: region.width * pixelStride,
    pixelStride,
  };
}

function readSource(g: Conv2dGeometry, source: Source, input: Float32Array): Float32Array {
  if (!source.padded) return input;
  const copy = sharedScratch(paddedInputLength(g, source.padded));
  copyPaddedInput(g, source.padded, input, copy, 0);
  return copy;
}

/**
 * `f32_conv_hwc_2x8_scalar`: NHWC convolution over 2 output pixels of a row x 8 output
 * channels per tile (1 x 8 for a row's last odd pixel), weights in the GEMM layout. With
 * no dilation, a filter row's taps are one contiguous run of `filterWidth * inDepth`
 * floats in the input and in the packed block.
 */
export function f32Conv2x8Scalar(
  g: Conv2dGeometry,
  packed: Float32Array,
  clamp: F32Clamp,
): F32Runner {
  const { batches, outHeight, outWidth, outDepth, filterHeight, filterWidth, inDepth } = g;
  const source = sourceOf(g, 1, inDepth);
  const blocks = blockCount(outDepth);
  const blockLength = F32_BLOCK * (filterHeight * filterWidth * inDepth + 1);
  const span = g.dilationWidth === 1 ? filterWidth * inDepth : inDepth;
  const spans = g.dilationWidth === 1 ? 1 : filterWidth;
  const spanStep = g.dilationWidth * inDepth;
  const tapRowStep = g.dilationHeight * source.rowStride;
  const pixelStep = g.strideWidth * inDepth;
  return (input, out) => {
    const src = readSource(g, source, input);
    let o = 0;
    for (let b = 0; b < batches; b++) {
      for (let oy = 0; oy < outHeight; oy++) {
        const rowBase = b * source.batchStride + oy * g.strideHeight * source.rowStride;
        let ox = 0;
        for (; ox + 2 <= outWidth; ox += 2, o += 2 * outDepth) {
          const p0 = rowBase + ox * pixelStep;
          for (let nb = 0; nb < blocks; nb++) {
            let w = nb * blockLength;
            let c0 = packed[w], c1 = packed[w + 1], c2 = packed[w + 2], c3 = packed[w + 3];
            let c4 = packed[w + 4], c5 = packed[w + 5], c6 = packed[w + 6], c7 = packed[w + 7];
            let d0 = c0, d1 = c1, d2 = c2, d3 = c3, d4 = c4, d5 = c5, d6 = c6, d7 = c7;
            w += F32_BLOCK;
            for (let fy = 0, row = p0; fy < filterHeight; fy++, row += tapRowStep) {
              for (let s = 0, p = row; s < spans; s++, p += spanStep) {
                for (let k = p, end = p + span; k < end; k++, w += F32_BLOCK) {
                  const x = src[k], y = src[k + pixelStep];
                  const w0 = packed[w], w1 = packed[w + 1], w2 = packed[w + 2];
                  const w3 = packed[w + 3], w4 = packed[w + 4], w5 = packed[w + 5];
                  const w6 = packed[w + 6], w7 = packed[w + 7];
                  c0 += x * w0, c1 += x * w1, c2 += x * w2, c3 += x * w3;
                  c4 += x * w4, c5 += x * w5, c6 += x * w6, c7 += x * w7;
                  d0 += y * w0, d1 += y * w1, d2 += y * w2, d3 += y * w3;
                  d4 += y * w4, d5 += y * w5, d6 += y * w6, d7 += y * w7;
                }
              }
            }
            const lanes = Math.min(F32_BLOCK, outDepth - nb * F32_BLOCK);
            const at = o + nb * F32_BLOCK;
            store8(out, at, lanes, clamp, c0, c1, c2, c3, c4, c5, c6, c7);
            store8(out, at + outDepth, lanes, clamp, d0, d1, d2, d3, d4, d5, d6, d7);
          }
        }
        if (ox < outWidth) {
          const p0 = rowBase + ox * pixelStep;
          for (let nb = 0; nb < blocks; nb++) {
            let w = nb * blockLength;
            let c0 = packed[w], c1 = packed[w + 1], c2 = packed[w + 2], c3 = packed[w + 3];
            let c4 = packed[w + 4], c5 = packed[w + 5], c6 = packed[w + 6], c7 = packed[w + 7];
            w += F32_BLOCK;
            for (let fy = 0, row = p0; fy < filterHeight; fy++, row += tapRowStep) {
              for (let s = 0, p = row; s < spans; s++, p += spanStep) {
                for (let k = p, end = p + span; k < end; k++, w += F32_BLOCK) {
                  const x = src[k];
                  c0 += x * packed[w], c1 += x * packed[w + 1], c2 += x * packed[w + 2];
                  c3 += x * packed[w + 3], c4 += x * packed[w + 4], c5 += x * packed[w + 5];
                  c6 += x * packed[w + 6], c7 += x * packed[w + 7];
                }
              }
            }
            const lanes = Math.min(F32_BLOCK, outDepth - nb * F32_BLOCK);
            store8(out, o + nb * F32_BLOCK, lanes, clamp, c0, c1, c2, c3, c4, c5, c6, c7);
          }
          o += outDepth;
        }
      }
    }
  };
}

/** Geometry of a depthwise convolution as the optimized kernels take it. */
export interface DepthwiseShape extends Conv2dGeometry {
  depthMultiplier: number;
}

/**
 * `f32_dwconv_1x8_scalar`: depthwise convolution over 1 output pixel x 8 channels per tile,
 * weights in the depthwise layout. The input is read with its channels repeated per depth
 * multiplier and padded to whole blocks, so every output channel `c` reads channel `c`.
 */
export function f32Dwconv1x8Scalar(
  g: DepthwiseShape,
  packed: Float32Array,
  clamp: F32Clamp,
): F32Runner {
  const { batches, outHeight, outWidth, outDepth, filterHeight, filterWidth } = g;
  const blocks = blockCount(outDepth);
  const source = sourceOf(g, g.depthMultiplier, blocks * F32_BLOCK);
  const blockLength = F32_BLOCK * (filterHeight * filterWidth + 1);
  const tapStep = g.dilationWidth * source.pixelStride;
  const tapRowStep = g.dilationHeight * source.rowStride;
  const pixelStep = g.strideWidth * source.pixelStride;
  return (input, out) => {
    const src = readSource(g, source, input);
    let o = 0;
    for (let b = 0; b < batches; b++) {
      for (let oy = 0; oy < outHeight; oy++) {
        const rowBase = b * source.batchStride + oy * g.strideHeight * source.rowStride;
        for (let ox = 0; ox < outWidth; ox++, o += outDepth) {
          const p0 = rowBase + ox * pixelStep;
          for (let nb = 0; nb < blocks; nb++) {
            let w = nb * blockLength;
            let c0 = packed[w], c1 = packed[w + 1], c2 = packed[w + 2], c3 = packed[w + 3];
            let c4 = packed[w + 4], c5 = packed[w + 5], c6 = packed[w + 6], c7 = packed[w + 7];
            w += F32_BLOCK;
            const channelBase = p0 + nb * F32_BLOCK;
            for (let fy = 0, row = channelBase; fy < filterHeight; fy++, row += tapRowStep) {
              for (let fx = 0, p = row; fx < filterWidth; fx++, p += tapStep, w += F32_BLOCK) {
                c0 += src[p] * packed[w], c1 += src[p + 1] * packed[w + 1];
                c2 += src[p + 2] * packed[w + 2], c3 += src[p + 3] * packed[w + 3];
                c4 += src[p + 4] * packed[w + 4], c5 += src[p + 5] * packed[w + 5];
                c6 += src[p + 6] * packed[w + 6], c7 += src[p + 7] * packed[w + 7];
              }
            }
            const lanes = Math.min(F32_BLOCK, outDepth - nb * F32_BLOCK);
            store8(out, o + nb * F32_BLOCK, lanes, clamp, c0, c1, c2, c3, c4, c5, c6, c7);
          }
        }
      }
    }
  };
}
