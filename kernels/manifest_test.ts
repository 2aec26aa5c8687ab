/**
 * Every optimized float32 kernel of the manifest against its reference kernel, at tile-1,
 * tile, tile+1 and 2 x tile output pixels and channels and at odd shapes, with strides 1
 * and 2, SAME and VALID padding, dilation, depth multipliers and every fused activation,
 * on seeded random data. Tolerance: 1e-5 absolute + 1e-5 relative (sums run in another
 * order, and in float32 for the SIMD kernels). Weights are scaled by 1/sqrt(fan-in), as
 * trained layers are, so that float32 rounding of long sums stays within that bound.
 */
import { ok } from "node:assert/strict";
import { conv2dFloat } from "./conv_2d.ts";
import type { Conv2dGeometry } from "./conv_common.ts";
import { depthwiseConv2dFloat, type DepthwiseGeometry } from "./conv_depthwise.ts";
import { fullyConnectedFloat } from "./fc_fully_connected.ts";
import { packDepthwiseWeights, packGemmWeights } from "./f32_packing.ts";
import { activationRangeFloat } from "./fixed_point.ts";
import {
  createF32Conv2d,
  createF32DepthwiseConv2d,
  F32_CONV_KERNELS,
  F32_DWCONV_KERNELS,
  F32_GEMM_KERNELS,
  F32_KERNEL_MANIFEST,
  type GemmShape,
  isPointwise,
  type KernelVariant,
} from "./manifest.ts";

/** Seeded uniform floats in [-1, 1) (mulberry32). */
function randomFloats(length: number, seed: number): Float32Array {
  let state = seed >>> 0;
  const out = new Float32Array(length);
  for (let i = 0; i < length; i++) {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    out[i] = (((t ^ (t >>> 14)) >>> 0) / 4294967296) * 2 - 1;
  }
  return out;
}

/** Seeded weights in [-1, 1) / sqrt(fanIn). */
function randomWeights(length: number, fanIn: number, seed: number): Float32Array {
  const scale = 1 / Math.sqrt(fanIn);
  return randomFloats(length, seed).map((w) => w * scale);
}

function assertClose(got: Float32Array, want: Float32Array, what: string): void {
  ok(got.length === want.length, `${what}: length ${got.length} != ${want.length}`);
  for (let i = 0; i < want.length; i++) {
    const g = got[i], w = want[i];
    if (g === w || (Number.isNaN(w) && Number.isNaN(g))) continue;
    if (!(Math.abs(g - w) <= 1e-5 + 1e-5 * Math.abs(w))) {
      throw new Error(`${what}: element ${i} is ${g}, reference ${w}`);
    }
  }
}

/** Output size and leading padding of one axis under NNAPI SAME/VALID padding. */
function axis(size: number, filter: number, stride: number, dilation: number, same: boolean) {
  const extent = (filter - 1) * dilation + 1;
  if (!same) return { out: Math.floor((size - extent) / stride) + 1, pad: 0 };
  const out = Math.ceil(size / stride);
  const total = Math.max((out - 1) * stride + extent - size, 0);
  return { out, pad: Math.floor(total / 2) };
}

interface Case {
  batches?: number;
  inHeight: number;
  inWidth: number;
  inDepth: number;
  filter: [number, number];
  stride?: number;
  dilation?: number;
  same?: boolean;
  outDepth: number;
}

function geometryOf(c: Case): Conv2dGeometry {
  const stride = c.stride ?? 1, dilation = c.dilation ?? 1, same = c.same ?? false;
  const y = axis(c.inHeight, c.filter[0], stride, dilation, same);
  const x = axis(c.inWidth, c.filter[1], stride, dilation, same);
  return {
    batches: c.batches ?? 1,
    inHeight: c.inHeight,
    inWidth: c.inWidth,
    inDepth: c.inDepth,
    filterHeight: c.filter[0],
    filterWidth: c.filter[1],
    outHeight: y.out,
    outWidth: x.out,
    outDepth: c.outDepth,
    strideHeight: stride,
    strideWidth: stride,
    dilationHeight: dilation,
    dilationWidth: dilation,
    padTop: y.pad,
    padLeft: x.pad,
  };
}

/** Input width giving `outWidth` output pixels per row for a stride-`s` VALID window. */
function widthFor(outWidth: number, filter: number, stride: number, dilation = 1): number {
  return (outWidth - 1) * stride + (filter - 1) * dilation + 1;
}

