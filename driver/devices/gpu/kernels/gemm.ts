/**
 * The gpu device's one matrix kernel: an implicit GEMM for CONV_2D and FULLY_CONNECTED
 * with constant weights (of `GEMM_MIN_ROWS` rows or more, `fully_connected.ts`). Rows are output pixels (M = batches x outHeight x outWidth),
 * columns output channels (N = outDepth), the reduction runs over K = filterHeight x
 * filterWidth x inDepth in (fy, fx, ic) order, which is the packed filter's order
 * ([h][w][inDepth][outDepth / 4] vec4s, `packConvFilter`). A dense layer is a 1x1 filter on
 * 1x1 images, one per batch.
 *
 * A workgroup computes a BM x BN block of the output. Per step of BK along K it gathers the
 * A tile (BM pixels x BK taps, im2col on the fly with padding, stride and dilation checks)
 * and the B tile (BK x BN weights) into workgroup memory, then every invocation multiplies
 * its TM pixels x 4 channels register tile from there: each loaded value feeds TM or 4
 * multiply-adds instead of one. The tile shape is chosen per call so that narrow layers
 * (MobileNetV2's 16, 24 and 32 channels) and dense layers of a few rows do not spend most
 * lanes on padding.
 */
import type { Conv2dGeometry } from "../../../../kernels/conv_common.ts";
import {
  type GpuDispatch,
  type KernelOptions,
  outputClamp,
  outputClampFields,
  paramBuffer,
  workgroupsFor,
} from "./common.ts";

/**
 * A workgroup's block: `bm` pixels x `bn` channels, `bk` taps per step; each invocation
 * computes `tm` pixels x 4 channels, so a workgroup has (bm / tm) x (bn / 4) invocations.
 */
export interface GemmTile {
  bm: number;
  bn: number;
  bk: number;
  tm: number;
}

/**
 * The tiles the kernel is built with: 256 invocations each (WebGPU's default limit), at
 * most 16384 bytes of workgroup memory (ditto). The wide-M tiles keep a 4 x 4 register
 * tile and trade pixels for channels; the last is for a few rows (a dense layer at small
 * batch), where a tall tile would multiply mostly padding.
 */
export const GEMM_TILES: readonly GemmTile[] = [
  { bm: 64, bn: 64, bk: 16, tm: 4 },
  { bm: 128, bn: 32, bk: 16, tm: 4 },
  { bm: 256, bn: 16, bk: 8, tm: 4 },
  { bm: 4, bn: 256, bk: 8, tm: 1 },
];

/** Invocations of a workgroup of `tile`. */
export function tileInvocations(tile: GemmTile): number {
  return (tile.bm / tile.tm) * (tile.bn / 4);
}

/** Bytes of workgroup memory of `tile` (float32 A and B tiles). */
export function tileWorkgroupBytes(tile: GemmTile): number {
  return 4 * tile.bk * (tile.bm + tile.bn);
}

/**
 * The tile for M rows and N columns: the least padded work, where a 1-pixel register tile
 * counts double (each loaded weight feeds one pixel, not four); ties go to the earlier tile.
 */
export function chooseGemmTile(rows: number, columns: number): GemmTile {
  const paddedColumns = Math.ceil(columns / 4) * 4;
  let best = GEMM_TILES[0];
  let bestCost = Infinity;
  for (const tile of GEMM_TILES) {
    const work = Math.ceil(rows / tile.bm) * tile.bm * Math.ceil(paddedColumns / tile.bn) *
      tile.bn;
    const cost = work * (tile.tm === 1 ? 2 : 1);
    if (cost < bestCost) {
      best = tile;
      bestCost = cost;
    }
  }
  return best;
}

/** Whether A is the input itself, row-major [M][K] (1x1 filter, stride 1, no padding). */
function isDense(g: Conv2dGeometry): boolean {
  return g.filterHeight === 1 && g.filterWidth === 1 && g.strideHeight === 1 &&
    g.strideWidth === 1 && g.padTop === 0 && g.padLeft === 0 &&
    g.outHeight === g.inHeight && g.outWidth === g.inWidth;
}

