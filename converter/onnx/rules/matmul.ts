/**
 * Gemm and MatMul with constant weights onto FULLY_CONNECTED (weights [units, inputSize],
 * the transposes and Gemm's alpha/beta folded into the constants); inputs of rank above 2
 * are flattened to rows and the result reshaped back (to extents computed at execution where
 * several are unknown).
 */
import { FUSED_NONE } from "../../../nnapi/types.ts";
import { transpose } from "../../../kernels/shape_transform.ts";
import { broadcastShape } from "../../../kernels/elementwise_binary.ts";
import type { BuiltOperand } from "../../graph_builder.ts";
import type { ConversionContext } from "../context.ts";
import type { Rule } from "../rule.ts";
import { checkNotStopped } from "../limits.ts";
import { type HostTensor, hostValues } from "../tensors.ts";
import { floatConstant, requireFloat, sameTypeAs } from "./common.ts";
import { runtimeMatMul } from "./matmul_runtime.ts";
import { runtimeShape } from "../runtime_extents.ts";

/** FULLY_CONNECTED of `input` rows [rows, k] with weights [n, k] and bias [n]. */
function fullyConnected(
  ctx: ConversionContext,
  name: string,
  input: BuiltOperand,
  x: string,
  weights: Float64Array,
  n: number,
  k: number,
  bias: Float64Array,
): BuiltOperand {
  const spec = sameTypeAs(ctx, x);
  return ctx.emitAs(name, "FULLY_CONNECTED", [
    input,
    floatConstant(ctx, spec, [n, k], weights),
    floatConstant(ctx, spec, [n], bias),
    ctx.builder.int32(FUSED_NONE),
  ], spec);
}

/** Gemm's C as a per-unit bias (shape [n], [1, n] or a scalar), or undefined. */
function biasOf(c: HostTensor | undefined, n: number, beta: number): Float64Array | undefined {
  const bias = new Float64Array(n);
  if (!c) return bias;
  const count = c.data.length;
  const perUnit = count === n && (c.dims.length === 1 || (c.dims.length === 2 && c.dims[0] === 1));
  if (!perUnit && count !== 1) return undefined;
  for (let i = 0; i < n; i++) bias[i] = beta * c.data[perUnit ? i : 0];
  return bias;
}

const gemm: Rule = {
  convert(node, ctx) {
    const [a, b, c] = node.inputs;
    requireFloat(ctx, a);
    if (node.int("transA", 0) !== 0) throw new Error("transA is not supported for a runtime A");
    const weights = ctx.requireConstant(b, "Gemm's B");
    if (weights.dims.length !== 2) throw new Error(`B has rank ${weights.dims.length}, expected 2`);
    const alpha = node.float("alpha", 1);
    const beta = node.float("beta", 1);
    const transB = node.int("transB", 0) === 1;
    const [n, k] = transB ? weights.dims : [weights.dims[1], weights.dims[0]];
    const w = new Float64Array(n * k);
    if (transB) w.set(weights.data);
    else transpose(weights.data, weights.dims, [1, 0], w);
    if (alpha !== 1) { for (let i = 0; i < w.length; i++) w[i] *= alpha; }
    const cConstant = c ? ctx.constant(c) : undefined;
    const bias = c && !cConstant ? undefined : biasOf(cConstant, n, beta);
    const out = node.outputs[0];
    if (bias) {
      fullyConnected(ctx, out, ctx.operand(a), a, w, n, k, bias);
      return;
    }
    // A C that is not a per-unit bias: add it (times beta) after the product.
    const product = fullyConnected(
      ctx,
      `${out}#product`,
      ctx.operand(a),
      a,
      w,
      n,
      k,
      new Float64Array(n),
    );
    let addend = ctx.operand(c);
    if (beta !== 1) {
      const betaTensor = ctx.builder.constant("TENSOR_FLOAT32", [1], new Float32Array([beta]));
      [addend] = ctx.emit("MUL", [addend, betaTensor, ctx.builder.int32(FUSED_NONE)], [
        sameTypeAs(ctx, a),
      ]);
    }
    ctx.emitAs(out, "ADD", [product, addend, ctx.builder.int32(FUSED_NONE)], sameTypeAs(ctx, a));
  },
};

const matMul: Rule = {
  fold: (_node, [a, b]) => [hostMatMul(a!, b!)],
  convert(node, ctx) {
    const [a, b] = node.inputs;
    requireFloat(ctx, a);
    const weights = ctx.constant(b);
    if (!weights) return runtimeMatMul(ctx, node.outputs[0], a, b);
    const { w, n, k } = transposedWeights(weights);
    matMulRows(ctx, {
      name: node.outputs[0],
      a,
      k,
      n,
      product: (rows, name) => fullyConnected(ctx, name, rows, a, w, n, k, new Float64Array(n)),
    });
  },
};

