/**
 * Element-wise kernels: the one-input activations (RELU, RELU1, RELU6, LOGISTIC, TANH) and
 * the broadcasting binary operations (ADD, MUL) with their fused activation. One kernel
 * computes a chain of them per output element: a single step is a chain of one, and the
 * subgraph fuses consecutive steps whose intermediates nothing else reads into one
 * dispatch. A chain keeps each step's WGSL expression and float32 result, so fused and
 * unfused runs give the same bits; only the intermediate tensors' writes and reads go.
 * Operands of the output's shape are read at the element's own index, broadcast ones
 * through their strides.
 */
import { FLOAT32_MAX } from "../../../../kernels/activation_functions.ts";
import { elementCount, sameShape, type TensorInfo } from "../../../../nnapi/tensor.ts";
import type { OperationType } from "../../../../nnapi/types.ts";
import { checkFusedActivation } from "../../../../operations/common/scalars.ts";
import type { PrepareInput } from "../../../../operations/operation.ts";
import {
  activationFields,
  CLAMP,
  constantScalar,
  FLAT_INDEX,
  type GpuDispatch,
  type KernelBuilder,
  paramBuffer,
  type ParamField,
  RELU_CLAMP,
  workgroupsFor,
} from "./common.ts";

/** The one-input operations and their WGSL expression of `v` (bounds `lo`, `hi`). */
const UNARY_EXPRESSIONS = {
  // NNAPI's reluFloat: min(max(lo, x), hi) with std::max/min, so NaN becomes lo.
  RELU: "relu_clamp(v, lo, hi)",
  RELU1: "relu_clamp(v, lo, hi)",
  RELU6: "relu_clamp(v, lo, hi)",
  LOGISTIC: "1.0 / (1.0 + exp(-v))",
  // tanh from exp(-2|x|): no overflow to NaN for large |x|, as a GPU's own tanh may have.
  TANH: "tanh_stable(v)",
} as const;

/** The unary operations the gpu device runs. */
export type UnaryType = keyof typeof UNARY_EXPRESSIONS;

/** The clamp bounds of the RELU family (unused by LOGISTIC and TANH). */
export const UNARY_BOUNDS: Record<UnaryType, readonly [number, number]> = {
  RELU: [0, FLOAT32_MAX],
  RELU1: [-1, 1],
  RELU6: [0, 6],
  LOGISTIC: [0, 0],
  TANH: [0, 0],
};

/** The binary operations the gpu device runs. */
export type BinaryType = "ADD" | "MUL";

/** The operations a chain can hold. */
export type ElementwiseType = UnaryType | BinaryType;

/** Whether an operation type is one of the element-wise kernels' (a chain can hold it). */
export function isElementwise(type: OperationType): type is ElementwiseType {
  return type in UNARY_EXPRESSIONS || type === "ADD" || type === "MUL";
}

/** Whether a chain takes the RELU family's folded clamp (RELU, RELU1, RELU6). */
export function isReluType(type: OperationType): type is "RELU" | "RELU1" | "RELU6" {
  return type === "RELU" || type === "RELU1" || type === "RELU6";
}

/** One step of a chain as the kernel computes it. */
export interface ElementwiseLink {
  type: ElementwiseType;
  /**
   * Its tensor inputs in order (one, or two for ADD and MUL): a position among the chain's
   * reads, or "previous" for the result of the link before.
   */
  operands: readonly (number | "previous")[];
  /** The clamp of its result: the fused activation's range, or a RELU's bounds. */
  bounds: readonly [ParamField, ParamField];
}

/**
 * The link of a step with `inputs`, whose tensor inputs are `operands` (see
 * {@link ElementwiseLink}); checks a binary step's fused activation code.
 */