/**
 * WGSL of the A-tile gather. Invocation `l` loads tap `kk = l % BK` of the step for the
 * pixels `l / BK + j * (invocations / BK)`: its tap is decoded once per step, each pixel's
 * window origin once per dispatch.
 */
function gatherA(tile: GemmTile, dense: boolean): { setup: string; load: string } {
  const invocations = tileInvocations(tile);
  const pixelStride = invocations / tile.bk;
  const loads = Math.ceil(tile.bm / pixelStride);
  const setup: string[] = [
    `  let a_kk = l % ${tile.bk}u;`,
    `  let a_m = l / ${tile.bk}u;`,
  ];
  const load: string[] = [`    let k = k0 + a_kk;`, `    let k_ok = k < p.k;`];
  if (!dense) {
    load.push(
      `    let ic = k % p.in_d;`,
      `    let tap = k / p.in_d;`,
      `    let dy = i32(tap / p.f_w) * p.dil_h;`,
      `    let dx = i32(tap % p.f_w) * p.dil_w;`,
    );
  }
  for (let j = 0; j < loads; j++) {
    const local = `a_m + ${j * pixelStride}u`;
    const partial = (j + 1) * pixelStride > tile.bm;
    setup.push(`  let pm${j} = m0 + ${local};`);
    if (dense) {
      setup.push(`  let row${j} = pm${j} * p.k;`);
    } else {
      setup.push(
        `  let ox${j} = pm${j} % p.out_w;`,
        `  let oy${j} = (pm${j} / p.out_w) % p.out_h;`,
        `  let image${j} = i32(pm${j} / (p.out_w * p.out_h)) * p.in_h;`,
        `  let iy${j} = i32(oy${j}) * p.stride_h - p.pad_top;`,
        `  let ix${j} = i32(ox${j}) * p.stride_w - p.pad_left;`,
      );
    }
    const body: string[] = [`    var a${j} = 0.0;`];
    if (dense) {
      body.push(`    if (k_ok && pm${j} < p.m) { a${j} = x[row${j} + k]; }`);
    } else {
      body.push(
        `    let y${j} = iy${j} + dy;`,
        `    let x${j} = ix${j} + dx;`,
        `    if (k_ok && pm${j} < p.m && y${j} >= 0 && y${j} < p.in_h && x${j} >= 0 && ` +
          `x${j} < p.in_w) {`,
        `      a${j} = x[u32((image${j} + y${j}) * p.in_w + x${j}) * p.in_d + ic];`,
        `    }`,
      );
    }
    const store = `a_tile[a_kk * ${tile.bm}u + ${local}] = a${j};`;
    body.push(partial ? `    if (${local} < ${tile.bm}u) { ${store} }` : `    ${store}`);
    load.push(...body);
  }
  return { setup: setup.join("\n"), load: load.join("\n") };
}

