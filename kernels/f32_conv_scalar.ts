/**
 * Float32 convolution kernels in plain JavaScript on packed weights (see `f32_packing.ts`),
 * the portable fallback of the SIMD kernels. GEMM and convolution tiles keep 2 pixels x 8
 * output channels in local variables, which V8 holds in registers, and stream the packed
 * block once per tile. The depthwise kernel instead runs its inner loops along a pixel's
 * contiguous channels (a depthwise tap has one product per output, so a register tile
 * saves few loads, and in V8 the long plain loop measured faster than 1 x 8 and 2 x 8
 * tiles). Accumulation is in double precision like the reference kernels; only the
 * summation order differs.
 *
 * Each tile is its own top-level function so that V8 optimizes it once for every shape
 * (a closure per layer would share, and dilute, one function's type feedback).
 */
import type { Conv2dGeometry } from "./conv_common.ts";
import type { DepthwiseGeometry } from "./conv_depthwise.ts";
import type { ActivationRange } from "./fixed_point.ts";
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
  c: ActivationRange,
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
 * The taps of one output pixel's window: `rows` filter rows `rowStep` floats apart, each
 * `spans` runs of `span` contiguous floats `spanStep` apart (one run per row when the
 * filter is not dilated across; a GEMM row is one run of `depth` floats).
 */
interface TapWalk {
  rows: number;
  rowStep: number;
  spans: number;
  spanStep: number;
  span: number;
}

/**
 * One 2 x 8 tile: two windows `pixelStep` floats apart from `p0` in `src`, times the packed
 * block at `w`, stored clamped at `out[o]` and `out[o + outStep]`.
 */
function tile2x8(
  src: Float32Array,
  p0: number,
  pixelStep: number,
  packed: Float32Array,
  w: number,
  walk: TapWalk,
  out: Float32Array,
  o: number,
  outStep: number,
  lanes: number,
  clamp: ActivationRange,
): void {
  const { rows, rowStep, spans, spanStep, span } = walk;
  let c0 = packed[w], c1 = packed[w + 1], c2 = packed[w + 2], c3 = packed[w + 3];
  let c4 = packed[w + 4], c5 = packed[w + 5], c6 = packed[w + 6], c7 = packed[w + 7];
  let d0 = c0, d1 = c1, d2 = c2, d3 = c3, d4 = c4, d5 = c5, d6 = c6, d7 = c7;
  w += F32_BLOCK;
  for (let fy = 0, row = p0; fy < rows; fy++, row += rowStep) {
    for (let s = 0, p = row; s < spans; s++, p += spanStep) {
      for (let k = p, end = p + span; k < end; k++, w += F32_BLOCK) {
        const x = src[k], y = src[k + pixelStep];
        const w0 = packed[w], w1 = packed[w + 1], w2 = packed[w + 2], w3 = packed[w + 3];
        const w4 = packed[w + 4], w5 = packed[w + 5], w6 = packed[w + 6], w7 = packed[w + 7];
        c0 += x * w0, c1 += x * w1, c2 += x * w2, c3 += x * w3;
        c4 += x * w4, c5 += x * w5, c6 += x * w6, c7 += x * w7;
        d0 += y * w0, d1 += y * w1, d2 += y * w2, d3 += y * w3;
        d4 += y * w4, d5 += y * w5, d6 += y * w6, d7 += y * w7;
      }
    }
  }
  store8(out, o, lanes, clamp, c0, c1, c2, c3, c4, c5, c6, c7);
  store8(out, o + outStep, lanes, clamp, d0, d1, d2, d3, d4, d5, d6, d7);
}

