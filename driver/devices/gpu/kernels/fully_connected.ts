/**
 * FULLY_CONNECTED on float32: the input read as [batches, inputSize] (inputSize = the
 * weights' second extent), output = activation(input x weights^T + bias). One invocation
 * per output element, a dot product along a weights row; the weights and bias are bound as
 * they are, so they may be constants or computed tensors alike.
 */
import type { TensorInfo } from "../../../../nnapi/tensor.ts";
import { checkFusedActivation } from "../../../../operations/common/scalars.ts";
import type { PrepareInput } from "../../../../operations/operation.ts";
import {
  activationFields,
  CLAMP,
  constantScalar,
  FLAT_INDEX,
  type GpuCommand,
  paramBuffer,
  workgroupsFor,
} from "./common.ts";

const CODE = `struct Params { units: u32, depth: u32, total: u32, lo: f32, hi: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
${CLAMP}
${FLAT_INDEX}
  if (i >= p.total) { return; }
  let unit = i % p.units;
  let xi = (i / p.units) * p.depth;
  let wi = unit * p.depth;
  var acc = 0.0;
  for (var k = 0u; k < p.depth; k++) { acc += x[xi + k] * w[wi + k]; }
  y[i] = clamp_activation(acc + bias[unit], p.lo, p.hi);
}
`;

/** FULLY_CONNECTED; the output shape [batches, units] comes from the operation's prepare. */
export function fullyConnectedKernel(
  inputs: readonly PrepareInput[],
  outputs: readonly TensorInfo[],
): GpuCommand[] {
  const [units, depth] = inputs[1].shape;
  const activation = constantScalar(inputs[3]);
  checkFusedActivation(activation, "input 3 (activation)");
  const total = outputs[0].shape[0] * units;
  return [{
    kind: "dispatch",
    code: CODE,
    params: paramBuffer([units, depth, total, ...activationFields(activation)]),
    reads: [{ input: 0 }, { input: 1 }, { input: 2 }],
    writes: [0],
    workgroups: workgroupsFor(total),
  }];
}
