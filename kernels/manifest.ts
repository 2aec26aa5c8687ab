/**
 * The optimized float32 kernel variants (XNNPACK-style names: datatype, operation, tile of
 * output pixels x output channels, instruction set), in order of preference, and the
 * per-operation choice among the ones this engine runs. Tests and benchmarks iterate the
 * manifest; the reference kernels (`conv_2d.ts`, `conv_depthwise.ts`,
 * `fc_fully_connected.ts`) stay the executable specification they are checked against.
 *
 * All variants of an operation take the same packed weights (`f32_packing.ts`), so weights
 * are packed once at preparation whatever variant a worker binds.
 */
import type { Conv2dGeometry } from "./conv_common.ts";
import type { DepthwiseGeometry } from "./conv_depthwise.ts";
import {
  f32Conv2x8Scalar,
  f32Dwconv1xcScalar,
  f32Gemm2x8Scalar,
  type F32Runner,
  type GemmShape,
} from "./f32_conv_scalar.ts";
import { f32Conv4x8Simd, f32Dwconv4x8Simd, f32Gemm4x8Simd } from "./f32_conv_simd128.ts";
import { simdAvailable } from "./simd_runtime.ts";
import type { ActivationRange } from "./fixed_point.ts";

export type { F32Runner, GemmShape } from "./f32_conv_scalar.ts";

/** Instruction sets, best last: plain JS, WebAssembly SIMD128, relaxed SIMD (FMA). */
export type KernelIsa = "scalar" | "simd128" | "relaxedsimd";

/** The shape each operation's kernels take. */
export interface KernelShapes {
  /** Matrix product: 1x1 stride-1 CONV_2D (pointwise) and FULLY_CONNECTED. */
  gemm: GemmShape;
  /** Any other NHWC CONV_2D. */
  conv_hwc: Conv2dGeometry;
  /** NHWC DEPTHWISE_CONV_2D, any depth multiplier. */
  dwconv: DepthwiseGeometry;
}

/** One optimized kernel variant. */
export interface KernelVariant<Op extends keyof KernelShapes = keyof KernelShapes> {
  name: string;
  operation: Op;
  isa: KernelIsa;
  /** The unroll in the name: output pixels x output channels per tile ("c": all). */
  unroll: string;
  /** Output pixels (rows) x output channels per tile, or channel granularity, for tests. */
  tile: { pixels: number; channels: number };
  /** Whether this engine can run it. */
  available(): boolean;
  /**
   * Binds the variant to a shape, packed weights and the fused activation's clamp. With
   * `liveWeights`, `packed` is read again at every run (weights computed at execution,
   * repacked into the same array before each run).
   */
  create(
    shape: KernelShapes[Op],
    packed: Float32Array,
    activation: ActivationRange,
    liveWeights?: boolean,
  ): F32Runner;
}

const always = () => true;
const simd = () => simdAvailable(false);
const relaxed = () => simdAvailable(true);

/** Matrix-product variants, best first. */
export const F32_GEMM_KERNELS: readonly KernelVariant<"gemm">[] = [
  {
    name: "f32_gemm_4x8_relaxedsimd",
    operation: "gemm",
    isa: "relaxedsimd",
    unroll: "4x8",
    tile: { pixels: 4, channels: 8 },
    available: relaxed,
    create: f32Gemm4x8Simd(true),
  },
  {
    name: "f32_gemm_4x8_simd128",
    operation: "gemm",
    isa: "simd128",
    unroll: "4x8",
    tile: { pixels: 4, channels: 8 },
    available: simd,
    create: f32Gemm4x8Simd(false),
  },
  {
    name: "f32_gemm_2x8_scalar",
    operation: "gemm",
    isa: "scalar",
    unroll: "2x8",
    tile: { pixels: 2, channels: 8 },
    available: always,
    create: f32Gemm2x8Scalar,
  },
];

/** Convolution variants, best first. */
export const F32_CONV_KERNELS: readonly KernelVariant<"conv_hwc">[] = [
  {
    name: "f32_conv_hwc_4x8_relaxedsimd",
    operation: "conv_hwc",
    isa: "relaxedsimd",
    unroll: "4x8",
    tile: { pixels: 4, channels: 8 },
    available: relaxed,
    create: f32Conv4x8Simd(true),
  },
  {
    name: "f32_conv_hwc_4x8_simd128",
    operation: "conv_hwc",
    isa: "simd128",
    unroll: "4x8",
    tile: { pixels: 4, channels: 8 },
    available: simd,
    create: f32Conv4x8Simd(false),
  },
  {
    name: "f32_conv_hwc_2x8_scalar",
    operation: "conv_hwc",
    isa: "scalar",
    unroll: "2x8",
    tile: { pixels: 2, channels: 8 },
    available: always,
    create: f32Conv2x8Scalar,
  },
];

