/**
 * Slice whose starts or ends are computed at execution (an attention mask cut to the key
 * length of a cache): STRIDED_SLICE with begin and end vectors assembled there. ONNX's
 * indices go in as they are (STRIDED_SLICE counts negative ones from the end and clamps as
 * ONNX does); the axes not sliced take the whole extent through the masks; int64 indices
 * beyond int32 (the "to the edge" idiom) are clamped first.
 */
import { FUSED_NONE } from "../../../nnapi/types.ts";
import type { BuiltOperand } from "../../graph_builder.ts";
import type { ConversionContext } from "../context.ts";
import type { NodeView } from "../node_view.ts";
import { symbolOf } from "../tensors.ts";
import { int32Vector, intList, normalizeAxis, sameTypeAs, specOf } from "./common.ts";

const INT32_MAX = 0x7fffffff;
const INT32_MIN = -0x80000000;
const INT32 = specOf("int32");

/** Whether the node's starts or ends are known only at execution. */
export function boundsAtExecution(node: NodeView, ctx: ConversionContext): boolean {
  if (ctx.opset < 10) return false;
  return [1, 2].some((i) => ctx.constant(node.inputs[i]) === undefined);
}

/** A starts or ends input as a TENSOR_INT32 operand, int64 extremes clamped to int32. */
function bounds(ctx: ConversionContext, name: string): BuiltOperand {
  const value = ctx.value(name);
  if (value.kind !== "constant") return ctx.operand(name);
  const data = Float64Array.from(
    value.tensor.data as ArrayLike<number>,
    (v) => symbolOf(v) === undefined ? Math.min(Math.max(v, INT32_MIN), INT32_MAX) : v,
  );
  const clamped = `${name}#int32`;
  ctx.setConstant(clamped, { ...value.tensor, data });
  return ctx.operand(clamped);
}

/**
 * `values` (one per sliced axis) placed into a vector of the input's rank at `axes`, the
 * other places 0: GATHER picks each axis' value, MUL by a 0/1 mask keeps the sliced ones.
 */
function placed(
  ctx: ConversionContext,
  values: BuiltOperand,
  axes: readonly number[],
  rank: number,
): BuiltOperand {
  if (axes.length === rank && axes.every((a, i) => a === i)) return values;
  const picks = Array.from({ length: rank }, (_, a) => Math.max(axes.indexOf(a), 0));
  const mask = Array.from({ length: rank }, (_, a) => axes.includes(a) ? 1 : 0);
  const dims = [rank];
  const [gathered] = ctx.emit("GATHER", [values, ctx.builder.int32(0), int32Vector(ctx, picks)], [
    { ...INT32, dims },
  ]);
  return ctx.emit("MUL", [gathered, int32Vector(ctx, mask), ctx.builder.int32(FUSED_NONE)], [
    { ...INT32, dims },
  ])[0];
}

/** Converts a Slice whose bounds are known only at execution. */
export function sliceAtExecution(node: NodeView, ctx: ConversionContext): void {
  const x = node.inputs[0];
  const dims = ctx.dims(x);
  const rank = dims.length;
  if (rank > 4) throw new Error(`a rank-${rank} Slice with bounds known only at execution`);
  const starts = ctx.operand(node.inputs[1]);
  const count = starts.dimensions[0];
  if (!count) throw new Error("the number of sliced axes is known only at execution");
  const axes = (intList(node, ctx, "axes", 3, 10) ?? Array.from({ length: count }, (_, i) => i))
    .map((a) => normalizeAxis(a, rank));
  const steps = intList(node, ctx, "steps", 4, 10) ?? axes.map(() => 1);
  let whole = 0;
  for (let a = 0; a < rank; a++) if (!axes.includes(a)) whole |= 1 << a;
  const step = Array.from({ length: rank }, (_, a) => {
    const i = axes.indexOf(a);
    return i < 0 ? 1 : steps[i];
  });
  const out = dims.map((d, a) => axes.includes(a) ? 0 : d);
  ctx.emitAs(node.outputs[0], "STRIDED_SLICE", [
    ctx.operand(x),
    placed(ctx, bounds(ctx, node.inputs[1]), axes, rank),
    placed(ctx, bounds(ctx, node.inputs[2]), axes, rank),
    int32Vector(ctx, step),
    ctx.builder.int32(whole),
    ctx.builder.int32(whole),
    ctx.builder.int32(0),
  ], { ...sameTypeAs(ctx, x), dims: out });
}
