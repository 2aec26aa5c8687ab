/**
 * Reshape, Flatten, Squeeze and Unsqueeze, and the one reshape every rule uses
 * (`reshapeOperand`): NNAPI's RESHAPE takes floats and quant8 with one extent known only at
 * execution, so the other types and shapes take exact routes of their own (EXPAND_DIMS,
 * REDUCE_ANY, integers as two float32 halves, booleans as numbers).
 */
import { MOVED_TYPES } from "../../../operations/common/shape_ops.ts";
import type { BuiltOperand } from "../../graph_builder.ts";
import type { ConversionContext, OutputSpec } from "../context.ts";
import type { NodeView } from "../node_view.ts";
import type { Rule } from "../rule.ts";
import { type HostTensor, symbolOf, toInt32 } from "../tensors.ts";
import { type RuntimeExtent, runtimeShape } from "../runtime_extents.ts";
import {
  boolFromNumbers,
  int32Vector,
  intList,
  knownProduct,
  moveInt32Exactly,
  normalizeAxis,
  numbersFromBool,
  sameTypeAs,
  specOf,
} from "./common.ts";

/** Where a reshape goes: the result's extents (0 = known only at execution) and type. */
export interface ReshapeTarget {
  spec: OutputSpec;
  dims: readonly number[];
  /** The input axis each unknown extent of `dims` copies, where known. */
  sources?: readonly (number | undefined)[];
  /** How each unknown extent of `dims` is computed at execution, where known. */
  extents?: readonly (RuntimeExtent | undefined)[];
  /**
   * The first extent is whatever the rest leaves (Flatten's outer one): a constant target
   * says -1 there, so the model still runs when its batch extent is opened.
   */
  firstInferred?: boolean;
}

/** Unit axes dropped (input axes) and inserted (result axes) by a reshape doing only that. */
interface UnitAxes {
  dropped: number[];
  inserted: number[];
}

/** The largest extent a Reshape target may hold: NNAPI's shape tensors are int32. */
const INT32_MAX = 0x7fffffff;

/**
 * `dims` as a RESHAPE target (0 = unknown extent becomes -1; at most one allowed); an extent
 * outside int32 is refused, never wrapped.
 */
export function reshapeTarget(dims: readonly number[]): Int32Array {
  if (dims.filter((d) => d === 0).length > 1) {
    throw new Error(`the result shape [${dims}] has several extents known only at execution`);
  }
  return toInt32(dims.map((d) => d === 0 ? -1 : d), "the result shape");
}

/**
 * The unit axes a reshape from `input` to `dims` drops and inserts when every other extent
 * carries over in order (an unknown one when `sources` names its input axis); undefined when
 * the reshape does more.
 */
function unitAxisChange(
  input: readonly number[],
  dims: readonly number[],
  sources: readonly (number | undefined)[],
): UnitAxes | undefined {
  const change: UnitAxes = { dropped: [], inserted: [] };
  let [i, j] = [0, 0];
  while (i < dims.length || j < input.length) {
    const carried = i < dims.length && j < input.length && dims[i] === input[j] &&
      (dims[i] !== 0 || sources[i] === j);
    if (carried) [i, j] = [i + 1, j + 1];
    else if (j < input.length && input[j] === 1) change.dropped.push(j++);
    else if (i < dims.length && dims[i] === 1) change.inserted.push(i++);
    else return undefined;
  }
  return change;
}

/** SQUEEZE of the dropped unit axes, then EXPAND_DIMS at each inserted one (in order). */
function moveUnitAxes(
  ctx: ConversionContext,
  x: BuiltOperand,
  spec: OutputSpec,
  change: UnitAxes,
): BuiltOperand {
  let value = x;
  if (change.dropped.length > 0) {
    [value] = ctx.emit("SQUEEZE", [value, int32Vector(ctx, change.dropped)], [spec]);
  }
  for (const axis of change.inserted) {
    [value] = ctx.emit("EXPAND_DIMS", [value, ctx.builder.int32(axis)], [spec]);
  }
  return value;
}

/**
 * `x` reshaped. The same shape is `x` itself; floats and quant8 go through RESHAPE (one
 * unknown extent) or SQUEEZE and EXPAND_DIMS (only unit axes come and go); TENSOR_INT32 and
 * TENSOR_BOOL8, which RESHAPE does not take, through {@link reshapeInt32} and
 * {@link reshapeBool}.
 */
