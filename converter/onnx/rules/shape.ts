/**
 * Data-movement operators: Concat, Gather, Slice, Identity, Dropout, Cast, and the value
 * sources Constant, Shape and Size (reshapes are in `reshape.ts`, ConstantOfShape in `expand.ts`,
 * Transpose in `transpose.ts`). Everything whose inputs are constants folds on the host,
 * which removes the Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains exporters emit.
 */
import { gather as gatherKernel, stridedSlice } from "../../../kernels/shape_transform.ts";
import type { BuiltOperand } from "../../graph_builder.ts";
import type { ConversionContext, OutputSpec } from "../context.ts";
import { type NodeView } from "../node_view.ts";
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
import { squeezeOperand } from "./reshape.ts";
import { extentOperand } from "../runtime_extents.ts";
import { dequantizedBy } from "./quantization.ts";
import { boundsAtExecution, sliceAtExecution } from "./slice_at_execution.ts";

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
    const spec = sameTypeAs(ctx, names[0]);
    const parts = names.map((n) => ctx.operand(n));
    const concatenated = (inputs: BuiltOperand[], as: OutputSpec) =>
      ctx.emit("CONCATENATION", [...inputs, ctx.builder.int32(axis)], [as])[0];
    // NNAPI's CONCATENATION takes no TENSOR_INT32 (shapes computed at execution are).
    const result = spec.type === "TENSOR_INT32"
      ? moveInt32Exactly(ctx, parts, spec, concatenated)
      : concatenated(parts, spec);
    ctx.setOperand(node.outputs[0], result, spec.elementType);
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

/**
 * Size: the element count, an int64 scalar known at conversion when every extent is (the
 * product of extents known only at execution is nothing an NNAPI model can compute).
 */
const size: Rule = {
  // Only the input's extents are read, which a partial tensor has too.
  moves: [0],
  fold: (_node, [x]) => [hostTensor("int64", [], [x!.data.length])],
  convert(node, ctx) {
    const x = node.inputs[0];
    const dims = ctx.dims(x);
    if (dims.length === 0) throw new Error(`Size of '${x}', whose rank is known only at execution`);
    const count = knownProduct(dims);
    if (count === undefined) {
      // The product of the extents known only at execution, computed there (SHAPE, MUL).
      const operand = ctx.operand(x).index;
      const factors = dims.flatMap((d, axis) => d === 0 ? [{ operand, axis }] : []);
      const scale = dims.reduce((product, d) => product * (d || 1), 1);
      return ctx.setOperand(node.outputs[0], extentOperand(ctx, { factors, scale }), "int64");
    }
    ctx.setConstant(node.outputs[0], hostTensor("int64", [], [count]));
  },
};

/**
 * An 8-bit constant table gathered at execution (a quantized embedding) becomes a quantized
 * operand with the scale and zero point the DequantizeLinear after the Gather applies, which
 * GATHER keeps: the table stays 8-bit and DEQUANTIZE computes what the ONNX graph does.
 */
