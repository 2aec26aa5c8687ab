/**
 * SOFTMAX on float32: exp(beta * (x - max)) / sum along the last axis (or HAL 1.2's axis
 * input), one invocation per vector, in three passes over it (max, sum, normalize), as the
 * reference does. Vectors of classifier outputs are short enough that a single invocation
 * per vector costs microseconds.
 */
import { splitAtAxis } from "../../../../kernels/axis_split.ts";
import type { TensorInfo } from "../../../../nnapi/tensor.ts";
import { resolveAxis } from "../../../../operations/common/axis.ts";
import { check, type PrepareInput } from "../../../../operations/operation.ts";
import {
  constantScalar,
  FLAT_INDEX,
  type GpuCommand,
  NEGATIVE_INFINITY,
  paramBuffer,
  workgroupsFor,
} from "./common.ts";

const CODE = `struct Params { axis: u32, inner: u32, vectors: u32, beta: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
${NEGATIVE_INFINITY}
${FLAT_INDEX}
  if (i >= p.vectors) { return; }
  let start = (i / p.inner) * p.axis * p.inner + i % p.inner;
  let end = start + p.axis * p.inner;
  var top = negative_infinity();
  for (var k = start; k < end; k += p.inner) { top = select(top, x[k], x[k] > top); }
  var sum = 0.0;
  for (var k = start; k < end; k += p.inner) {
    let e = exp((x[k] - top) * p.beta);
    y[k] = e;
    sum += e;
  }
  for (var k = start; k < end; k += p.inner) { y[k] = y[k] / sum; }
}
`;

/** SOFTMAX (beta > 0; the axis input, when present, must be a constant). */
export function softmaxKernel(
  inputs: readonly PrepareInput[],
  _outputs: readonly TensorInfo[],
): GpuCommand[] {
  const shape = inputs[0].shape;
  const beta = constantScalar(inputs[1]);
  check(beta > 0, `input 1 is beta ${beta}, expected > 0`);
  const axis = resolveAxis(
    inputs.length === 3 ? constantScalar(inputs[2]) : -1,
    shape.length,
    "input 2",
  );
  const split = splitAtAxis(shape, axis);
  const vectors = split.outer * split.inner;
  return [{
    kind: "dispatch",
    code: CODE,
    params: paramBuffer([split.axis, split.inner, vectors, { f32: beta }]),
    reads: [{ input: 0 }],
    writes: [0],
    workgroups: workgroupsFor(vectors),
  }];
}