/** Depthwise convolution variants, best first. */
export const F32_DWCONV_KERNELS: readonly KernelVariant<"dwconv">[] = [
  {
    name: "f32_dwconv_4x8_relaxedsimd",
    operation: "dwconv",
    isa: "relaxedsimd",
    unroll: "4x8",
    tile: { pixels: 4, channels: 8 },
    available: relaxed,
    create: f32Dwconv4x8Simd(true),
  },
  {
    name: "f32_dwconv_4x8_simd128",
    operation: "dwconv",
    isa: "simd128",
    unroll: "4x8",
    tile: { pixels: 4, channels: 8 },
    available: simd,
    create: f32Dwconv4x8Simd(false),
  },
  {
    name: "f32_dwconv_1xc_scalar",
    operation: "dwconv",
    isa: "scalar",
    unroll: "1xc",
    tile: { pixels: 1, channels: 8 },
    available: always,
    create: f32Dwconv1xcScalar,
  },
];

/** Every variant, for tests and benchmarks. */
export const F32_KERNEL_MANIFEST: readonly KernelVariant[] = [
  ...F32_GEMM_KERNELS,
  ...F32_CONV_KERNELS,
  ...F32_DWCONV_KERNELS,
];

/** Options of the per-operation kernel choice. */
export interface KernelChoice {
  /** The fused activation's clamp. */
  activation: ActivationRange;
  /** Use this instruction set (when available) instead of the best one. */
  isa?: KernelIsa;
  /** The packed weights change between runs (see {@link KernelVariant.create}). */
  liveWeights?: boolean;
}

/**
 * Binds the best usable variant (or the best of the requested instruction set); a variant
 * whose weights do not fit in memory (RangeError) gives way to the next one.
 */
function bind<Op extends keyof KernelShapes>(
  variants: readonly KernelVariant<Op>[],
  shape: KernelShapes[Op],
  packed: Float32Array,
  options: KernelChoice,
): F32Runner {
  const { isa, activation, liveWeights } = options;
  const usable = variants.filter((v) => v.available() && (isa === undefined || v.isa === isa));
  for (const variant of usable) {
    try {
      return variant.create(shape, packed, activation, liveWeights);
    } catch (error) {
      if (!(error instanceof RangeError)) throw error;
    }
  }
  // The last variant of each list is the portable scalar one.
  return variants[variants.length - 1].create(shape, packed, activation, liveWeights);
}

/** Whether a convolution is a matrix product over its pixels (1x1, stride 1, no padding). */
export function isPointwise(g: Conv2dGeometry): boolean {
  return g.filterHeight === 1 && g.filterWidth === 1 && g.strideHeight === 1 &&
    g.strideWidth === 1 && g.padTop === 0 && g.padLeft === 0 &&
    g.outHeight === g.inHeight && g.outWidth === g.inWidth;
}

/** The best kernel for an NHWC CONV_2D with GEMM-layout packed weights. */
export function createF32Conv2d(
  g: Conv2dGeometry,
  packed: Float32Array,
  options: KernelChoice,
): F32Runner {
  if (isPointwise(g)) {
    const rows = g.batches * g.inHeight * g.inWidth;
    return bind(
      F32_GEMM_KERNELS,
      { rows, depth: g.inDepth, channels: g.outDepth },
      packed,
      options,
    );
  }
  return bind(F32_CONV_KERNELS, g, packed, options);
}

/** The best kernel for an NHWC DEPTHWISE_CONV_2D with depthwise-layout packed weights. */
export function createF32DepthwiseConv2d(
  g: DepthwiseGeometry,
  packed: Float32Array,
  options: KernelChoice,
): F32Runner {
  return bind(F32_DWCONV_KERNELS, g, packed, options);
}

/** The best kernel for a FULLY_CONNECTED layer with GEMM-layout packed weights. */
export function createF32FullyConnected(
  shape: GemmShape,
  packed: Float32Array,
  options: KernelChoice,
): F32Runner {
  return bind(F32_GEMM_KERNELS, shape, packed, options);
}