export function reshapeOperand(
  ctx: ConversionContext,
  x: BuiltOperand,
  to: ReshapeTarget,
): BuiltOperand {
  const { spec } = to;
  // A rank-0 result travels as [1], as ONNX scalars do everywhere in the model: NNAPI reads
  // a tensor of rank 0 as one of unknown rank.
  const dims = to.dims.length === 0 ? [1] : to.dims;
  const sources = to.sources ?? [];
  const input = x.dimensions;
  const same = input.length === dims.length &&
    input.every((d, i) => d === dims[i] && (d !== 0 || sources[i] === i));
  if (same) return x;
  const change = unitAxisChange(input, dims, sources);
  if (x.type === "TENSOR_INT32") return reshapeInt32(ctx, x, to, change);
  if (x.type === "TENSOR_BOOL8") return reshapeBool(ctx, x, to, change);
  if (dims.filter((d) => d === 0).length > 1) {
    // SQUEEZE takes at most rank 4.
    if (change && input.length <= 4) return moveUnitAxes(ctx, x, spec, change);
    // The target computed at execution from the extents it copies.
    const extents = dims.map((d, i) =>
      d !== 0 ? undefined : to.extents?.[i] ??
        (sources[i] === undefined
          ? undefined
          : { factors: [{ operand: x.index, axis: sources[i]! }], scale: 1 })
    );
    const target = runtimeShape(ctx, dims, extents);
    if (!target) reshapeTarget(dims); // throws: several extents known only at execution
    return ctx.emit("RESHAPE", [x, target!], [{ ...spec, dims }])[0];
  }
  const target = reshapeTarget(dims);
  if (to.firstInferred && !dims.includes(0) && dims.length > 1) target[0] = -1;
  return ctx.emit("RESHAPE", [x, int32Vector(ctx, target)], [spec])[0];
}

/**
 * An int32 reshape: EXPAND_DIMS when it only inserts unit axes; otherwise the values split
 * exactly into `high * 2^16 + low` (DIV floors, so low is in [0, 2^16)), both halves exact
 * in float32, each cast, reshaped and cast back, and joined by MUL and ADD.
 */
function reshapeInt32(
  ctx: ConversionContext,
  x: BuiltOperand,
  to: ReshapeTarget,
  change: UnitAxes | undefined,
): BuiltOperand {
  const { spec } = to;
  if (change && change.dropped.length === 0) return moveUnitAxes(ctx, x, spec, change);
  return moveInt32Exactly(
    ctx,
    [x],
    spec,
    ([part], float) => reshapeOperand(ctx, part, { ...to, spec: float }),
  );
}

/**
 * A boolean reshape: REDUCE_ANY over the dropped axes when it only drops unit axes;
 * otherwise the values as 1/0 float32 numbers, reshaped and compared with 0 (which needs the
 * input's shape known at conversion).
 */
function reshapeBool(
  ctx: ConversionContext,
  x: BuiltOperand,
  to: ReshapeTarget,
  change: UnitAxes | undefined,
): BuiltOperand {
  if (change && change.inserted.length === 0) {
    const { dropped } = change;
    const axes = int32Vector(ctx, dropped);
    return ctx.emit("REDUCE_ANY", [x, axes, ctx.builder.bool(false)], [to.spec])[0];
  }
  const float = specOf("float32");
  const what = `a reshape of a boolean tensor to [${to.dims}]`;
  const numbers = numbersFromBool(ctx, x, { spec: float, what });
  return boolFromNumbers(ctx, reshapeOperand(ctx, numbers, { ...to, spec: float }), float);
}

/** `x` without its unit axes `axes`: SQUEEZE where NNAPI takes it, a reshape otherwise. */
export function squeezeOperand(
  ctx: ConversionContext,
  x: BuiltOperand,
  options: { spec: OutputSpec; axes: readonly number[] },
): BuiltOperand {
  const { spec, axes } = options;
  const dims = x.dimensions;
  const kept = dims.flatMap((_, axis) => axes.includes(axis) ? [] : [axis]);
  const keptDims = kept.map((axis) => dims[axis]);
  if (MOVED_TYPES.includes(x.type) && dims.length <= 4) {
    // An axis known only at execution is 1 there, or the SQUEEZE fails: the rank is known.
    return ctx.emit("SQUEEZE", [x, int32Vector(ctx, axes)], [{ ...spec, dims: keptDims }])[0];
  }
  return reshapeOperand(ctx, x, { spec, dims: keptDims, sources: kept });
}