/** One 1 x 8 tile: the window at `p0` times the packed block at `w`, stored at `out[o]`. */
function tile1x8(
  src: Float32Array,
  p0: number,
  packed: Float32Array,
  w: number,
  walk: TapWalk,
  out: Float32Array,
  o: number,
  lanes: number,
  clamp: ActivationRange,
): void {
  const { rows, rowStep, spans, spanStep, span } = walk;
  let c0 = packed[w], c1 = packed[w + 1], c2 = packed[w + 2], c3 = packed[w + 3];
  let c4 = packed[w + 4], c5 = packed[w + 5], c6 = packed[w + 6], c7 = packed[w + 7];
  w += F32_BLOCK;
  for (let fy = 0, row = p0; fy < rows; fy++, row += rowStep) {
    for (let s = 0, p = row; s < spans; s++, p += spanStep) {
      for (let k = p, end = p + span; k < end; k++, w += F32_BLOCK) {
        const x = src[k];
        c0 += x * packed[w], c1 += x * packed[w + 1], c2 += x * packed[w + 2];
        c3 += x * packed[w + 3], c4 += x * packed[w + 4], c5 += x * packed[w + 5];
        c6 += x * packed[w + 6], c7 += x * packed[w + 7];
      }
    }
  }
  store8(out, o, lanes, clamp, c0, c1, c2, c3, c4, c5, c6, c7);
}

/**
 * `f32_gemm_2x8_scalar`: out[r][n] = clamp(bias[n] + sum_k a[r][k] * w[n][k]) over 2 rows x
 * 8 channels per tile (1 x 8 for the last odd row), weights in the GEMM layout.
 */
export function f32Gemm2x8Scalar(
  shape: GemmShape,
  packed: Float32Array,
  clamp: ActivationRange,
): F32Runner {
  const { rows, depth, channels } = shape;
  const blocks = blockCount(channels);
  const blockLength = F32_BLOCK * (depth + 1);
  const walk: TapWalk = { rows: 1, rowStep: 0, spans: 1, spanStep: 0, span: depth };
  return (a, out) => {
    let r = 0;
    for (; r + 2 <= rows; r += 2) {
      for (let nb = 0; nb < blocks; nb++) {
        const lanes = Math.min(F32_BLOCK, channels - nb * F32_BLOCK);
        const o = r * channels + nb * F32_BLOCK;
        tile2x8(
          a,
          r * depth,
          depth,
          packed,
          nb * blockLength,
          walk,
          out,
          o,
          channels,
          lanes,
          clamp,
        );
      }
    }
    if (r < rows) {
      for (let nb = 0; nb < blocks; nb++) {
        const lanes = Math.min(F32_BLOCK, channels - nb * F32_BLOCK);
        const o = r * channels + nb * F32_BLOCK;
        tile1x8(a, r * depth, packed, nb * blockLength, walk, out, o, lanes, clamp);
      }
    }
  };
}

/**
 * Where a scalar windowed kernel reads its input: in place when no window reads padding
 * (and the channels need no repetition), else from a padded copy.
 */
interface Source {
  padded: PaddedInput | undefined;
  /** Floats between batches, rows and pixels of the source. */
  batchStride: number;
  rowStride: number;
  pixelStride: number;
}

