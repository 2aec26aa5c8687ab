/**
 * Pad onto PAD_V2 (constant mode) or slices and concatenations (reflect, edge), and Split
 * onto SPLIT (equal parts) or one SLICE per part (folded when its input is a constant).
 */
import type { Rule } from "../rule.ts";
import {
  int32Vector,
  intList,
  knownProduct,
  normalizeAxis,
  requireFloat,
  sameTypeAs,
} from "./common.ts";
import type { BuiltOperand } from "../../graph_builder.ts";
import type { ConversionContext } from "../context.ts";
import type { NodeView } from "../node_view.ts";
import { allocateHost } from "../tensors.ts";

/** ONNX pads [x1_begin, x2_begin, ..., x1_end, ...] for all axes. */
function padAmounts(node: NodeView, ctx: ConversionContext, rank: number): number[] {
  let pads: number[];
  let axes = Array.from({ length: rank }, (_, i) => i);
  if (ctx.opset < 11) {
    pads = node.ints("pads");
  } else {
    pads = [...ctx.requireConstant(node.inputs[1], "Pad's pads").data];
    const axesName = node.input(3);
    if (axesName) {
      axes = [...ctx.requireConstant(axesName, "Pad's axes").data].map((a) =>
        normalizeAxis(a, rank)
      );
    }
  }
  if (pads.length !== 2 * axes.length) {
    throw new Error(`pads has ${pads.length} values for ${axes.length} axes`);
  }
  const full = new Array(2 * rank).fill(0);
  axes.forEach((a, i) => {
    full[a] = pads[i];
    full[rank + a] = pads[axes.length + i];
  });
  if (full.some((p) => p < 0)) throw new Error("negative pads (cropping) are not supported");
  return full;
}

const pad: Rule = {
  convert(node, ctx) {
    const x = node.inputs[0];
    requireFloat(ctx, x);
    const mode = node.string("mode", "constant");
    const rank = ctx.dims(x).length;
    const full = padAmounts(node, ctx, rank);
    if (mode === "reflect" || mode === "edge") {
      ctx.setOperand(
        node.outputs[0],
        padBySlices(ctx, x, full, mode),
        sameTypeAs(ctx, x).elementType,
      );
      return;
    }
    if (mode !== "constant") throw new Error(`mode '${mode}' is not an ONNX pad mode`);
    const value = ctx.opset < 11
      ? node.float("value", 0)
      : node.input(2)
      ? ctx.requireConstant(node.inputs[2], "Pad's constant_value").data[0]
      : 0;
    const paddings = new Int32Array(2 * rank);
    for (let a = 0; a < rank; a++) {
      paddings[2 * a] = full[a];
      paddings[2 * a + 1] = full[rank + a];
    }
    const s = ctx.builder;
    const spec = sameTypeAs(ctx, x);
    const padValue = spec.type === "TENSOR_FLOAT16"
      ? s.constant("FLOAT16", [], new Float16Array([value]))
      : s.float32(value);
    ctx.emitAs(node.outputs[0], "PAD_V2", [
      ctx.operand(x),
      s.constant("TENSOR_INT32", [rank, 2], paddings),
      padValue,
    ], spec);
  },
};

/**
 * Reflect and edge padding, which NNAPI 1.3 lacks, axis by axis: the border comes from
 * STRIDED_SLICE (a negative stride reverses it for reflect; edge repeats the end row with
 * TILE) and is joined to the tensor with CONCATENATION.
 */
