/**
 * The data-movement operations: CONCATENATION (one dispatch per input, each writing its
 * slab of every outer row of the output) and RESHAPE (a buffer copy: the bytes are the
 * same, only the shape changes).
 */
import { byteSize, elementCount, type TensorInfo } from "../../../../nnapi/tensor.ts";
import { check, type PrepareInput } from "../../../../operations/operation.ts";
import {
  constantScalar,
  FLAT_INDEX,
  type GpuCommand,
  paramBuffer,
  workgroupsFor,
} from "./common.ts";

const CONCAT_CODE = `struct Params { total: u32, slab: u32, row: u32, offset: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
${FLAT_INDEX}
  if (i >= p.total) { return; }
  y[(i / p.slab) * p.row + p.offset + i % p.slab] = x[i];
}
`;

/**
 * CONCATENATION along a constant axis: input k is `outer` slabs of axis_k x inner
 * elements, placed at offset (sum of the earlier axis extents) x inner of each output row.
 */
export function concatenationKernel(
  inputs: readonly PrepareInput[],
  outputs: readonly TensorInfo[],
): GpuCommand[] {
  const parts = inputs.slice(0, -1);
  const shape = outputs[0].shape;
  const axis = constantScalar(inputs[inputs.length - 1]);
  check(axis >= 0 && axis < shape.length, `axis ${axis} is outside [0, ${shape.length})`);
  const inner = elementCount(shape.slice(axis + 1));
  const row = shape[axis] * inner;
  const commands: GpuCommand[] = [];
  let offset = 0;
  parts.forEach((part, k) => {
    const slab = part.shape[axis] * inner;
    const total = elementCount(part.shape);
    if (total > 0) {
      commands.push({
        kind: "dispatch",
        code: CONCAT_CODE,
        params: paramBuffer([total, slab, row, offset]),
        reads: [{ input: k }],
        writes: [0],
        workgroups: workgroupsFor(total),
      });
    }
    offset += slab;
  });
  return commands;
}

/** RESHAPE: the input's bytes copied to the output buffer. */
export function reshapeKernel(
  inputs: readonly PrepareInput[],
  _outputs: readonly TensorInfo[],
): GpuCommand[] {
  return [{
    kind: "copy",
    input: 0,
    output: 0,
    bytes: byteSize(inputs[0].type, inputs[0].shape),
  }];
}