const ACTIVATIONS = [0, 1, 2, 3];

function checkConv(variant: KernelVariant<"conv_hwc">, c: Case, seed: number): void {
  const g = geometryOf(c);
  const taps = g.filterHeight * g.filterWidth * g.inDepth;
  const input = randomFloats(g.batches * g.inHeight * g.inWidth * g.inDepth, seed);
  const filter = randomWeights(g.outDepth * taps, taps, seed + 1);
  const bias = randomFloats(g.outDepth, seed + 2);
  const packed = packGemmWeights(filter, bias, { channels: g.outDepth, depth: taps });
  const length = g.batches * g.outHeight * g.outWidth * g.outDepth;
  const activation = activationRangeFloat(ACTIVATIONS[seed % ACTIVATIONS.length]);
  const want = new Float32Array(length);
  conv2dFloat(g, input, filter, bias, activation, want);
  const run = variant.create(g, packed, activation);
  for (let pass = 0; pass < 2; pass++) {
    const got = new Float32Array(length).fill(Number.NaN);
    run(input, got);
    assertClose(got, want, `${variant.name} ${JSON.stringify(c)} pass ${pass}`);
  }
}

function checkDwconv(
  variant: KernelVariant<"dwconv">,
  c: Case & { multiplier: number },
  seed: number,
): void {
  const g: DepthwiseGeometry = { ...geometryOf(c), depthMultiplier: c.multiplier };
  const taps = g.filterHeight * g.filterWidth;
  const input = randomFloats(g.batches * g.inHeight * g.inWidth * g.inDepth, seed);
  const filter = randomWeights(taps * g.outDepth, taps, seed + 1);
  const bias = randomFloats(g.outDepth, seed + 2);
  const packed = packDepthwiseWeights(filter, bias, { channels: g.outDepth, taps });
  const length = g.batches * g.outHeight * g.outWidth * g.outDepth;
  const activation = activationRangeFloat(ACTIVATIONS[seed % ACTIVATIONS.length]);
  const want = new Float32Array(length);
  depthwiseConv2dFloat(g, input, filter, bias, activation, want);
  const run = variant.create(g, packed, activation);
  for (let pass = 0; pass < 2; pass++) {
    const got = new Float32Array(length).fill(Number.NaN);
    run(input, got);
    assertClose(got, want, `${variant.name} ${JSON.stringify(c)} pass ${pass}`);
  }
}

function checkGemm(variant: KernelVariant<"gemm">, shape: GemmShape, seed: number): void {
  const { rows, depth, channels } = shape;
  const input = randomFloats(rows * depth, seed);
  const weights = randomWeights(channels * depth, depth, seed + 1);
  const bias = randomFloats(channels, seed + 2);
  const packed = packGemmWeights(weights, bias, { channels, depth });
  const activation = activationRangeFloat(ACTIVATIONS[seed % ACTIVATIONS.length]);
  const want = new Float32Array(rows * channels);
  const g = { batches: rows, inputSize: depth, units: channels };
  fullyConnectedFloat(g, input, weights, bias, activation, want);
  const run = variant.create(shape, packed, activation);
  for (let pass = 0; pass < 2; pass++) {
    const got = new Float32Array(rows * channels).fill(Number.NaN);
    run(input, got);
    assertClose(got, want, `${variant.name} ${JSON.stringify(shape)} pass ${pass}`);
  }
}

/** tile-1, tile, tile+1, 2 x tile and two odd sizes (no size below 1). */
function sizesAround(tile: number): number[] {
  return [...new Set([tile - 1, tile, tile + 1, 2 * tile, 2 * tile + 3, 13].filter((n) => n > 0))];
}

Deno.test("the manifest names every variant by datatype, operation, tile and ISA", () => {
  const names = new Set<string>();
  for (const v of F32_KERNEL_MANIFEST) {
    const expected = `f32_${v.operation}_${v.unroll}_${v.isa}`;
    ok(v.name === expected, `${v.name} should be named ${expected}`);
    ok(!names.has(v.name), `${v.name} is listed twice`);
    names.add(v.name);
  }
  ok(F32_GEMM_KERNELS.at(-1)?.isa === "scalar", "the last GEMM variant is the portable one");
  ok(F32_CONV_KERNELS.at(-1)?.isa === "scalar", "the last conv variant is the portable one");
  ok(F32_DWCONV_KERNELS.at(-1)?.isa === "scalar", "the last dwconv variant is the portable one");
});

