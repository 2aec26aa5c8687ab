/**
 * MatMul of two runtime tensors [..., m, k] x [..., k, n] (attention's Q.K^T and P.V).
 * NNAPI 1.3 has no batched matrix product, so each leading index becomes FULLY_CONNECTED,
 * which flattens its input to rows of the weights' width: with n known, the rows of a times
 * the transposed b as weights; with only m known, the transposed product (b^T a^T, a as the
 * weights) turned back. Extents known only at execution (a text line's width) may so be m
 * and k, or n and k; when m and n both are, k must be known and the product is a sum of k
 * broadcast outer products of a's columns and b's rows (one MUL and ADD each). Leading
 * extents known only at execution take BATCH_MATMUL (NNAPI feature level 6) instead.
 */
import { FUSED_NONE } from "../../../nnapi/types.ts";
import type { BuiltOperand } from "../../graph_builder.ts";
import type { ConversionContext, OutputSpec } from "../context.ts";
import { floatConstant, sameTypeAs } from "./common.ts";

/** The widest k the outer-product sum takes (it emits four operations per step). */
const MAX_OUTER_PRODUCT_STEPS = 64;

/** Converts `name = MatMul(a, b)` for runtime `a` and `b` of equal leading extents. */
export function runtimeMatMul(ctx: ConversionContext, name: string, a: string, b: string): void {
  const [aDims, bDims] = [ctx.dims(a), ctx.dims(b)];
  const rank = aDims.length;
  if (rank < 2 || rank !== bDims.length) {
    throw new Error(
      `MatMul of runtime tensors of ranks ${rank} and ${bDims.length} is not supported`,
    );
  }
  const lead = aDims.slice(0, -2);
  if (lead.includes(0) && rank <= 4 && lead.every((d, i) => d === bDims[i])) {
    // Leading extents given at execution: one batched product.
    ctx.emitAs(name, "BATCH_MATMUL", [ctx.operand(a), ctx.operand(b)], sameTypeAs(ctx, a));
    return;
  }
  if (lead.some((d, i) => d === 0 || d !== bDims[i])) {
    throw new Error("MatMul of runtime tensors needs equal leading extents known at conversion");
  }
  const [m, ka] = aDims.slice(-2);
  const [kb, n] = bDims.slice(-2);
  if (ka !== 0 && kb !== 0 && ka !== kb) {
    throw new Error(`inner extents of [${aDims}] x [${bDims}] do not match`);
  }
  const k = ka || kb;
  const ops = new Emitter(ctx, sameTypeAs(ctx, a));
  const [left, right] = [ctx.operand(a), ctx.operand(b)];
  if (n !== 0 || m !== 0) {
    const rights = ops.splitLead(right, lead);
    const products = ops.splitLead(left, lead).map((ai, i) => {
      const bi = ops.transposeLast(rights[i], rank);
      return n !== 0 ? ops.product(ai, bi, n, k) : ops.transposeLast(ops.product(bi, ai, m, k), 2);
    });
    const stacked = products.map((p) => ops.reshape(p, [1, m || -1, n || -1]));
    const joined = stacked.length === 1 ? stacked[0] : ops.emit("CONCATENATION", [
      ...stacked,
      ctx.builder.int32(0),
    ]);
    ctx.emitAs(name, "RESHAPE", [joined, ops.ints([...lead, m || -1, n || -1])], ops.spec);
    return;
  }
  if (k === 0 || k > MAX_OUTER_PRODUCT_STEPS || rank > 4) {
    throw new Error(
      `MatMul of [${aDims}] x [${bDims}]: with both outer extents known only at execution, ` +
        `the inner one must be known (at most ${MAX_OUTER_PRODUCT_STEPS}) and the rank at most 4`,
    );
  }
  const none = ctx.builder.int32(FUSED_NONE);
  const term = (t: number) =>
    ops.emit("MUL", [ops.slice(left, rank - 1, t), ops.slice(right, rank - 2, t), none]);
  let sum = term(0);
  for (let t = 1; t < k; t++) sum = ops.emit("ADD", [sum, term(t), none]);
  ctx.setOperand(name, sum, ops.spec.elementType);
}

/** Emits the operations of one product, all of its element type. */
class Emitter {
  constructor(readonly ctx: ConversionContext, readonly spec: OutputSpec) {}

  emit(type: Parameters<ConversionContext["emit"]>[0], inputs: BuiltOperand[]): BuiltOperand {
    return this.ctx.emit(type, inputs, [this.spec])[0];
  }

  ints(values: number[]): BuiltOperand {
    return this.ctx.builder.constant("TENSOR_INT32", [values.length], new Int32Array(values));
  }

  reshape(t: BuiltOperand, dims: number[]): BuiltOperand {
    return this.emit("RESHAPE", [t, this.ints(dims)]);
  }

  /**
   * `rows` [..., r, k] (flattened to [r, k]) times `weights`^T, weights [1.., units, k] taken
   * as [units, k]: FULLY_CONNECTED with a zero bias, giving [r, units].
   */
  product(rows: BuiltOperand, weights: BuiltOperand, units: number, k: number): BuiltOperand {
    const matrix = this.reshape(weights, [units, k || -1]);
    const zeros = floatConstant(this.ctx, this.spec, [units], new Float64Array(units));
    return this.emit("FULLY_CONNECTED", [rows, matrix, zeros, this.ctx.builder.int32(FUSED_NONE)]);
  }

  /** The last two axes of a rank-`rank` operand swapped. */
  transposeLast(t: BuiltOperand, rank: number): BuiltOperand {
    const perm = Array.from({ length: rank }, (_, i) => i);
    [perm[rank - 2], perm[rank - 1]] = [perm[rank - 1], perm[rank - 2]];
    return this.emit("TRANSPOSE", [t, this.ints(perm)]);
  }

  /** One operand per leading index (row-major), each keeping unit leading axes. */
  splitLead(t: BuiltOperand, lead: readonly number[]): BuiltOperand[] {
    const { builder } = this.ctx;
    return lead.reduce(
      (parts, extent, axis) =>
        extent === 1 ? parts : parts.flatMap((part) =>
          this.ctx.emit(
            "SPLIT",
            [part, builder.int32(axis), builder.int32(extent)],
            new Array(extent).fill(this.spec),
          )
        ),
      [t],
    );
  }

  /** Index `index` of axis `axis`, kept as an axis of extent 1. */
  slice(t: BuiltOperand, axis: number, index: number): BuiltOperand {
    const rank = t.dimensions.length;
    const begin = Array.from({ length: rank }, (_, i) => i === axis ? index : 0);
    const size = Array.from({ length: rank }, (_, i) => i === axis ? 1 : -1);
    return this.emit("SLICE", [t, this.ints(begin), this.ints(size)]);
  }
}