function padBySlices(
  ctx: ConversionContext,
  x: string,
  full: number[],
  mode: "reflect" | "edge",
): BuiltOperand {
  const dims = [...ctx.dims(x)];
  const rank = dims.length;
  const spec = sameTypeAs(ctx, x);
  const s = ctx.builder;
  const vector = (v: number[]) => int32Vector(ctx, v);
  let value = ctx.operand(x);
  for (let axis = 0; axis < rank; axis++) {
    const [before, after] = [full[axis], full[rank + axis]];
    if (before === 0 && after === 0) continue;
    const d = dims[axis];
    if (mode === "reflect" && d !== 0 && (before >= d || after >= d)) {
      throw new Error(
        `reflect padding of ${Math.max(before, after)} needs an extent above it (${d})`,
      );
    }
    // Rows [from, to) of the axis stepping by `step`: a negative index counts from the end
    // (so an extent known only at execution works), `to` undefined runs to the edge the
    // step heads for. Every other axis is taken whole (its end mask).
    const rows = (from: number, to: number | undefined, step: number) => {
      const begin = dims.map((_, i) => i === axis ? from : 0);
      const end = dims.map((_, i) => i === axis ? to ?? 0 : 0);
      const strides = dims.map((_, i) => i === axis ? step : 1);
      const endMask = dims.reduce(
        (mask, _, i) => i === axis && to !== undefined ? mask : mask | (1 << i),
        0,
      );
      return ctx.emit("STRIDED_SLICE", [
        value,
        vector(begin),
        vector(end),
        vector(strides),
        s.int32(0),
        s.int32(endMask),
        s.int32(0),
      ], [spec])[0];
    };
    const repeat = (row: BuiltOperand, times: number) =>
      ctx.emit("TILE", [row, vector(dims.map((_, i) => i === axis ? times : 1))], [spec])[0];
    const parts: BuiltOperand[] = [];
    if (before > 0) {
      // Rows before..1 reversed; edge: row 0 repeated.
      parts.push(mode === "reflect" ? rows(before, 0, -1) : repeat(rows(0, 1, 1), before));
    }
    parts.push(value);
    if (after > 0) {
      // Rows d-2 down to d-1-after, counted from the end; edge: row d-1 repeated.
      parts.push(
        mode === "reflect" ? rows(-2, -2 - after, -1) : repeat(rows(-1, undefined, 1), after),
      );
    }
    [value] = ctx.emit("CONCATENATION", [...parts, s.int32(axis)], [spec]);
    dims[axis] = d === 0 ? 0 : d + before + after;
  }
  return value;
}

/**
 * The extents of Split's parts along an extent: `split` (an attribute before opset 13, an
 * input since), else `num_outputs` parts of ceil(extent / num_outputs), the last smaller
 * (opset 18), else equal parts. Undefined for equal parts of an extent known only at
 * execution (0).
 */
function splitSizes(node: NodeView, ctx: ConversionContext, extent: number): number[] | undefined {
  const given = intList(node, ctx, "split", 1, 13);
  if (given) {
    const total = given.reduce((a, b) => a + b, 0);
    if (extent !== 0 && total !== extent) {
      throw new Error(`the parts [${given}] add up to ${total}, not the extent ${extent}`);
    }
    return given;
  }
  if (extent === 0) return undefined;
  const count = node.outputs.length;
  if (ctx.opset >= 18 && node.has("num_outputs")) {
    const part = Math.ceil(extent / node.int("num_outputs"));
    return Array.from({ length: count }, (_, i) => Math.max(0, Math.min(part, extent - i * part)));
  }
  if (extent % count !== 0) {
    throw new Error(`an extent of ${extent} does not split into ${count} equal parts`);
  }
  return new Array(count).fill(extent / count);
}

const split: Rule = {
  // The parts are moved, so a partial tensor (a Shape) splits too.
  moves: [0],
  fold(node, [x], ctx) {
    const dims = x!.dims;
    const axis = normalizeAxis(node.int("axis", 0), dims.length);
    const extent = dims[axis];
    const sizes = splitSizes(node, ctx, extent) ?? node.outputs.map(() => 0);
    const outer = knownProduct(dims.slice(0, axis)) ?? 0;
    const inner = knownProduct(dims.slice(axis + 1)) ?? 0;
    let begin = 0;
    return sizes.map((n) => {
      const out = allocateHost(x!.type, dims.map((d, i) => i === axis ? n : d));
      for (let o = 0; o < outer; o++) {
        const from = (o * extent + begin) * inner;
        out.data.set(x!.data.subarray(from, from + n * inner), o * n * inner);
      }
      begin += n;
      return out;
    });
  },
  convert(node, ctx) {
    const x = node.inputs[0];
    const dims = ctx.dims(x);
    const axis = normalizeAxis(node.int("axis", 0), dims.length);
    const extent = dims[axis];
    const count = node.outputs.length;
    const sizes = splitSizes(node, ctx, extent);
    const spec = sameTypeAs(ctx, x);
    const s = ctx.builder;
    if (sizes === undefined || sizes.every((n) => n === sizes[0])) {
      const parts = ctx.emit(
        "SPLIT",
        [ctx.operand(x), s.int32(axis), s.int32(count)],
        node.outputs.map(() => spec),
      );
      parts.forEach((part, i) => ctx.setOperand(node.outputs[i], part, spec.elementType));
      return;
    }
    if (extent === 0) throw new Error("unequal parts of an extent known only at execution");
    let begin = 0;
    sizes.forEach((n, i) => {
      const starts = dims.map((_, d) => d === axis ? begin : 0);
      const size = dims.map((_, d) => d === axis ? n : -1);
      const window = [int32Vector(ctx, starts), int32Vector(ctx, size)];
      ctx.emitAs(node.outputs[i], "SLICE", [ctx.operand(x), ...window], spec);
      begin += n;
    });
  },
};

export const PAD_SPLIT_RULES: Record<string, Rule> = { Pad: pad, Split: split };
