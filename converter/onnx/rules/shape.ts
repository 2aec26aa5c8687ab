/**
 * Shape and data-movement operators: Reshape, Flatten, Squeeze, Unsqueeze, Transpose,
 * Concat, Gather, Slice, Identity, Dropout, Cast, and the value sources Constant, Shape and
 * ConstantOfShape. Everything whose inputs are constants folds on the host, which removes
 * the Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains exporters emit.
 */
import {
  gather as gatherKernel,
  stridedSlice,
  transpose,
} from "../../../kernels/shape_transform.ts";
import type { ConversionContext, NodeView } from "../context.ts";
import type { Rule } from "../rule.ts";
import {
  allocateHost,
  type ElementType,
  elementType,
  extentSymbol,
  type HostTensor,
  hostTensor,
  symbolOf,
  toInt32,
} from "../tensors.ts";
import { knownProduct, normalizeAxis, sameTypeAs, specOf } from "./common.ts";

/** The values of a constant integer input or attribute (opset-dependent place). */
function intList(
  node: NodeView,
  ctx: ConversionContext,
  attribute: string,
  input: number,
  sinceOpset: number,
): number[] | undefined {
  if (ctx.opset < sinceOpset) return node.has(attribute) ? node.ints(attribute) : undefined;
  const name = node.input(input);
  if (!name) return undefined;
  return [...ctx.requireConstant(name, attribute).data];
}

/** `dims` as a RESHAPE target (0 = unknown extent becomes -1; at most one allowed). */
function reshapeTarget(dims: readonly number[]): Int32Array {
  if (dims.filter((d) => d === 0).length > 1) {
    throw new Error(`the result shape [${dims}] has several extents known only at execution`);
  }
  return new Int32Array(dims.map((d) => d === 0 ? -1 : d));
}

/**
 * Emits the reshape of `x` to `dims` (0 = known only at execution) named `name`. One
 * unknown extent: RESHAPE (its -1). Several: only a reshape that drops and adds unit axes
 * (each unknown extent the copy of the input axis `sources` names) can be expressed, as
 * SQUEEZE then EXPAND_DIMS.
 */
function emitReshape(
  ctx: ConversionContext,
  name: string,
  x: string,
  dims: readonly number[],
  sources: readonly (number | undefined)[] = [],
) {
  const spec = sameTypeAs(ctx, x);
  if (dims.filter((d) => d === 0).length <= 1) {
    const target = reshapeTarget(dims);
    const shape = ctx.builder.constant("TENSOR_INT32", [target.length], target);
    ctx.emitAs(name, "RESHAPE", [ctx.operand(x), shape], spec);
    return;
  }
  const input = ctx.dims(x);
  const kept = input.flatMap((d, axis) => d === 1 ? [] : [axis]);
  const placed = dims.flatMap((d, i) => d === 1 ? [] : [i]);
  const onlyUnitAxes = kept.length === placed.length &&
    placed.every((i, k) => sources[i] === kept[k] || (dims[i] !== 0 && dims[i] === input[kept[k]]));
  if (!onlyUnitAxes) reshapeTarget(dims); // throws: several extents known only at execution
  let value = ctx.operand(x);
  const dropped = input.flatMap((d, axis) => d === 1 ? [axis] : []);
  if (dropped.length > 0) {
    const axes = ctx.builder.constant("TENSOR_INT32", [dropped.length], Int32Array.from(dropped));
    [value] = ctx.emit("SQUEEZE", [value, axes], [spec]);
  }
  for (const axis of dims.flatMap((d, i) => d === 1 ? [i] : [])) {
    [value] = ctx.emit("EXPAND_DIMS", [value, ctx.builder.int32(axis)], [spec]);
  }
  ctx.setOperand(name, value, spec.elementType);
}