export function elementwiseLink(
  type: ElementwiseType,
  inputs: readonly PrepareInput[],
  operands: readonly (number | "previous")[],
): ElementwiseLink {
  if (type === "ADD" || type === "MUL") {
    const code = constantScalar(inputs[2]);
    checkFusedActivation(code, "input 2");
    return { type, operands: operands.slice(0, 2), bounds: activationFields(code) };
  }
  const [lo, hi] = UNARY_BOUNDS[type];
  return { type, operands: operands.slice(0, 1), bounds: [{ f32: lo }, { f32: hi }] };
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

/** WGSL of one link's result from its operands' expressions. */
function linkExpression(link: ElementwiseLink, n: number, operands: string[]): string {
  if (link.type === "ADD" || link.type === "MUL") {
    const op = link.type === "ADD" ? "+" : "*";
    return `clamp_activation(${operands[0]} ${op} ${operands[1]}, p.lo${n}, p.hi${n})`;
  }
  return `${link.type.toLowerCase()}_op(${operands[0]}, p.lo${n}, p.hi${n})`;
}

/**
 * The dispatch computing `links` per element of an output of `outShape`, with the chain's
 * reads (tensors of `readShapes`) bound in order from the step's inputs 0.., writing its
 * output 0.
 */
export function elementwiseChainDispatch(
  links: readonly ElementwiseLink[],
  readShapes: readonly (readonly number[])[],
  outShape: readonly number[],
): GpuDispatch {
  const total = elementCount(outShape);
  const broadcast = readShapes.map((shape) => !sameShape(shape, outShape));
  const dims = toRank4(outShape);
  const fields: ParamField[] = [total, dims[1], dims[2], dims[3]];
  const declarations = ["total: u32, d1: u32, d2: u32, d3: u32,"];
  const index = readShapes.map((shape, k) => {
    if (!broadcast[k]) return "i";
    fields.push(...broadcastStrides4(shape));
    declarations.push(`s${k}_0: u32, s${k}_1: u32, s${k}_2: u32, s${k}_3: u32,`);
    return `c0 * p.s${k}_0 + c1 * p.s${k}_1 + c2 * p.s${k}_2 + c3 * p.s${k}_3`;
  });
  links.forEach((link, n) => {
    fields.push(...link.bounds);
    declarations.push(`lo${n}: f32, hi${n}: f32,`);
  });
  const body = links.map((link, n) => {
    const operands = link.operands.map((o) =>
      o === "previous" ? `r${n - 1}` : `x${o}[${index[o]}]`
    );
    return `  let r${n} = ${linkExpression(link, n, operands)};`;
  });
  const coordinates = broadcast.some(Boolean)
    ? `  let c3 = i % p.d3;
  let t2 = i / p.d3;
  let c2 = t2 % p.d2;
  let t1 = t2 / p.d2;
  let c1 = t1 % p.d1;
  let c0 = t1 / p.d1;
`
    : "";
  const bindings = readShapes.map((_, k) =>
    `@group(0) @binding(${1 + k}) var<storage, read> x${k}: array<f32>;`
  );
  const code = `struct Params {
  ${declarations.join("\n  ")}
}
@group(0) @binding(0) var<uniform> p: Params;
${bindings.join("\n")}
@group(0) @binding(${1 + readShapes.length}) var<storage, read_write> y: array<f32>;
${CLAMP}
${RELU_CLAMP}
${unaryFunctions(links)}
${FLAT_INDEX}
  if (i >= p.total) { return; }
${coordinates}${body.join("\n")}
  y[i] = r${links.length - 1};
}
`;
  return {
    kind: "dispatch",
    code,
    params: paramBuffer(fields),
    reads: readShapes.map((_, k) => ({ input: k })),
    writes: [0],
    workgroups: workgroupsFor(total),
  };
}

/** WGSL functions of the unary operations a chain uses: `relu_op`, `tanh_op`, ... */
function unaryFunctions(links: readonly ElementwiseLink[]): string {
  const types = new Set(links.map((link) => link.type));
  const functions: string[] = [];
  for (const type of Object.keys(UNARY_EXPRESSIONS) as UnaryType[]) {
    if (!types.has(type)) continue;
    functions.push(`fn ${type.toLowerCase()}_op(v: f32, lo: f32, hi: f32) -> f32 {
  return ${UNARY_EXPRESSIONS[type]};
}`);
  }
  if (types.has("TANH")) {
    functions.push(`fn tanh_stable(x: f32) -> f32 {
  let e = exp(-2.0 * abs(x));
  return sign(x) * (1.0 - e) / (1.0 + e);
}`);
  }
  return functions.join("\n");
}

/** The builder of a one-input element-wise operation (a chain of one). */
export function unaryKernel(type: UnaryType): KernelBuilder {
  return (inputs, outputs) => [
    elementwiseChainDispatch(
      [elementwiseLink(type, inputs, [0])],
      [inputs[0].shape],
      outputs[0].shape,
    ),
  ];
}

/** The builder of ADD or MUL (NNAPI broadcasting from the trailing dimensions). */
export function binaryKernel(type: BinaryType): KernelBuilder {
  return (inputs, outputs: readonly TensorInfo[]) => [
    elementwiseChainDispatch(
      [elementwiseLink(type, inputs, [0, 1])],
      [inputs[0].shape, inputs[1].shape],
      outputs[0].shape,
    ),
  ];
}
