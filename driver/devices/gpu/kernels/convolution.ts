/**
 * CONV_2D and DEPTHWISE_CONV_2D on NHWC float32 tensors, with the parameters decoded by the
 * operations' own helpers (`convolutionParams`: implicit or explicit padding, strides,
 * dilation, depth multiplier, fused activation).
 *
 * CONV_2D: each invocation computes a tile of 4 output channels x 4 output columns, so one
 * filter load feeds 4 columns and one input load 4 channels. The filter (a constant) is
 * re-laid out at preparation as [filterHeight][filterWidth][inDepth][outDepth / 4] vec4s,
 * zero-padded to whole channel groups, with the bias padded likewise.
 * DEPTHWISE_CONV_2D: one invocation per output element on the filter's own layout, whose
 * channels are already innermost.
 */
import { elementCount, type TensorInfo } from "../../../../nnapi/tensor.ts";
import {
  convolutionGeometry,
  convolutionParams,
} from "../../../../operations/common/convolution.ts";
import { check, type PrepareInput } from "../../../../operations/operation.ts";
import {
  activationFields,
  CLAMP,
  constantFloats,
  constantScalar,
  FLAT_INDEX,
  type GpuCommand,
  paramBuffer,
  workgroupsFor,
} from "./common.ts";

/** Output columns per CONV_2D invocation. */
const TILE_COLUMNS = 4;

const GEOMETRY_FIELDS = `batches: u32, in_h: i32, in_w: i32, in_d: u32,
  f_h: i32, f_w: i32, out_h: u32, out_w: u32, out_d: u32,
  stride_h: i32, stride_w: i32, dil_h: i32, dil_w: i32, pad_top: i32, pad_left: i32,`;

const CONV_CODE = `struct Params {
  ${GEOMETRY_FIELDS}
  groups: u32, tiles: u32, total: u32, lo: f32, hi: f32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> bias: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
${CLAMP}
fn store(pixel: u32, g: u32, acc: vec4<f32>) {
  let base = pixel * p.out_d + g * 4u;
  for (var k = 0u; k < 4u; k++) {
    if (g * 4u + k < p.out_d) { y[base + k] = clamp_activation(acc[k], p.lo, p.hi); }
  }
}
${FLAT_INDEX}
  if (i >= p.total) { return; }
  let g = i % p.groups;
  var t = i / p.groups;
  let tile = t % p.tiles;
  t = t / p.tiles;
  let oy = t % p.out_h;
  let b = t / p.out_h;
  let ox0 = tile * ${TILE_COLUMNS}u;
  var acc0 = bias[g];
  var acc1 = acc0;
  var acc2 = acc0;
  var acc3 = acc0;
  let iy0 = i32(oy) * p.stride_h - p.pad_top;
  let ix0 = i32(ox0) * p.stride_w - p.pad_left;
  let sw = p.stride_w;
  let last = i32(p.out_w) - i32(ox0);
  for (var fy = 0; fy < p.f_h; fy++) {
    let iy = iy0 + fy * p.dil_h;
    if (iy < 0 || iy >= p.in_h) { continue; }
    let row = (b * u32(p.in_h) + u32(iy)) * u32(p.in_w);
    for (var fx = 0; fx < p.f_w; fx++) {
      let ix = ix0 + fx * p.dil_w;
      let v0 = ix >= 0 && ix < p.in_w;
      let v1 = ix + sw >= 0 && ix + sw < p.in_w && last > 1;
      let v2 = ix + 2 * sw >= 0 && ix + 2 * sw < p.in_w && last > 2;
      let v3 = ix + 3 * sw >= 0 && ix + 3 * sw < p.in_w && last > 3;
      let c0 = (row + u32(clamp(ix, 0, p.in_w - 1))) * p.in_d;
      let c1 = (row + u32(clamp(ix + sw, 0, p.in_w - 1))) * p.in_d;
      let c2 = (row + u32(clamp(ix + 2 * sw, 0, p.in_w - 1))) * p.in_d;
      let c3 = (row + u32(clamp(ix + 3 * sw, 0, p.in_w - 1))) * p.in_d;
      var wi = u32(fy * p.f_w + fx) * p.in_d * p.groups + g;
      if (v0 && v1 && v2 && v3) {
        for (var ic = 0u; ic < p.in_d; ic++) {
          let f = w[wi];
          acc0 += x[c0 + ic] * f;
          acc1 += x[c1 + ic] * f;
          acc2 += x[c2 + ic] * f;
          acc3 += x[c3 + ic] * f;
          wi += p.groups;
        }
      } else {
        for (var ic = 0u; ic < p.in_d; ic++) {
          let f = w[wi];
          acc0 += select(0.0, x[c0 + ic], v0) * f;
          acc1 += select(0.0, x[c1 + ic], v1) * f;
          acc2 += select(0.0, x[c2 + ic], v2) * f;
          acc3 += select(0.0, x[c3 + ic], v3) * f;
          wi += p.groups;
        }
      }
    }
  }
  let pixel = (b * p.out_h + oy) * p.out_w + ox0;
  store(pixel, g, acc0);
  if (last > 1) { store(pixel + 1u, g, acc1); }
  if (last > 2) { store(pixel + 2u, g, acc2); }
  if (last > 3) { store(pixel + 3u, g, acc3); }
}
`;