function quantizedTable(
  ctx: ConversionContext,
  node: NodeView,
  x: string,
): { operand: BuiltOperand; spec: OutputSpec } | undefined {
  const table = ctx.constant(x);
  if (!table || (table.type !== "uint8" && table.type !== "int8")) return undefined;
  const quant = dequantizedBy(ctx, node.outputs[0]);
  if (!quant || quant.signed !== (table.type === "int8")) {
    throw new Error(
      `the ${table.type} table '${x}' is gathered at execution, and only DequantizeLinear ` +
        "nodes of one scale and zero point may read what is gathered",
    );
  }
  const type = quant.signed ? "TENSOR_QUANT8_ASYMM_SIGNED" : "TENSOR_QUANT8_ASYMM";
  const q = { scale: Math.fround(quant.scale), zeroPoint: quant.zeroPoint };
  const data = table.data as Uint8Array | Int8Array;
  const operand = ctx.builder.constant(type, table.dims, data, q);
  return { operand, spec: { type, elementType: table.type, quant: q } };
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
    const table = quantizedTable(ctx, node, x);
    const spec = table?.spec ?? sameTypeAs(ctx, x);
    const source = table?.operand ?? ctx.operand(x);
    const constantIndices = ctx.constant(idx);
    if (constantIndices && constantIndices.dims.length === 0) {
      // NNAPI indices are a tensor: gather [i], then drop the axis.
      const one = ctx.builder.constant(
        "TENSOR_INT32",
        [1],
        toInt32(constantIndices.data, "Gather's indices"),
      );
      const [picked] = ctx.emit("GATHER", [source, ctx.builder.int32(axis), one], [spec]);
      const squeezed = squeezeOperand(ctx, picked, { spec, axes: [axis] });
      ctx.setOperand(node.outputs[0], squeezed, spec.elementType);
      return;
    }
    const indices = constantIndices
      ? ctx.builder.constant(
        "TENSOR_INT32",
        constantIndices.dims,
        toInt32(constantIndices.data, "Gather's indices"),
      )
      : ctx.operand(idx);
    ctx.emitAs(node.outputs[0], "GATHER", [source, ctx.builder.int32(axis), indices], spec);
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

/** The most axes NNAPI's STRIDED_SLICE takes. */
const STRIDED_SLICE_RANK = 4;

/**
 * A Slice as SLICE, which takes any rank and TENSOR_INT32 (STRIDED_SLICE takes neither) but
 * steps of 1 only, along sliced extents known at conversion. Undefined when it cannot.
 */
function sliceBySize(
  ctx: ConversionContext,
  x: string,
  p: ReturnType<typeof sliceParams>,
): BuiltOperand | undefined {
  const dims = ctx.dims(x);
  if (p.steps.some((s) => s !== 1) || p.axes.some((axis) => dims[axis] === 0)) return undefined;
  const w = sliceWindow(dims, p);
  const sliced = new Set(p.axes);
  const size = dims.map((_, axis) => sliced.has(axis) ? w.count[axis] : -1);
  const window = [int32Vector(ctx, w.begin), int32Vector(ctx, size)];
  return ctx.emit("SLICE", [ctx.operand(x), ...window], [sameTypeAs(ctx, x)])[0];
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
    if (boundsAtExecution(node, ctx)) return sliceAtExecution(node, ctx);
    const x = node.inputs[0];
    const dims = ctx.dims(x);
    const p = sliceParams(node, ctx, dims.length);
    if (dims.length > STRIDED_SLICE_RANK || ctx.operand(x).type === "TENSOR_INT32") {
      const window = sliceBySize(ctx, x, p);
      if (window) return ctx.setOperand(node.outputs[0], window, ctx.elementType(x));
      if (dims.length > STRIDED_SLICE_RANK) {
        throw new Error(
          `a rank-${dims.length} Slice (STRIDED_SLICE takes rank <= ${STRIDED_SLICE_RANK}) runs ` +
            "as SLICE, which needs steps of 1 and the sliced extents known at conversion; " +
            `steps [${p.steps}] along axes [${p.axes}] of [${dims}]`,
        );
      }
    }
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
    const vector = (values: number[]) => int32Vector(ctx, values);
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

/** The element type Cast's `to` names. */
function castTarget(node: NodeView): ElementType {
  const type = elementType(node.int("to"));
  if (!["float32", "float16", "int32", "int64", "bool"].includes(type)) {
    throw new Error(`Cast to ${type.replace(/^element type /, "")} is not supported`);
  }
  return type as ElementType;
}

const cast: Rule = {
  moves: [0],
  fold(node, [x]) {
    const to = castTarget(node);
    if (x!.partial) {
      // Extents known only at execution pass through integer casts (exporters emit Shape ->
      // Cast(int32) -> Slice -> Cast(int64) -> Concat -> Reshape); partial tensors stay int64,
      // whose Float64Array holds the symbols. To another type they are computed at execution.
      return to === "int32" || to === "int64" ? [x!] : undefined;
    }
    const out = allocateHost(to, x!.dims);
    const integer = to === "int32" || to === "int64";
    for (let i = 0; i < x!.data.length; i++) {
      const v = x!.data[i];
      // NaN casts to true, as ONNX has it.
      out.data[i] = to === "bool" ? (v !== 0 ? 1 : 0) : integer ? Math.trunc(v) : v;
    }
    return [out];
  },
  convert(node, ctx) {
    const x = node.inputs[0];
    const to = castTarget(node);
    const from = sameTypeAs(ctx, x);
    const spec = specOf(to);
    const operand = ctx.operand(x);
    let result: BuiltOperand;
    if (from.type === spec.type) {
      // int64 <-> int32 are both TENSOR_INT32 here.
      result = operand;
    } else if (from.type === "TENSOR_BOOL8") {
      // NNAPI's CAST takes no booleans (but into themselves).
      result = numbersFromBool(ctx, operand, { spec, what: `Cast from bool to ${to}` });
    } else if (spec.type === "TENSOR_BOOL8") {
      result = boolFromNumbers(ctx, operand, from);
    } else {
      [result] = ctx.emit("CAST", [operand], [spec]);
    }
    ctx.setOperand(node.outputs[0], result, to);
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
  Concat: concat,
  Shape: shapeRule,
  Size: size,
  Gather: gather,
  Slice: slice,
  Constant: constant,
  Cast: cast,
  Identity: identity,
  Dropout: identity,
};
