/**
 * DEPTHWISE_CONV_2D on NHWC float32 tensors, filter and bias bound as they are (constants
 * or computed alike: the filter [1, h, w, outDepth] already has channels innermost).
 *
 * With a depth multiplier of 1 and whole groups of 4 channels (MobileNet's case), each
 * invocation computes 4 adjacent channels of one output pixel with vec4 loads and stores:
 * a quarter of the invocations and of the index arithmetic. Other calls take one
 * invocation per output element.
 */
import { elementCount, type TensorInfo } from "../../../../nnapi/tensor.ts";
import type { PrepareInput } from "../../../../operations/operation.ts";
import {
  FLAT_INDEX,
  type GpuCommand,
  type KernelOptions,
  nhwcOutputIndex,
  outputClamp,
  outputClampFields,
  paramBuffer,
  workgroupsFor,
} from "./common.ts";
import { convolutionOf } from "./convolution.ts";

const GEOMETRY_FIELDS = `batches: u32, in_h: i32, in_w: i32, in_d: u32,
  f_h: i32, f_w: i32, out_h: u32, out_w: u32, out_d: u32,
  stride_h: i32, stride_w: i32, dil_h: i32, dil_w: i32, pad_top: i32, pad_left: i32,`;

/**
 * WGSL visiting the filter window of output pixel (`b`, `oy`, `ox`), skipping taps in the
 * padding: `add` runs per tap with `pixel` (the input pixel's index) and `position` (the
 * tap's index in the filter), adding into an `acc` declared before.
 */
function windowSum(add: string): string {
  return `  let iy0 = i32(oy) * p.stride_h - p.pad_top;
  let ix0 = i32(ox) * p.stride_w - p.pad_left;
  for (var fy = 0; fy < p.f_h; fy++) {
    let iy = iy0 + fy * p.dil_h;
    if (iy < 0 || iy >= p.in_h) { continue; }
    let row = (b * u32(p.in_h) + u32(iy)) * u32(p.in_w);
    for (var fx = 0; fx < p.f_w; fx++) {
      let ix = ix0 + fx * p.dil_w;
      if (ix < 0 || ix >= p.in_w) { continue; }
      let pixel = row + u32(ix);
      let position = u32(fy * p.f_w + fx);
      ${add}
    }
  }`;
}

/** Whether a call takes the 4-channel vec4 kernel. */
export function depthwiseIsVectorized(outDepth: number, depthMultiplier: number): boolean {
  return depthMultiplier === 1 && outDepth % 4 === 0;
}

/** WGSL of the 4-channel kernel: `out_d` counts vec4 groups here (in_d is the same). */
function vectorCode(options: KernelOptions): string {
  return `struct Params {
  ${GEOMETRY_FIELDS}
  total: u32, lo: f32, hi: f32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> w: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> bias: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> y: array<vec4<f32>>;
${outputClamp(options)}
${FLAT_INDEX}
  if (i >= p.total) { return; }
${nhwcOutputIndex("g", "out_d")}
  var acc = vec4<f32>(0.0);
${windowSum("acc += x[pixel * p.out_d + g] * w[position * p.out_d + g];")}
  y[i] = activate4(acc + bias[g]);
}
`;
}

/** WGSL of the one-element kernel, for any depth multiplier and channel count. */
function scalarCode(options: KernelOptions): string {
  return `struct Params {
  ${GEOMETRY_FIELDS}
  multiplier: u32, total: u32, lo: f32, hi: f32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
${outputClamp(options)}
${FLAT_INDEX}
  if (i >= p.total) { return; }
${nhwcOutputIndex("oc", "out_d")}
  let ic = oc / p.multiplier;
  var acc = 0.0;
${windowSum("acc += x[pixel * p.in_d + ic] * w[position * p.out_d + oc];")}
  y[i] = activate(acc + bias[oc]);
}
`;
}

/** DEPTHWISE_CONV_2D (NHWC). */
export function depthwiseConv2dKernel(
  inputs: readonly PrepareInput[],
  outputs: readonly TensorInfo[],
  options: KernelOptions,
): GpuCommand[] {
  const { p, g } = convolutionOf(inputs, outputs, "DEPTHWISE_CONV_2D");
  const vectorized = depthwiseIsVectorized(g.outDepth, g.depthMultiplier);
  const lanes = vectorized ? 4 : 1;
  const fields = [
    g.batches,
    g.inHeight,
    g.inWidth,
    g.inDepth / lanes,
    g.filterHeight,
    g.filterWidth,
    g.outHeight,
    g.outWidth,
    g.outDepth / lanes,
    g.strideHeight,
    g.strideWidth,
    g.dilationHeight,
    g.dilationWidth,
    g.padTop,
    g.padLeft,
  ];
  const total = elementCount(outputs[0].shape) / lanes;
  const clamp = outputClampFields(p.activation, options);
  return [{
    kind: "dispatch",
    code: vectorized ? vectorCode(options) : scalarCode(options),
    params: paramBuffer(
      vectorized ? [...fields, total, ...clamp] : [...fields, g.depthMultiplier, total, ...clamp],
    ),
    reads: [{ input: 0 }, { input: 1 }, { input: 2 }],
    writes: [0],
    workgroups: workgroupsFor(total),
  }];
}