/** Reshapes value `x` to `dims` and names the result `name`. */
function emitReshape(
  ctx: ConversionContext,
  name: string,
  x: string,
  target: Omit<ReshapeTarget, "spec">,
): void {
  const spec = sameTypeAs(ctx, x);
  ctx.setOperand(name, reshapeOperand(ctx, ctx.operand(x), { ...target, spec }), spec.elementType);
}

/** A host tensor with new dims (same data), which must hold as many elements. */
function reshaped(t: HostTensor, dims: number[]): HostTensor {
  const count = dims.reduce((a, b) => a * b, 1);
  if (count !== t.data.length) {
    throw new Error(`[${t.dims}] (${t.data.length} elements) cannot take the shape [${dims}]`);
  }
  return { type: t.type, dims, data: t.data };
}

/**
 * Checks Reshape's target values: each -1 (inferred, once at most), 0 (copied), a positive
 * extent within int32 (NNAPI's extents; a larger int64 is refused, never wrapped) or the
 * symbol of an extent known only at execution.
 */
function checkReshapeValues(target: ArrayLike<number>): void {
  let inferred = 0;
  for (const d of Array.from(target)) {
    if (symbolOf(d) !== undefined) continue;
    if (!Number.isInteger(d) || d < -1) {
      throw new Error(`Reshape's shape holds ${d}: extents are -1, 0 or positive`);
    }
    if (d > INT32_MAX) {
      throw new Error(
        `Reshape's shape holds ${d}, outside the int32 range NNAPI tensors have`,
      );
    }
    if (d === -1 && ++inferred > 1) throw new Error("Reshape's shape holds -1 more than once");
  }
}

/**
 * ONNX Reshape's target for an input of extents `input` (0 = known only at execution) held
 * by model operand `operand`: 0 copies the input extent (unless allowzero), -1 is inferred, a
 * symbol (from a Shape of a dynamic value) stands for an extent known only at execution. A
 * symbol or copy of one of the input's own extents cancels against it when -1 is inferred,
 * so `Reshape(x, [Shape(x)[0], -1])` keeps a dynamic batch. `sources` says which input axis
 * each copied extent comes from.
 */
function reshapeShape(
  node: NodeView,
  input: readonly number[],
  target: ArrayLike<number>,
  operand?: number,
): { dims: number[]; sources: (number | undefined)[]; extents: (RuntimeExtent | undefined)[] } {
  checkReshapeValues(target);
  const allowZero = node.int("allowzero", 0) === 1;
  /** Input axes copied, and the target positions that copy them (each axis once). */
  const copiedAxes = new Set<number>();
  const copies = new Set<number>();
  const sources: (number | undefined)[] = [];
  const extents: (RuntimeExtent | undefined)[] = [];
  const dims = Array.from(target, (d, i) => {
    const symbol = symbolOf(d);
    const axis = symbol
      ? (symbol.operand === operand ? symbol.axis : undefined)
      : (d === 0 && !allowZero ? i : undefined);
    // Another operand's extent: computed at execution from that operand.
    if (symbol) extents[i] = { factors: [symbol], scale: 1 };
    if (axis === undefined) return symbol ? 0 : d;
    sources[i] = axis;
    if (!copiedAxes.has(axis)) {
      copiedAxes.add(axis);
      copies.add(i);
    }
    return input[axis];
  });
  const inferred = dims.indexOf(-1);
  if (inferred >= 0) {
    const total = knownProduct(input.filter((_, axis) => !copiedAxes.has(axis)));
    const rest = knownProduct(dims.filter((_, i) => i !== inferred && !copies.has(i)));
    dims[inferred] = total !== undefined && rest ? total / rest : 0;
  }
  return { dims, sources, extents };
}