const DEPTHWISE_CODE = `struct Params {
  ${GEOMETRY_FIELDS}
  multiplier: u32, total: u32, lo: f32, hi: f32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
${CLAMP}
${FLAT_INDEX}
  if (i >= p.total) { return; }
  let oc = i % p.out_d;
  var t = i / p.out_d;
  let ox = t % p.out_w;
  t = t / p.out_w;
  let oy = t % p.out_h;
  let b = t / p.out_h;
  let ic = oc / p.multiplier;
  let iy0 = i32(oy) * p.stride_h - p.pad_top;
  let ix0 = i32(ox) * p.stride_w - p.pad_left;
  var acc = 0.0;
  for (var fy = 0; fy < p.f_h; fy++) {
    let iy = iy0 + fy * p.dil_h;
    if (iy < 0 || iy >= p.in_h) { continue; }
    let row = (b * u32(p.in_h) + u32(iy)) * u32(p.in_w);
    for (var fx = 0; fx < p.f_w; fx++) {
      let ix = ix0 + fx * p.dil_w;
      if (ix < 0 || ix >= p.in_w) { continue; }
      acc += x[(row + u32(ix)) * p.in_d + ic] * w[u32(fy * p.f_w + fx) * p.out_d + oc];
    }
  }
  y[i] = clamp_activation(acc + bias[oc], p.lo, p.hi);
}
`;

/**
 * The CONV_2D filter [outDepth, h, w, inDepth] as [h][w][inDepth][groups] vec4s of 4
 * output channels, and the bias as groups vec4s, both zero-padded.
 */
export function packConvFilter(
  filter: Float32Array,
  bias: Float32Array,
  shape: readonly number[],
): { filter: Float32Array; bias: Float32Array } {
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
  return { filter: packed, bias: paddedBias };
}

/** The decoded geometry of a call, with NNAPI's checks; NCHW is not taken here. */
function geometryOf(
  inputs: readonly PrepareInput[],
  outputs: readonly TensorInfo[],
  type: "CONV_2D" | "DEPTHWISE_CONV_2D",
) {
  const p = convolutionParams(inputs, (i) => constantScalar(inputs[i]), type);
  check(!p.nchw, "the gpu device takes NHWC tensors only");
  const g = convolutionGeometry(inputs[0].shape, inputs[1].shape, outputs[0].shape, p);
  const fields = [
    g.batches,
    g.inHeight,
    g.inWidth,
    g.inDepth,
    g.filterHeight,
    g.filterWidth,
    g.outHeight,
    g.outWidth,
    g.outDepth,
    g.strideHeight,
    g.strideWidth,
    g.dilationHeight,
    g.dilationWidth,
    g.padTop,
    g.padLeft,
  ];
  return { p, g, fields };
}

/** CONV_2D (constant filter and bias, NHWC). */
export function conv2dKernel(
  inputs: readonly PrepareInput[],
  outputs: readonly TensorInfo[],
): GpuCommand[] {
  const { p, g, fields } = geometryOf(inputs, outputs, "CONV_2D");
  const packed = packConvFilter(
    constantFloats(inputs[1]),
    constantFloats(inputs[2]),
    inputs[1].shape,
  );
  const groups = Math.ceil(g.outDepth / 4);
  const tiles = Math.ceil(g.outWidth / TILE_COLUMNS);
  const total = g.batches * g.outHeight * tiles * groups;
  return [{
    kind: "dispatch",
    code: CONV_CODE,
    params: paramBuffer([...fields, groups, tiles, total, ...activationFields(p.activation)]),
    reads: [{ input: 0 }, { data: packed.filter }, { data: packed.bias }],
    writes: [0],
    workgroups: workgroupsFor(total),
  }];
}

/** DEPTHWISE_CONV_2D (NHWC; filter and bias read as they are). */
export function depthwiseConv2dKernel(
  inputs: readonly PrepareInput[],
  outputs: readonly TensorInfo[],
): GpuCommand[] {
  const { p, fields } = geometryOf(inputs, outputs, "DEPTHWISE_CONV_2D");
  const total = elementCount(outputs[0].shape);
  return [{
    kind: "dispatch",
    code: DEPTHWISE_CODE,
    params: paramBuffer([
      ...fields,
      p.depthMultiplier,
      total,
      ...activationFields(p.activation),
    ]),
    reads: [{ input: 0 }, { input: 1 }, { input: 2 }],
    writes: [0],
    workgroups: workgroupsFor(total),
  }];
}