for (const variant of F32_GEMM_KERNELS) {
  Deno.test({
    name: `${variant.name} matches fullyConnectedFloat() around its tile`,
    ignore: !variant.available(),
    fn() {
      let seed = 1;
      for (const rows of sizesAround(variant.tile.pixels)) {
        for (const channels of sizesAround(variant.tile.channels)) {
          const depth = [1, 3, 17, 64][seed % 4];
          checkGemm(variant, { rows, depth, channels }, seed++);
        }
      }
      // MobileNet's classifier (1024 -> 1000), batch 1 and 3.
      checkGemm(variant, { rows: 1, depth: 1024, channels: 1000 }, seed++);
      checkGemm(variant, { rows: 3, depth: 1024, channels: 1000 }, seed++);
    },
  });
}

for (const variant of F32_CONV_KERNELS) {
  Deno.test({
    name: `${variant.name} matches conv2dFloat() around its tile`,
    ignore: !variant.available(),
    fn() {
      let seed = 100;
      const { pixels, channels } = variant.tile;
      for (const outWidth of sizesAround(pixels)) {
        for (const outDepth of sizesAround(channels)) {
          const inDepth = [1, 3, 5, 8][(seed >> 1) % 4];
          const stride = 1 + ((seed >> 1) % 2);
          // VALID, sized so the row has exactly `outWidth` pixels.
          checkConv(variant, {
            inHeight: 4,
            inWidth: widthFor(outWidth, 3, stride),
            inDepth,
            filter: [3, 3],
            stride,
            outDepth,
          }, seed++);
          // SAME: padded borders on every side.
          checkConv(variant, {
            inHeight: 5,
            inWidth: outWidth * stride,
            inDepth,
            filter: [3, 3],
            stride,
            same: true,
            outDepth,
          }, seed++);
        }
      }
    },
  });

  Deno.test({
    name: `${variant.name} handles dilation, batches, odd filters and strides`,
    ignore: !variant.available(),
    fn() {
      const cases: Case[] = [
        { inHeight: 9, inWidth: 11, inDepth: 3, filter: [3, 3], dilation: 2, outDepth: 9 },
        {
          inHeight: 9,
          inWidth: 11,
          inDepth: 3,
          filter: [3, 2],
          dilation: 2,
          same: true,
          outDepth: 8,
        },
        { batches: 3, inHeight: 6, inWidth: 7, inDepth: 4, filter: [2, 3], outDepth: 5 },
        {
          batches: 2,
          inHeight: 7,
          inWidth: 9,
          inDepth: 6,
          filter: [5, 5],
          stride: 2,
          same: true,
          outDepth: 17,
        },
        { inHeight: 8, inWidth: 8, inDepth: 16, filter: [1, 1], stride: 2, outDepth: 12 },
        { inHeight: 5, inWidth: 6, inDepth: 7, filter: [5, 6], outDepth: 3 },
        { inHeight: 3, inWidth: 3, inDepth: 2, filter: [3, 3], stride: 3, same: true, outDepth: 1 },
        // First MobileNet layer, scaled down: 3x3 stride 2, SAME, 3 -> 32.
        {
          inHeight: 16,
          inWidth: 17,
          inDepth: 3,
          filter: [3, 3],
          stride: 2,
          same: true,
          outDepth: 32,
        },
        // Deep, large-tap window.
        { inHeight: 6, inWidth: 6, inDepth: 64, filter: [3, 3], same: true, outDepth: 24 },
      ];
      cases.forEach((c, i) => checkConv(variant, c, 300 + i));
    },
  });
}