/** MatMul's constant right matrix [k, n] as FULLY_CONNECTED weights [n, k]. */
export function transposedWeights(weights: HostTensor): { w: Float64Array; n: number; k: number } {
  if (weights.dims.length !== 2) {
    throw new Error(`the weights have rank ${weights.dims.length}, expected 2`);
  }
  const [k, n] = weights.dims;
  const w = new Float64Array(n * k);
  transpose(weights.data, weights.dims, [1, 0], w);
  return { w, n, k };
}

/** A product of runtime rows by constant weights, as {@link matMulRows} appends it. */
export interface RowsProduct {
  /** The name the result gets. */
  name: string;
  /** The runtime left input [..., k]. */
  a: string;
  k: number;
  n: number;
  /** Appends the product of `rows` [r, k] giving [r, n], named `name`. */
  product: (rows: BuiltOperand, name: string) => BuiltOperand;
}

/**
 * Appends a MatMul of a runtime input by constant weights: an input of rank 2 goes to
 * `product` as it is; any other is flattened to rows [r, k] and the result [r, n] reshaped
 * back to [..., n].
 */
export function matMulRows(ctx: ConversionContext, call: RowsProduct): void {
  const { a, k, n } = call;
  const dims = ctx.dims(a);
  if (dims.length < 1) throw new Error("the first input is a scalar");
  if (dims.length === 2) {
    call.product(ctx.operand(a), call.name);
    return;
  }
  // [..., k] -> rows [r, k] -> [r, n] -> [..., n].
  const lead = dims.slice(0, -1);
  const rows = ctx.builder.constant("TENSOR_INT32", [2], new Int32Array([-1, k]));
  const [flat] = ctx.emit("RESHAPE", [ctx.operand(a), rows], [sameTypeAs(ctx, a)]);
  const rowsName = `${call.name}#rows`;
  const product = call.product(flat, rowsName);
  if (lead.filter((d) => d === 0).length > 1) {
    // The leading extents back, computed at execution from the input's.
    const input = ctx.operand(a).index;
    const dims = [...lead, n];
    const extents = dims.map((d, axis) =>
      d === 0 ? { factors: [{ operand: input, axis }], scale: 1 } : undefined
    );
    const shape = runtimeShape(ctx, dims, extents)!;
    ctx.emitAs(call.name, "RESHAPE", [product, shape], { ...sameTypeAs(ctx, rowsName), dims });
    return;
  }
  const target = [...lead.map((d) => d === 0 ? -1 : d), n];
  const shape = ctx.builder.constant("TENSOR_INT32", [target.length], new Int32Array(target));
  ctx.emitAs(call.name, "RESHAPE", [product, shape], sameTypeAs(ctx, rowsName));
}

/**
 * numpy's matmul on the host (constant folding): 1-D operands become a row or a column
 * (and that extent is dropped again), leading extents broadcast.
 */
function hostMatMul(a: HostTensor, b: HostTensor): HostTensor {
  const aDims = a.dims.length === 1 ? [1, a.dims[0]] : a.dims;
  const bDims = b.dims.length === 1 ? [b.dims[0], 1] : b.dims;
  const [m, k] = aDims.slice(-2);
  const [kb, n] = bDims.slice(-2);
  const batch = broadcastShape(aDims.slice(0, -2), bDims.slice(0, -2));
  if (aDims.length < 2 || bDims.length < 2 || k !== kb || !batch) {
    throw new Error(`cannot fold MatMul of [${a.dims}] and [${b.dims}]`);
  }
  const batches = batch.reduce((x, y) => x * y, 1);
  /** The flat index of batch `index` in an operand of leading extents `lead`. */
  const batchOffset = (lead: readonly number[], index: number) => {
    let offset = 0;
    let stride = 1;
    for (let d = batch.length - 1, rest = index; d >= 0; d--) {
      const extent = batch[d];
      const at = rest % extent;
      rest = Math.floor(rest / extent);
      const own = d - (batch.length - lead.length);
      if (own >= 0) {
        if (lead[own] !== 1) offset += at * stride;
        stride *= lead[own];
      }
    }
    return offset;
  };
  const data = hostValues(batches * m * n);
  for (let t = 0; t < batches; t++) {
    const aBase = batchOffset(aDims.slice(0, -2), t) * m * k;
    const bBase = batchOffset(bDims.slice(0, -2), t) * k * n;
    for (let i = 0; i < m; i++) {
      // A row is at most n x k multiply-adds (b's elements); a fold may have many rows.
      checkNotStopped();
      for (let j = 0; j < n; j++) {
        let sum = 0;
        for (let p = 0; p < k; p++) sum += a.data[aBase + i * k + p] * b.data[bBase + p * n + j];
        data[(t * m + i) * n + j] = sum;
      }
    }
  }
  const dims = [...batch, ...(a.dims.length === 1 ? [] : [m]), ...(b.dims.length === 1 ? [] : [n])];
  return { type: a.type, dims, data: a.type === "float32" ? Float32Array.from(data) : data };
}

export const MATMUL_RULES: Record<string, Rule> = { Gemm: gemm, MatMul: matMul };
