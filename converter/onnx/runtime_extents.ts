/**
 * Extents known only at execution, computed in the model: SHAPE (nnserve's extension
 * operation) of the operand an extent belongs to, GATHER of the axis, MUL for products, and
 * a shape vector assembled by adding each extent into its place (NNAPI's CONCATENATION
 * takes no TENSOR_INT32). Executors work these small values out when they bind a set of
 * input shapes (`driver/model/shape_inference.ts`), so a plan with them is laid out and
 * bound per shape like any other.
 */
import { FUSED_NONE } from "../../nnapi/types.ts";
import type { BuiltOperand } from "../graph_builder.ts";
import type { ConversionContext } from "./context.ts";
import { specOf } from "./rules/common.ts";
import { type HostTensor, symbolOf, toInt32 } from "./tensors.ts";

/** An extent known only at execution: the product of these operands' extents, times `scale`. */
export interface RuntimeExtent {
  factors: readonly { operand: number; axis: number }[];
  scale: number;
}

const INT32 = specOf("int32");

/** SHAPE of each operand, once per conversion graph. */
const shapes = new WeakMap<ConversionContext, Map<number, BuiltOperand>>();

/** The extents of model operand `index` at execution (a TENSOR_INT32 of its rank). */
function shapeOf(ctx: ConversionContext, index: number): BuiltOperand {
  let known = shapes.get(ctx);
  if (!known) shapes.set(ctx, known = new Map());
  let shape = known.get(index);
  if (!shape) {
    [shape] = ctx.emit("SHAPE", [ctx.builder.operandAt(index)], [INT32]);
    known.set(index, shape);
  }
  return shape;
}

/** One extent at execution, as a TENSOR_INT32 [1]. */
export function extentOperand(ctx: ConversionContext, extent: RuntimeExtent): BuiltOperand {
  const none = ctx.builder.int32(FUSED_NONE);
  const parts = extent.factors.map(({ operand, axis }) => {
    const index = ctx.builder.constant("TENSOR_INT32", [1], Int32Array.of(axis));
    return ctx.emit("GATHER", [shapeOf(ctx, operand), ctx.builder.int32(0), index], [INT32])[0];
  });
  if (extent.scale !== 1 || parts.length === 0) {
    parts.push(ctx.builder.constant("TENSOR_INT32", [1], Int32Array.of(extent.scale)));
  }
  return parts.reduce((product, part) => ctx.emit("MUL", [product, part, none], [INT32])[0]);
}

/**
 * A shape vector computed at execution: `dims` with each unknown extent (0) given by
 * `extents`, or -1 (inferred by RESHAPE) for at most one without; undefined when more than
 * one unknown extent has no expression.
 */
export function runtimeShape(
  ctx: ConversionContext,
  dims: readonly number[],
  extents: readonly (RuntimeExtent | undefined)[],
): BuiltOperand | undefined {
  const free = dims.flatMap((d, i) => d === 0 && !extents[i] ? [i] : []);
  if (free.length > 1) return undefined;
  const base = dims.map((d, i) => d === 0 ? (free.includes(i) ? -1 : 0) : d);
  const none = ctx.builder.int32(FUSED_NONE);
  let shape = ctx.builder.constant("TENSOR_INT32", [dims.length], Int32Array.from(base));
  dims.forEach((d, i) => {
    const extent = extents[i];
    if (d !== 0 || !extent) return;
    const place = new Int32Array(dims.length);
    place[i] = 1;
    const unit = ctx.builder.constant("TENSOR_INT32", [dims.length], place);
    const [placed] = ctx.emit("MUL", [extentOperand(ctx, extent), unit, none], [INT32]);
    [shape] = ctx.emit("ADD", [shape, placed, none], [INT32]);
  });
  return shape;
}

/**
 * A shape-like integer tensor known at conversion except for extents known only at
 * execution (`extentSymbol`s: a Shape of a dynamic value, gathered, sliced, concatenated),
 * as a TENSOR_INT32 operand whose symbols are computed at execution. ONNX scalars travel as
 * [1].
 */
export function runtimeValues(ctx: ConversionContext, tensor: HostTensor): BuiltOperand {
  const dims = tensor.dims.length === 0 ? [1] : tensor.dims;
  const values = Array.from(tensor.data as ArrayLike<number>);
  const base = values.map((v) => symbolOf(v) === undefined ? v : 0);
  const none = ctx.builder.int32(FUSED_NONE);
  let result = ctx.builder.constant("TENSOR_INT32", dims, toInt32(base, "a shape value"));
  values.forEach((v, i) => {
    const symbol = symbolOf(v);
    if (!symbol) return;
    const place = new Int32Array(values.length);
    place[i] = 1;
    const unit = ctx.builder.constant("TENSOR_INT32", dims, place);
    const extent = extentOperand(ctx, { factors: [symbol], scale: 1 });
    const [placed] = ctx.emit("MUL", [extent, unit, none], [INT32]);
    [result] = ctx.emit("ADD", [result, placed, none], [INT32]);
  });
  return result;
}