function sourceOf(g: Conv2dGeometry, depthMultiplier: number): Source {
  const region = windowInput(g);
  const pixelStride = g.inDepth * depthMultiplier;
  if (region.inside && depthMultiplier === 1) {
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
  copyPaddedInput(input, copy, { g, p: source.padded, offset: 0 });
  return copy;
}

/**
 * `f32_conv_hwc_2x8_scalar`: NHWC convolution over 2 output pixels of a row x 8 output
 * channels per tile (1 x 8 for a row's last odd pixel), weights in the GEMM layout. With
 * no dilation across, a filter row's taps are one contiguous run of `filterWidth *
 * inDepth` floats in the input and in the packed block.
 */
export function f32Conv2x8Scalar(
  g: Conv2dGeometry,
  packed: Float32Array,
  clamp: ActivationRange,
): F32Runner {
  const { batches, outHeight, outWidth, outDepth, filterHeight, filterWidth, inDepth } = g;
  const source = sourceOf(g, 1);
  const blocks = blockCount(outDepth);
  const blockLength = F32_BLOCK * (filterHeight * filterWidth * inDepth + 1);
  const dense = g.dilationWidth === 1;
  const walk: TapWalk = {
    rows: filterHeight,
    rowStep: g.dilationHeight * source.rowStride,
    spans: dense ? 1 : filterWidth,
    spanStep: g.dilationWidth * inDepth,
    span: dense ? filterWidth * inDepth : inDepth,
  };
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
            const lanes = Math.min(F32_BLOCK, outDepth - nb * F32_BLOCK);
            const at = o + nb * F32_BLOCK;
            tile2x8(
              src,
              p0,
              pixelStep,
              packed,
              nb * blockLength,
              walk,
              out,
              at,
              outDepth,
              lanes,
              clamp,
            );
          }
        }
        if (ox < outWidth) {
          const p0 = rowBase + ox * pixelStep;
          for (let nb = 0; nb < blocks; nb++) {
            const lanes = Math.min(F32_BLOCK, outDepth - nb * F32_BLOCK);
            tile1x8(src, p0, packed, nb * blockLength, walk, out, o + nb * F32_BLOCK, lanes, clamp);
          }
          o += outDepth;
        }
      }
    }
  };
}

/**
 * One output pixel of a depthwise convolution: `acc` starts from the bias row of the packed
 * weights, adds each tap's input pixel (at `p0 + tapOffsets[t]`) times the tap's weight row,
 * and is stored clamped at `out[o]`; every loop runs along `channels` contiguous floats.
 */
function depthwisePixel(
  src: Float32Array,
  p0: number,
  tapOffsets: Int32Array,
  packed: Float32Array,
  weightStride: number,
  acc: Float64Array,
  out: Float32Array,
  o: number,
  clamp: ActivationRange,
): void {
  const channels = acc.length;
  for (let c = 0; c < channels; c++) acc[c] = packed[c];
  for (let t = 0, w = weightStride; t < tapOffsets.length; t++, w += weightStride) {
    const p = p0 + tapOffsets[t];
    for (let c = 0; c < channels; c++) acc[c] += src[p + c] * packed[w + c];
  }
  const { min, max } = clamp;
  for (let c = 0; c < channels; c++) out[o + c] = clampTo(acc[c], min, max);
}

/**
 * `f32_dwconv_1xc_scalar`: depthwise convolution one output pixel at a time with inner
 * loops along all its channels, weights in the depthwise layout. The input is read with
 * its channels repeated per depth multiplier, so output channel `c` reads channel `c`.
 */
export function f32Dwconv1xcScalar(
  g: DepthwiseGeometry,
  packed: Float32Array,
  clamp: ActivationRange,
): F32Runner {
  const { batches, outHeight, outWidth, outDepth, filterHeight, filterWidth } = g;
  const source = sourceOf(g, g.depthMultiplier);
  const weightStride = blockCount(outDepth) * F32_BLOCK;
  const tapOffsets = new Int32Array(filterHeight * filterWidth);
  for (let fy = 0; fy < filterHeight; fy++) {
    for (let fx = 0; fx < filterWidth; fx++) {
      tapOffsets[fy * filterWidth + fx] = fy * g.dilationHeight * source.rowStride +
        fx * g.dilationWidth * source.pixelStride;
    }
  }
  const acc = new Float64Array(outDepth);
  const pixelStep = g.strideWidth * source.pixelStride;
  return (input, out) => {
    const src = readSource(g, source, input);
    let o = 0;
    for (let b = 0; b < batches; b++) {
      for (let oy = 0; oy < outHeight; oy++) {
        const rowBase = b * source.batchStride + oy * g.strideHeight * source.rowStride;
        for (let ox = 0; ox < outWidth; ox++, o += outDepth) {
          depthwisePixel(
            src,
            rowBase + ox * pixelStep,
            tapOffsets,
            packed,
            weightStride,
            acc,
            out,
            o,
            clamp,
          );
        }
      }
    }
  };
}