/** A host tensor with new dims (same data). */
function reshaped(t: HostTensor, dims: number[]): HostTensor {
  return { type: t.type, dims, data: t.data };
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
): { dims: number[]; sources: (number | undefined)[] } {
  const allowZero = node.int("allowzero", 0) === 1;
  /** Input axes copied, and the target positions that copy them (each axis once). */
  const copiedAxes = new Set<number>();
  const copies = new Set<number>();
  const sources: (number | undefined)[] = [];
  const dims = Array.from(target, (d, i) => {
    const symbol = symbolOf(d);
    const axis = symbol
      ? (symbol.operand === operand ? symbol.axis : undefined)
      : (d === 0 && !allowZero ? i : undefined);
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
  return { dims, sources };
}

const reshape: Rule = {
  fold: (node, [x, shape]) => [reshaped(x!, reshapeShape(node, x!.dims, shape!.data).dims)],
  moves: [0],
  convert(node, ctx) {
    const [x, s] = node.inputs;
    const target = ctx.shapeValues(s, "Reshape's shape").data;
    const operand = ctx.operand(x);
    const { dims, sources } = reshapeShape(node, operand.dimensions, target, operand.index);
    emitReshape(ctx, node.outputs[0], x, dims, sources);
  },
};

function flattenDims(node: NodeView, dims: readonly number[]): number[] {
  const axis = node.int("axis", 1);
  const a = axis < 0 ? axis + dims.length : axis;
  const outer = knownProduct(dims.slice(0, a)) ?? 0;
  const inner = knownProduct(dims.slice(a)) ?? 0;
  return [outer, inner];
}

const flatten: Rule = {
  moves: [0],
  fold: (node, [x]) => [reshaped(x!, flattenDims(node, x!.dims))],
  convert(node, ctx) {
    const x = node.inputs[0];
    emitReshape(ctx, node.outputs[0], x, flattenDims(node, ctx.dims(x)));
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
    const normalized = axes.map((a) => normalizeAxis(a, dims.length));
    const squeezeAxes = ctx.builder.constant(
      "TENSOR_INT32",
      [normalized.length],
      new Int32Array(normalized),
    );
    ctx.emitAs(node.outputs[0], "SQUEEZE", [ctx.operand(x), squeezeAxes], sameTypeAs(ctx, x));
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
    const dims = ctx.dims(x);
    const out = unsqueezeDims(dims, axes);
    // Each extent that is not an inserted 1 comes from the next input axis.
    let next = 0;
    const inserted = new Set(axes.map((a) => normalizeAxis(a, out.length)));
    const sources = out.map((_, i) => inserted.has(i) ? undefined : next++);
    emitReshape(ctx, node.outputs[0], x, out, sources);
  },
};

function permutation(node: NodeView, rank: number): number[] {
  return node.ints("perm", Array.from({ length: rank }, (_, i) => rank - 1 - i));
}

const transposeRule: Rule = {
  fold(node, [x]) {
    const perm = permutation(node, x!.dims.length);
    const out = allocateHost(x!.type, perm.map((p) => x!.dims[p]));
    transpose(x!.data, x!.dims, perm, out.data);
    return [out];
  },
  convert(node, ctx) {
    const x = node.inputs[0];
    const perm = permutation(node, ctx.dims(x).length);
    const p = ctx.builder.constant("TENSOR_INT32", [perm.length], new Int32Array(perm));
    ctx.emitAs(node.outputs[0], "TRANSPOSE", [ctx.operand(x), p], sameTypeAs(ctx, x));
  },
};

const concat: Rule = {
  moves: "all",
  fold(node, inputs) {
    const parts = inputs.filter((t): t is HostTensor => t !== undefined && t.data.length > 0);
    const first = parts[0] ?? inputs[0]!;
    const axis = normalizeAxis(node.int("axis"), first.dims.length);
    const outer = knownProduct(first.dims.slice(0, axis))!;
    const dims = [...first.dims];
    dims[axis] = parts.reduce((sum, t) => sum + t.dims[axis], 0);
    const out = allocateHost(first.type, dims);
    let offset = 0;
    for (let o = 0; o < outer; o++) {
      for (const t of parts) {
        const chunk = t.data.length / outer;
        out.data.set(t.data.subarray(o * chunk, (o + 1) * chunk), offset);
        offset += chunk;
      }
    }
    return [out];
  },
  convert(node, ctx) {
    const names = node.inputs.filter((n) => n);
    const rank = ctx.dims(names[0]).length;
    const axis = normalizeAxis(node.int("axis"), rank);
    ctx.emitAs(
      node.outputs[0],
      "CONCATENATION",
      [...names.map((n) => ctx.operand(n)), ctx.builder.int32(axis)],
      sameTypeAs(ctx, names[0]),
    );
  },
};

/**
 * Shape: the input's extents. Extents known only at execution become symbols (a partial
 * tensor) that may be moved on and end as a Reshape target, never computed with.
 */
const shapeRule: Rule = {
  // Only the input's extents are read, which a partial tensor has too.
  moves: [0],
  fold(node, [x]) {
    return [shapeOf(node, x!.dims)];
  },
  convert(node, ctx) {
    const x = ctx.operand(node.inputs[0]);
    const extents = x.dimensions.map((d, axis) => d === 0 ? extentSymbol(x.index, axis) : d);
    const shape = shapeOf(node, extents);
    const partial = shape.data.some((v) => symbolOf(v) !== undefined);
    ctx.setConstant(node.outputs[0], partial ? { ...shape, partial } : shape);
  },
};

function shapeOf(node: NodeView, dims: readonly number[]): HostTensor {
  const start = node.int("start", 0);
  const end = node.int("end", dims.length);
  const picked = dims.slice(
    start < 0 ? start + dims.length : start,
    end < 0 ? end + dims.length : end,
  );
  return hostTensor("int64", [picked.length], picked);
}

const gather: Rule = {
  moves: [0],
  fold(node, [data, indices]) {
    const axis = normalizeAxis(node.int("axis", 0), data!.dims.length);
    const extent = data!.dims[axis];
    const normalized = indices!.data.map((raw) => {
      const i = raw < 0 ? raw + extent : raw;
      if (i < 0 || i >= extent) {
        throw new Error(`index ${raw} is out of range for extent ${extent}`);
      }
      return i;
    });
    const dims = [...data!.dims.slice(0, axis), ...indices!.dims, ...data!.dims.slice(axis + 1)];
    const out = allocateHost(data!.type, dims);
    const sizes = {
      outer: knownProduct(data!.dims.slice(0, axis))!,
      axis: extent,
      inner: knownProduct(data!.dims.slice(axis + 1))!,
    };
    gatherKernel(data!.data, sizes, normalized, out.data);
    return [out];
  },
  convert(node, ctx) {
    const [x, idx] = node.inputs;
    const rank = ctx.dims(x).length;
    const axis = normalizeAxis(node.int("axis", 0), rank);
    const spec = sameTypeAs(ctx, x);
    const constantIndices = ctx.constant(idx);
    if (constantIndices && constantIndices.dims.length === 0) {
      // NNAPI indices are a tensor: gather [i], then drop the axis.
      const one = ctx.builder.constant(
        "TENSOR_INT32",
        [1],
        toInt32(constantIndices.data, "Gather's indices"),
      );
      const [picked] = ctx.emit("GATHER", [ctx.operand(x), ctx.builder.int32(axis), one], [spec]);
      const axes = ctx.builder.constant("TENSOR_INT32", [1], new Int32Array([axis]));
      ctx.emitAs(node.outputs[0], "SQUEEZE", [picked, axes], spec);
      return;
    }
    const indices = constantIndices
      ? ctx.builder.constant(
        "TENSOR_INT32",
        constantIndices.dims,
        toInt32(constantIndices.data, "Gather's indices"),
      )
      : ctx.operand(idx);
    ctx.emitAs(node.outputs[0], "GATHER", [ctx.operand(x), ctx.builder.int32(axis), indices], spec);
  },
};

/** Slice's starts/ends/axes/steps (inputs since opset 10, attributes before). */
function sliceParams(node: NodeView, ctx: ConversionContext, rank: number) {
  const starts = intList(node, ctx, "starts", 1, 10)!;
  const ends = intList(node, ctx, "ends", 2, 10)!;
  const axes = intList(node, ctx, "axes", 3, 10) ?? starts.map((_, i) => i);
  const steps = (ctx.opset >= 10 ? intList(node, ctx, "steps", 4, 10) : undefined) ??
    starts.map(() => 1);
  return { starts, ends, axes: axes.map((a) => normalizeAxis(a, rank)), steps };
}

const INT32_MAX = 0x7fffffff;
const INT32_MIN = -0x80000000;

function clampInt32(v: number): number {
  return Math.min(Math.max(v, INT32_MIN), INT32_MAX);
}

/** Clamped begin and count per dimension, as ONNX Slice defines them. */
function sliceWindow(dims: readonly number[], p: ReturnType<typeof sliceParams>) {
  const begin = dims.map(() => 0);
  const step = dims.map(() => 1);
  const count = [...dims];
  p.axes.forEach((axis, i) => {
    const d = dims[axis];
    const s = p.steps[i];
    if (s === 0) throw new Error("a step of 0");
    const clamp = (v: number, lo: number, hi: number) => Math.min(Math.max(v, lo), hi);
    let start = p.starts[i] < 0 ? p.starts[i] + d : p.starts[i];
    let end = p.ends[i] < 0 ? p.ends[i] + d : p.ends[i];
    start = s > 0 ? clamp(start, 0, d) : clamp(start, 0, d - 1);
    end = s > 0 ? clamp(end, 0, d) : clamp(end, -1, d - 1);
    begin[axis] = start;
    step[axis] = s;
    count[axis] = Math.max(0, Math.ceil((end - start) / s));
  });
  return { begin, step, count };
}

const slice: Rule = {
  moves: [0],
  fold(node, [x], ctx) {
    const w = sliceWindow(x!.dims, sliceParams(node, ctx, x!.dims.length));
    const out = allocateHost(x!.type, w.count);
    stridedSlice(x!.data, x!.dims, { begin: w.begin, step: w.step, counts: w.count }, out.data);
    return [out];
  },
  convert(node, ctx) {
    const x = node.inputs[0];
    const dims = ctx.dims(x);
    const p = sliceParams(node, ctx, dims.length);
    const w = sliceWindow(dims.map((d) => d || INT32_MAX), p);
    const begin = [...w.begin];
    const end = w.begin.map((b, i) => b + w.count[i] * w.step[i]);
    let beginMask = 0;
    // An end of -1 on a negative step means "through index 0": NNAPI takes the end mask.
    let endMask = 0;
    end.forEach((e, i) => {
      if (e < 0 || dims[i] === 0) endMask |= 1 << i;
    });
    // Along an extent known only at execution, ONNX's own indices go to STRIDED_SLICE, which
    // counts negative ones from the end and clamps as ONNX does; indices beyond int32 (the
    // INT64 "to the edge" idiom) become masks.
    p.axes.forEach((axis, i) => {
      if (dims[axis] !== 0) return;
      const forward = p.steps[i] > 0;
      const [start, stop] = [p.starts[i], p.ends[i]];
      begin[axis] = clampInt32(start);
      if (forward ? start <= INT32_MIN : start >= INT32_MAX) beginMask |= 1 << axis;
      if (forward ? stop >= INT32_MAX : stop <= INT32_MIN) endMask |= 1 << axis;
      else {
        endMask &= ~(1 << axis);
        end[axis] = clampInt32(stop);
      }
    });
    const s = ctx.builder;
    const vector = (values: number[]) =>
      s.constant("TENSOR_INT32", [values.length], new Int32Array(values));
    ctx.emitAs(node.outputs[0], "STRIDED_SLICE", [
      ctx.operand(x),
      vector(begin),
      vector(end.map((e, i) => dims[i] === 0 ? e : Math.max(e, 0))),
      vector(w.step),
      s.int32(beginMask),
      s.int32(endMask),
      s.int32(0),
    ], sameTypeAs(ctx, x));
  },
};

/** Constant: the tensor (or typed scalar/list) in its attributes. */
const constant: Rule = {
  fold: (node) => [constantValue(node)],
  convert(node, ctx) {
    ctx.setConstant(node.outputs[0], constantValue(node));
  },
};

function constantValue(node: NodeView): HostTensor {
  if (node.has("value")) return node.tensor("value");
  if (node.has("value_float")) return hostTensor("float32", [], [node.float("value_float")]);
  if (node.has("value_floats")) {
    const v = node.floats("value_floats");
    return hostTensor("float32", [v.length], v);
  }
  if (node.has("value_int")) return hostTensor("int64", [], [node.int("value_int")]);
  if (node.has("value_ints")) {
    const v = node.ints("value_ints");
    return hostTensor("int64", [v.length], v);
  }
  throw new Error("sparse or string constants are not supported");
}

const constantOfShape: Rule = {
  fold(node, [shape]) {
    const value = node.has("value") ? node.tensor("value") : hostTensor("float32", [1], [0]);
    const out = allocateHost(value.type, [...shape!.data]);
    out.data.fill(value.data[0]);
    return [out];
  },
  convert() {
    throw new Error("ConstantOfShape needs a constant shape");
  },
};

/** The element type Cast's `to` names. */
function castTarget(node: NodeView): ElementType {
  const type = elementType(node.int("to"));
  if (!["float32", "float16", "int32", "int64", "bool"].includes(type)) {
    throw new Error(`Cast to ${type.replace(/^element type /, "")} is not supported`);
  }
  return type as ElementType;
}

const cast: Rule = {
  fold(node, [x]) {
    const to = castTarget(node);
    const out = allocateHost(to, x!.dims);
    const integer = to === "int32" || to === "int64";
    for (let i = 0; i < x!.data.length; i++) {
      const v = x!.data[i];
      out.data[i] = to === "bool" ? (v ? 1 : 0) : integer ? Math.trunc(v) : v;
    }
    return [out];
  },
  convert(node, ctx) {
    const x = node.inputs[0];
    const to = castTarget(node);
    const from = sameTypeAs(ctx, x);
    const spec = specOf(to);
    if (from.type === spec.type) {
      // int64 <-> int32 are both TENSOR_INT32 here.
      ctx.setOperand(node.outputs[0], ctx.operand(x), to);
      return;
    }
    ctx.emitAs(node.outputs[0], "CAST", [ctx.operand(x)], spec);
  },
};

/** Identity and Dropout (inference): the output is the input. */
const identity: Rule = {
  moves: [0],
  fold: (_node, [x]) => [x!],
  convert(node, ctx) {
    if (node.outputs.length > 1 && node.outputs[1] && ctx.uses(node.outputs[1]) > 0) {
      throw new Error("the mask output is not supported");
    }
    ctx.alias(node.outputs[0], node.inputs[0]);
  },
};

export const SHAPE_RULES: Record<string, Rule> = {
  Reshape: reshape,
  Flatten: flatten,
  Squeeze: squeeze,
  Unsqueeze: unsqueeze,
  Transpose: transposeRule,
  Concat: concat,
  Shape: shapeRule,
  Gather: gather,
  Slice: slice,
  Constant: constant,
  ConstantOfShape: constantOfShape,
  Cast: cast,
  Identity: identity,
  Dropout: identity,
};
