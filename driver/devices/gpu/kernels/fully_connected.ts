/**
 * FULLY_CONNECTED on float32: the input read as [batches, inputSize] (inputSize = the
 * weights' second extent, batches = the input's elements / inputSize), output =
 * activation(input x weights^T + bias). With constant weights and bias and at least
 * {@link GEMM_MIN_ROWS} rows it is the implicit GEMM of `gemm.ts`: weights [units][depth]
 * are a filter [units][1][1][depth], each batch a 1x1 image. Otherwise (weights computed at
 * execution, bound as they are, or a few rows) one invocation per output element takes a
 * dot product along a weights row.
 */
import { elementCount, type TensorData, type TensorInfo } from "../../../../nnapi/tensor.ts";
import { checkFusedActivation } from "../../../../operations/common/scalars.ts";
import type { PrepareInput } from "../../../../operations/operation.ts";
import {
  constantFloats,
  constantScalar,
  FLAT_INDEX,
  type GpuCommand,
  type KernelOptions,
  outputClamp,
  outputClampFields,
  paramBuffer,
  workgroupsFor,
} from "./common.ts";
import { packConvFilter } from "./convolution.ts";
import { gemmDispatch } from "./gemm.ts";

function dotCode(options: KernelOptions): string {
  return `struct Params { units: u32, depth: u32, total: u32, lo: f32, hi: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
${outputClamp(options)}
${FLAT_INDEX}
  if (i >= p.total) { return; }
  let unit = i % p.units;
  let xi = (i / p.units) * p.depth;
  let wi = unit * p.depth;
  var acc = 0.0;
  for (var k = 0u; k < p.depth; k++) { acc += x[xi + k] * w[wi + k]; }
  y[i] = activate(acc + bias[unit]);
}
`;
}

/**
 * Rows from which a dense layer with constant weights runs on the GEMM. Fewer rows make a
 * matrix-vector product, whose GEMM tiles stay mostly empty and too few to fill a GPU: the
 * dot kernel's invocation per output keeps them all busy (on llvmpipe, 1 x 1280 -> 1000 ran
 * at 1.59 GMAC/s on the dot kernel against 0.24 on the GEMM).
 */
export const GEMM_MIN_ROWS = 16;

function isConstant(value: TensorData | null | undefined): value is Float32Array {
  return value instanceof Float32Array;
}

/** The fused activation code of a FULLY_CONNECTED call. */
export function fullyConnectedActivation(inputs: readonly PrepareInput[]): number {
  return constantScalar(inputs[3]);
}

/** FULLY_CONNECTED: batches x units outputs, batches = the input's elements / depth. */
export function fullyConnectedKernel(
  inputs: readonly PrepareInput[],
  _outputs: readonly TensorInfo[],
  options: KernelOptions,
): GpuCommand[] {
  const [units, depth] = inputs[1].shape;
  const activation = fullyConnectedActivation(inputs);
  checkFusedActivation(activation, "input 3 (activation)");
  const batches = elementCount(inputs[0].shape) / depth;
  if (batches >= GEMM_MIN_ROWS && isConstant(inputs[1].value) && isConstant(inputs[2].value)) {
    const packed = packConvFilter(
      constantFloats(inputs[1]),
      constantFloats(inputs[2]),
      [units, 1, 1, depth],
      options.f16Weights,
    );
    const geometry = {
      batches,
      inHeight: 1,
      inWidth: 1,
      inDepth: depth,
      filterHeight: 1,
      filterWidth: 1,
      outHeight: 1,
      outWidth: 1,
      outDepth: units,
      strideHeight: 1,
      strideWidth: 1,
      dilationHeight: 1,
      dilationWidth: 1,
      padTop: 0,
      padLeft: 0,
    };
    return [gemmDispatch(geometry, packed, activation, options)];
  }
  const total = batches * units;
  return [{
    kind: "dispatch",
    code: dotCode(options),
    params: paramBuffer([units, depth, total, ...outputClampFields(activation, options)]),
    reads: [{ input: 0 }, { input: 1 }, { input: 2 }],
    writes: [0],
    workgroups: workgroupsFor(total),
  }];
}