const reshape: Rule = {
  fold: (node, [x, shape]) => [reshaped(x!, reshapeShape(node, x!.dims, shape!.data).dims)],
  moves: [0],
  convert(node, ctx) {
    const [x, s] = node.inputs;
    const target = ctx.shapeValues(s, "Reshape's shape").data;
    const operand = ctx.operand(x);
    const shape = reshapeShape(node, operand.dimensions, target, operand.index);
    emitReshape(ctx, node.outputs[0], x, shape);
  },
};

function flattenDims(node: NodeView, dims: readonly number[]): number[] {
  const axis = node.int("axis", 1);
  const a = axis < 0 ? axis + dims.length : axis;
  const outer = knownProduct(dims.slice(0, a)) ?? 0;
  const inner = knownProduct(dims.slice(a)) ?? 0;
  return [outer, inner];
}

/** Flatten's outer extent at execution (the inner one is then inferred). */
function flattenExtents(node: NodeView, x: BuiltOperand): (RuntimeExtent | undefined)[] {
  const axis = node.int("axis", 1);
  const a = axis < 0 ? axis + x.dimensions.length : axis;
  const outer = x.dimensions.slice(0, a);
  const factors = outer.flatMap((d, i) => d === 0 ? [{ operand: x.index, axis: i }] : []);
  return [{ factors, scale: outer.reduce((n, d) => d === 0 ? n : n * d, 1) }];
}

const flatten: Rule = {
  moves: [0],
  fold: (node, [x]) => [reshaped(x!, flattenDims(node, x!.dims))],
  convert(node, ctx) {
    const x = node.inputs[0];
    emitReshape(ctx, node.outputs[0], x, {
      dims: flattenDims(node, ctx.dims(x)),
      extents: flattenExtents(node, ctx.operand(x)),
      firstInferred: true,
    });
  },
};

function squeezeDims(dims: readonly number[], axes: number[] | undefined): number[] {
  if (!axes) {
    if (dims.includes(0)) throw new Error("Squeeze without axes needs every extent known");
    return dims.filter((d) => d !== 1);
  }
  const drop = new Set(axes.map((a) => normalizeAxis(a, dims.length)));
  return dims.filter((_, i) => !drop.has(i));
}

const squeeze: Rule = {
  moves: [0],
  fold: (node, [x], ctx) => [reshaped(x!, squeezeDims(x!.dims, intList(node, ctx, "axes", 1, 13)))],
  convert(node, ctx) {
    const x = node.inputs[0];
    const dims = ctx.dims(x);
    const axes = intList(node, ctx, "axes", 1, 13) ??
      dims.flatMap((d, i) => d === 1 ? [i] : []);
    const spec = sameTypeAs(ctx, x);
    const squeezed = squeezeOperand(ctx, ctx.operand(x), {
      spec,
      axes: axes.map((a) => normalizeAxis(a, dims.length)),
    });
    ctx.setOperand(node.outputs[0], squeezed, spec.elementType);
  },
};

function unsqueezeDims(dims: readonly number[], axes: number[]): number[] {
  const rank = dims.length + axes.length;
  const inserted = new Set(axes.map((a) => normalizeAxis(a, rank)));
  const out: number[] = [];
  let next = 0;
  for (let i = 0; i < rank; i++) out.push(inserted.has(i) ? 1 : dims[next++]);
  return out;
}

const unsqueeze: Rule = {
  moves: [0],
  fold: (
    node,
    [x],
    ctx,
  ) => [reshaped(x!, unsqueezeDims(x!.dims, intList(node, ctx, "axes", 1, 13)!))],
  convert(node, ctx) {
    const x = node.inputs[0];
    const axes = intList(node, ctx, "axes", 1, 13);
    if (!axes) throw new Error("axes are required");
    const dims = unsqueezeDims(ctx.dims(x), axes);
    // Each extent that is not an inserted 1 comes from the next input axis.
    let next = 0;
    const inserted = new Set(axes.map((a) => normalizeAxis(a, dims.length)));
    const sources = dims.map((_, i) => inserted.has(i) ? undefined : next++);
    emitReshape(ctx, node.outputs[0], x, { dims, sources });
  },
};

export const RESHAPE_RULES: Record<string, Rule> = {
  Reshape: reshape,
  Flatten: flatten,
  Squeeze: squeeze,
  Unsqueeze: unsqueeze,
};