for (const variant of F32_DWCONV_KERNELS) {
  Deno.test({
    name: `${variant.name} matches depthwiseConv2dFloat() around its tile`,
    ignore: !variant.available(),
    fn() {
      let seed = 500;
      const { pixels, channels } = variant.tile;
      for (const outWidth of sizesAround(pixels)) {
        for (const depth of sizesAround(channels)) {
          const stride = 1 + ((seed >> 1) % 2);
          checkDwconv(variant, {
            inHeight: 4,
            inWidth: widthFor(outWidth, 3, stride),
            inDepth: depth,
            filter: [3, 3],
            stride,
            outDepth: depth,
            multiplier: 1,
          }, seed++);
          checkDwconv(variant, {
            inHeight: 5,
            inWidth: outWidth * stride,
            inDepth: depth,
            filter: [3, 3],
            stride,
            same: true,
            outDepth: depth,
            multiplier: 1,
          }, seed++);
        }
      }
    },
  });

  Deno.test({
    name: `${variant.name} handles depth multipliers, dilation and batches`,
    ignore: !variant.available(),
    fn() {
      const cases: (Case & { multiplier: number })[] = [
        { inHeight: 6, inWidth: 7, inDepth: 3, filter: [3, 3], outDepth: 6, multiplier: 2 },
        {
          inHeight: 6,
          inWidth: 9,
          inDepth: 5,
          filter: [3, 3],
          same: true,
          stride: 2,
          outDepth: 15,
          multiplier: 3,
        },
        { inHeight: 5, inWidth: 5, inDepth: 1, filter: [2, 2], outDepth: 8, multiplier: 8 },
        {
          inHeight: 9,
          inWidth: 10,
          inDepth: 8,
          filter: [3, 3],
          dilation: 2,
          same: true,
          outDepth: 8,
          multiplier: 1,
        },
        {
          batches: 3,
          inHeight: 5,
          inWidth: 6,
          inDepth: 16,
          filter: [5, 3],
          outDepth: 16,
          multiplier: 1,
        },
        {
          batches: 2,
          inHeight: 7,
          inWidth: 7,
          inDepth: 12,
          filter: [3, 3],
          stride: 2,
          same: true,
          outDepth: 24,
          multiplier: 2,
        },
        { inHeight: 4, inWidth: 4, inDepth: 32, filter: [4, 4], outDepth: 32, multiplier: 1 },
        // Dense (whole blocks of channels) with padding in two batches: only the border of
        // the staged copy is cleared, after other calls left their values in the scratch.
        {
          batches: 2,
          inHeight: 6,
          inWidth: 5,
          inDepth: 16,
          filter: [3, 3],
          same: true,
          outDepth: 16,
          multiplier: 1,
        },
      ];
      cases.forEach((c, i) => checkDwconv(variant, c, 700 + i));
    },
  });
}

Deno.test("createF32Conv2d() runs 1x1 stride-1 convolutions as a GEMM over pixels", () => {
  const g = geometryOf({
    batches: 2,
    inHeight: 5,
    inWidth: 3,
    inDepth: 12,
    filter: [1, 1],
    outDepth: 10,
  });
  ok(isPointwise(g));
  ok(!isPointwise({ ...g, strideWidth: 2, outWidth: 2 }));
  const input = randomFloats(2 * 5 * 3 * 12, 900);
  const filter = randomFloats(10 * 12, 901);
  const bias = randomFloats(10, 902);
  const packed = packGemmWeights(filter, bias, { channels: 10, depth: 12 });
  const activation = activationRangeFloat(1);
  const want = new Float32Array(2 * 5 * 3 * 10);
  conv2dFloat(g, input, filter, bias, activation, want);
  for (const isa of ["scalar", "simd128", "relaxedsimd"] as const) {
    const got = new Float32Array(want.length);
    createF32Conv2d(g, packed, { activation, isa })(input, got);
    assertClose(got, want, `pointwise ${isa}`);
  }
});

Deno.test("optimized kernels keep NaN and infinities as the reference does", () => {
  const g: DepthwiseGeometry = {
    ...geometryOf({
      inHeight: 4,
      inWidth: 6,
      inDepth: 8,
      filter: [3, 3],
      same: true,
      outDepth: 8,
    }),
    depthMultiplier: 1,
  };
  const input = randomFloats(4 * 6 * 8, 950);
  input[3] = Number.NaN;
  input[40] = Infinity;
  input[77] = -Infinity;
  const filter = randomFloats(9 * 8, 951);
  const bias = randomFloats(8, 952);
  for (const code of ACTIVATIONS) {
    const activation = activationRangeFloat(code);
    const want = new Float32Array(4 * 6 * 8);
    depthwiseConv2dFloat(g, input, filter, bias, activation, want);
    for (const isa of ["scalar", "simd128", "relaxedsimd"] as const) {
      const got = new Float32Array(want.length);
      const packed = packDepthwiseWeights(filter, bias, { channels: 8, taps: 9 });
      createF32DepthwiseConv2d(g, packed, { activation, isa })(input, got);
      assertClose(got, want, `dwconv with NaN/Inf, ${isa}, activation ${code}`);
    }
  }
});
