/**
 * AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D on NHWC float32 tensors: one invocation per
 * output element over its window clipped to the input (padding never counts, as in the
 * reference). The pooling module keeps its parameter decoder private, so the operand
 * positions are read here (7 inputs: implicit padding; 10: explicit; 8/11 add the HAL 1.2
 * layout flag) and everything else goes through the shared padding helpers.
 */
import { elementCount, type TensorInfo } from "../../../../nnapi/tensor.ts";
import { poolParams } from "../../../../operations/common/pooling.ts";
import { check, type PrepareInput } from "../../../../operations/operation.ts";
import {
  activationFields,
  CLAMP,
  constantScalar,
  FLAT_INDEX,
  type GpuCommand,
  type KernelBuilder,
  NEGATIVE_INFINITY,
  nhwcOutputIndex,
  paramBuffer,
  workgroupsFor,
} from "./common.ts";

/** The pooling operations the gpu device runs. */
export type PoolType = "AVERAGE_POOL_2D" | "MAX_POOL_2D" | "L2_POOL_2D";

/** Per pooling type: the initial value, the accumulation of `v`, the final value of `acc`. */
const REDUCTIONS: Record<PoolType, { init: string; step: string; result: string }> = {
  AVERAGE_POOL_2D: { init: "0.0", step: "acc + v", result: "acc / f32(count)" },
  MAX_POOL_2D: {
    init: "negative_infinity()",
    step: "select(acc, v, v > acc)",
    result: "acc",
  },
  L2_POOL_2D: { init: "0.0", step: "acc + v * v", result: "sqrt(acc / f32(count))" },
};

function poolCode(type: PoolType): string {
  const r = REDUCTIONS[type];
  return `struct Params {
  in_h: i32, in_w: i32, depth: u32, out_h: u32, out_w: u32,
  f_h: i32, f_w: i32, stride_h: i32, stride_w: i32, pad_top: i32, pad_left: i32,
  total: u32, lo: f32, hi: f32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
${CLAMP}
${NEGATIVE_INFINITY}
${FLAT_INDEX}
  if (i >= p.total) { return; }
${nhwcOutputIndex("c", "depth")}
  let iy0 = i32(oy) * p.stride_h - p.pad_top;
  let ix0 = i32(ox) * p.stride_w - p.pad_left;
  let y0 = max(iy0, 0);
  let y1 = min(iy0 + p.f_h, p.in_h);
  let x0 = max(ix0, 0);
  let x1 = min(ix0 + p.f_w, p.in_w);
  let count = max(y1 - y0, 0) * max(x1 - x0, 0);
  var acc = ${r.init};
  for (var iy = y0; iy < y1; iy++) {
    let row = (b * u32(p.in_h) + u32(iy)) * u32(p.in_w);
    for (var ix = x0; ix < x1; ix++) {
      let v = x[(row + u32(ix)) * p.depth + c];
      acc = ${r.step};
    }
  }
  y[i] = clamp_activation(${r.result}, p.lo, p.hi);
}
`;
}

/** The resolved window of a HAL 1.0 pooling call (or 1.2 with the NHWC flag). */
function poolWindow(inputs: readonly PrepareInput[]) {
  const count = inputs.length;
  check([7, 8, 10, 11].includes(count), `expected 7, 8, 10 or 11 inputs, got ${count}`);
  const p = poolParams(count, (i) => constantScalar(inputs[i]), inputs[0].shape);
  check(!p.nchw, "NCHW is not taken here");
  return p;
}

/** The builder of a pooling operation. */
export function poolKernel(type: PoolType): KernelBuilder {
  const code = poolCode(type);
  return (inputs: readonly PrepareInput[], outputs: readonly TensorInfo[]): GpuCommand[] => {
    const w = poolWindow(inputs);
    const [, inHeight, inWidth, depth] = inputs[0].shape;
    const [, outHeight, outWidth] = outputs[0].shape;
    const total = elementCount(outputs[0].shape);
    return [{
      kind: "dispatch",
      code,
      params: paramBuffer([
        inHeight,
        inWidth,
        depth,
        outHeight,
        outWidth,
        w.filterHeight,
        w.filterWidth,
        w.strideHeight,
        w.strideWidth,
        w.padding.top,
        w.padding.left,
        total,
        ...activationFields(w.activation),
      ]),
      reads: [{ input: 0 }],
      writes: [0],
      workgroups: workgroupsFor(total),
    }];
  };
}
