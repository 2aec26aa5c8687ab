/**
 * Element-wise kernels: the one-input activations (RELU, RELU1, RELU6, LOGISTIC, TANH) and
 * the broadcasting binary operations (ADD, MUL) with their fused activation. One invocation
 * per output element; a binary operation on equal shapes skips the broadcast index math.
 */
import { FLOAT32_MAX } from "../../../../kernels/activation_functions.ts";
import { elementCount, sameShape, type TensorInfo } from "../../../../nnapi/tensor.ts";
import { checkFusedActivation } from "../../../../operations/common/scalars.ts";
import type { PrepareInput } from "../../../../operations/operation.ts";
import {
  activationFields,
  CLAMP,
  constantScalar,
  FLAT_INDEX,
  type GpuCommand,
  type KernelBuilder,
  paramBuffer,
  workgroupsFor,
} from "./common.ts";

/** The one-input operations and their WGSL expression of `v` (bounds `p.lo`, `p.hi`). */
const UNARY_EXPRESSIONS = {
  // NNAPI's reluFloat: min(max(lo, x), hi) with std::max/min, so NaN becomes lo.
  RELU: "relu_clamp(v)",
  RELU1: "relu_clamp(v)",
  RELU6: "relu_clamp(v)",
  LOGISTIC: "1.0 / (1.0 + exp(-v))",
  // tanh from exp(-2|x|): no overflow to NaN for large |x|, as a GPU's own tanh may have.
  TANH: "tanh_stable(v)",
} as const;

/** The unary operations the gpu device runs. */
export type UnaryType = keyof typeof UNARY_EXPRESSIONS;

const UNARY_BOUNDS: Record<UnaryType, [number, number]> = {
  RELU: [0, FLOAT32_MAX],
  RELU1: [-1, 1],
  RELU6: [0, 6],
  LOGISTIC: [0, 0],
  TANH: [0, 0],
};

function unaryCode(type: UnaryType): string {
  return `struct Params { total: u32, lo: f32, hi: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
fn relu_clamp(x: f32) -> f32 {
  let v = select(p.lo, x, p.lo < x);
  return select(v, p.hi, p.hi < v);
}
fn tanh_stable(x: f32) -> f32 {
  let e = exp(-2.0 * abs(x));
  return sign(x) * (1.0 - e) / (1.0 + e);
}
${FLAT_INDEX}
  if (i >= p.total) { return; }
  let v = x[i];
  y[i] = ${UNARY_EXPRESSIONS[type]};
}
`;
}

/** The builder of a one-input element-wise operation. */
export function unaryKernel(type: UnaryType): KernelBuilder {
  const code = unaryCode(type);
  const [lo, hi] = UNARY_BOUNDS[type];
  return (_inputs, outputs) => {
    const total = elementCount(outputs[0].shape);
    return [{
      kind: "dispatch",
      code,
      params: paramBuffer([total, { f32: lo }, { f32: hi }]),
      reads: [{ input: 0 }],
      writes: [0],
      workgroups: workgroupsFor(total),
    }];
  };
}

/** The binary operations the gpu device runs. */
export type BinaryType = "ADD" | "MUL";

function binaryCode(type: BinaryType, broadcast: boolean): string {
  const op = type === "ADD" ? "+" : "*";
  const index = broadcast
    ? `  let c3 = i % p.d3;
  let t2 = i / p.d3;
  let c2 = t2 % p.d2;
  let t1 = t2 / p.d2;
  let c1 = t1 % p.d1;
  let c0 = t1 / p.d1;
  let ia = c0 * p.a0 + c1 * p.a1 + c2 * p.a2 + c3 * p.a3;
  let ib = c0 * p.b0 + c1 * p.b1 + c2 * p.b2 + c3 * p.b3;`
    : "  let ia = i;\n  let ib = i;";
  return `struct Params {
  total: u32, d1: u32, d2: u32, d3: u32,
  a0: u32, a1: u32, a2: u32, a3: u32,
  b0: u32, b1: u32, b2: u32, b3: u32,
  lo: f32, hi: f32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
${CLAMP}
${FLAT_INDEX}
  if (i >= p.total) { return; }
${index}
  y[i] = clamp_activation(a[ia] ${op} b[ib], p.lo, p.hi);
}
`;
}

/** A shape right-aligned to rank 4 (leading extents 1), as broadcasting aligns them. */
function toRank4(shape: readonly number[]): number[] {
  return [...Array<number>(4 - shape.length).fill(1), ...shape];
}

/** Element strides of a shape broadcast to a rank-4 output: 0 along broadcast extents. */
function broadcastStrides4(shape: readonly number[]): number[] {
  const dims = toRank4(shape);
  const strides = [0, 0, 0, 0];
  let stride = 1;
  for (let d = 3; d >= 0; d--) {
    strides[d] = dims[d] === 1 ? 0 : stride;
    stride *= dims[d];
  }
  return strides;
}

/** The builder of ADD or MUL (NNAPI broadcasting from the trailing dimensions). */
export function binaryKernel(type: BinaryType): KernelBuilder {
  return (inputs: readonly PrepareInput[], outputs: readonly TensorInfo[]): GpuCommand[] => {
    const [a, b, activation] = inputs;
    const code = constantScalar(activation);
    checkFusedActivation(code, "input 2");
    const outShape = outputs[0].shape;
    const total = elementCount(outShape);
    const broadcast = !sameShape(a.shape, outShape) || !sameShape(b.shape, outShape);
    const dims = toRank4(outShape);
    return [{
      kind: "dispatch",
      code: binaryCode(type, broadcast),
      params: paramBuffer([
        total,
        dims[1],
        dims[2],
        dims[3],
        ...broadcastStrides4(a.shape),
        ...broadcastStrides4(b.shape),
        ...activationFields(code),
      ]),
      reads: [{ input: 0 }, { input: 1 }],
      writes: [0],
      workgroups: workgroupsFor(total),
    }];
  };
}