/** WGSL of the kernel for one tile, input form, weight precision and output form. */
function gemmCode(tile: GemmTile, dense: boolean, vectorOut: boolean, options: KernelOptions) {
  const { bm, bn, bk, tm } = tile;
  const columns = bn / 4;
  const invocations = tileInvocations(tile);
  const weight = options.f16Weights ? "vec4<f16>" : "vec4<f32>";
  const gather = gatherA(tile, dense);
  const rows = Array.from({ length: tm }, (_, r) => r);
  const accumulate = rows.map((r) =>
    `      acc${r} += a_tile[kk * ${bm}u + tm * ${tm}u + ${r}u] * f;`
  );
  const store = rows.map((r) => {
    const value = `acc${r} + b`;
    const write = vectorOut ? `y[m * p.groups + c] = activate4(${value});` : `let v = ${value};
      for (var lane = 0u; lane < 4u; lane++) {
        if (c * 4u + lane < p.out_d) { y[m * p.out_d + c * 4u + lane] = activate(v[lane]); }
      }`;
    return `    { let m = m0 + tm * ${tm}u + ${r}u;
      if (m < p.m) { ${write} } }`;
  });
  return `${options.f16Weights ? "enable f16;\n" : ""}struct Params {
  in_h: i32, in_w: i32, in_d: u32, f_w: u32,
  out_h: u32, out_w: u32, stride_h: i32, stride_w: i32,
  dil_h: i32, dil_w: i32, pad_top: i32, pad_left: i32,
  m: u32, k: u32, out_d: u32, groups: u32,
  col_tiles: u32, tiles: u32, lo: f32, hi: f32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<${weight}>;
@group(0) @binding(3) var<storage, read> bias: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> y: array<${vectorOut ? "vec4<f32>" : "f32"}>;
var<workgroup> a_tile: array<f32, ${bm * bk}>;
var<workgroup> b_tile: array<vec4<f32>, ${bk * columns}>;
${outputClamp(options)}
@compute @workgroup_size(${invocations})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) l: u32) {
  let t = wid.x + wid.y * groups.x;
  if (t >= p.tiles) { return; }
  let c0 = (t % p.col_tiles) * ${columns}u;
  let m0 = (t / p.col_tiles) * ${bm}u;
  let tn = l % ${columns}u;
  let tm = l / ${columns}u;
${gather.setup}
${rows.map((r) => `  var acc${r} = vec4<f32>(0.0);`).join("\n")}
  for (var k0 = 0u; k0 < p.k; k0 += ${bk}u) {
${gather.load}
    for (var e = l; e < ${bk * columns}u; e += ${invocations}u) {
      let k = k0 + e / ${columns}u;
      let c = c0 + e % ${columns}u;
      var f = vec4<f32>(0.0);
      if (k < p.k && c < p.groups) { f = vec4<f32>(w[k * p.groups + c]); }
      b_tile[e] = f;
    }
    workgroupBarrier();
    for (var kk = 0u; kk < ${bk}u; kk++) {
      let f = b_tile[kk * ${columns}u + tn];
${accumulate.join("\n")}
    }
    workgroupBarrier();
  }
  let c = c0 + tn;
  if (c < p.groups) {
    let b = bias[c];
${store.join("\n")}
  }
}
`;
}

/**
 * The dispatch of a CONV_2D (or a dense layer as a 1x1 one) with weights packed by
 * `packConvFilter` (`weights` float16 when `options.f16Weights`), reading the step's input
 * 0 and writing its output 0. `activation` is the step's fused activation code.
 */
export function gemmDispatch(
  g: Conv2dGeometry,
  packed: { filter: Float32Array | Float16Array; bias: Float32Array },
  activation: number,
  options: KernelOptions,
): GpuDispatch {
  const rows = g.batches * g.outHeight * g.outWidth;
  const depth = g.filterHeight * g.filterWidth * g.inDepth;
  const groups = Math.ceil(g.outDepth / 4);
  const tile = chooseGemmTile(rows, g.outDepth);
  const columnTiles = Math.ceil(groups / (tile.bn / 4));
  const tiles = columnTiles * Math.ceil(rows / tile.bm);
  return {
    kind: "dispatch",
    code: gemmCode(tile, isDense(g), g.outDepth % 4 === 0, options),
    params: paramBuffer([
      g.inHeight,
      g.inWidth,
      g.inDepth,
      g.filterWidth,
      g.outHeight,
      g.outWidth,
      g.strideHeight,
      g.strideWidth,
      g.dilationHeight,
      g.dilationWidth,
      g.padTop,
      g.padLeft,
      rows,
      depth,
      g.outDepth,
      groups,
      columnTiles,
      tiles,
      ...outputClampFields(activation, options),
    ]),
    reads: [{ input: 0 }, { data: packed.filter }, { data: packed.bias }],
    writes: [0],
    workgroups: workgroupsFor(tiles, 1),
  };
}
