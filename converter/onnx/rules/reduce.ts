/**
 * Reductions: ReduceMean/Sum/Max/Min/Prod onto MEAN and REDUCE_* (axes as an attribute
 * before opset 18, ReduceSum's since 13; noop_with_empty_axes; Sum/Max/Min/Prod folded on
 * constants of any type, such as the int64 extents of a Shape), ArgMax/ArgMin onto
 * ARGMAX/ARGMIN (keepdims by a reshape), and the variadic Sum/Max/Min/Mean as chains.
 */
import { FUSED_NONE } from "../../../nnapi/types.ts";
import { rowMajorStrides } from "../../../kernels/shape_transform.ts";
import type { OperationType } from "../../../nnapi/types.ts";
import type { ConversionContext } from "../context.ts";
import type { NodeView } from "../node_view.ts";
import type { Rule } from "../rule.ts";
import { allocateHost, type HostTensor } from "../tensors.ts";
import { int32Vector, normalizeAxis, requireFloat, sameTypeAs, specOf } from "./common.ts";

/** How a reduction folds on the host: its start value and how it takes in one element. */
interface HostReduction {
  initial: number;
  combine: (accumulated: number, x: number) => number;
}

/** The reduced axes: an input since `inputSince`, an attribute before; all when absent. */
function reduceAxes(
  node: NodeView,
  ctx: ConversionContext,
  rank: number,
  inputSince: number,
): number[] | undefined {
  let axes: number[] | undefined;
  if (ctx.opset >= inputSince) {
    const name = node.input(1);
    axes = name ? [...ctx.requireConstant(name, "axes").data] : undefined;
  } else if (node.has("axes")) {
    axes = node.ints("axes");
  }
  if (axes === undefined || axes.length === 0) {
    if (node.int("noop_with_empty_axes", 0) === 1) return undefined;
    return Array.from({ length: rank }, (_, i) => i);
  }
  return axes.map((a) => normalizeAxis(a, rank));
}

/** `x` reduced over `axes` on the host (keepdims or not). */
function foldReduce(
  x: HostTensor,
  options: { axes: readonly number[]; keep: boolean; reduction: HostReduction },
): HostTensor {
  const { axes, keep, reduction } = options;
  const kept = x.dims.map((d, axis) => axes.includes(axis) ? 1 : d);
  const out = allocateHost(x.type, kept);
  out.data.fill(reduction.initial);
  // Each input element's output offset: its index along the kept axes.
  const strides = rowMajorStrides(kept).map((s, axis) => axes.includes(axis) ? 0 : s);
  const index = x.dims.map(() => 0);
  for (let i = 0; i < x.data.length; i++) {
    const o = index.reduce((sum, k, axis) => sum + k * strides[axis], 0);
    out.data[o] = reduction.combine(out.data[o], x.data[i]);
    for (let axis = index.length - 1; axis >= 0 && ++index[axis] === x.dims[axis]; axis--) {
      index[axis] = 0;
    }
  }
  return keep ? out : { ...out, dims: x.dims.filter((_, axis) => !axes.includes(axis)) };
}

function reduce(type: OperationType, inputSince: number, host?: HostReduction): Rule {
  return {
    ...(host
      ? {
        fold(node: NodeView, [x]: readonly (HostTensor | undefined)[], ctx: ConversionContext) {
          const axes = reduceAxes(node, ctx, x!.dims.length, inputSince);
          if (axes === undefined) return [x!];
          const keep = node.int("keepdims", 1) === 1;
          return [foldReduce(x!, { axes, keep, reduction: host })];
        },
      }
      : {}),
    convert(node, ctx) {
      const x = node.inputs[0];
      ctx.operand(x); // refuses a value computed from extents known only at execution
      requireFloat(ctx, x);
      const rank = ctx.dims(x).length;
      const axes = reduceAxes(node, ctx, rank, inputSince);
      if (axes === undefined) return ctx.alias(node.outputs[0], x);
      const keep = node.int("keepdims", 1) === 1;
      const s = ctx.builder;
      const axesOperand = int32Vector(ctx, axes);
      const keepOperand = type === "MEAN" ? s.int32(keep ? 1 : 0) : s.bool(keep);
      ctx.emitAs(
        node.outputs[0],
        type,
        [ctx.operand(x), axesOperand, keepOperand],
        sameTypeAs(ctx, x),
      );
    },
  };
}

function argReduce(type: "ARGMAX" | "ARGMIN"): Rule {
  return {
    convert(node, ctx) {
      const x = node.inputs[0];
      const dims = ctx.dims(x);
      const axis = normalizeAxis(node.int("axis", 0), dims.length);
      if (node.int("select_last_index", 0) !== 0) {
        throw new Error("select_last_index is not supported");
      }
      const spec = specOf("int64");
      const [indices] = ctx.emit(type, [ctx.operand(x), ctx.builder.int32(axis)], [spec]);
      if (node.int("keepdims", 1) === 0) {
        ctx.setOperand(node.outputs[0], indices, "int64");
        return;
      }
      const axisOperand = ctx.builder.int32(axis);
      const [kept] = ctx.emit("EXPAND_DIMS", [indices, axisOperand], [spec]);
      ctx.setOperand(node.outputs[0], kept, "int64");
      ctx.notes.push(`${node.opType} returns int32 indices (int64 in ONNX): '${node.name}'`);
    },
  };
}

/** Sum/Max/Min/Mean of any number of inputs, as a chain of binary operations. */
function variadic(type: "ADD" | "MAXIMUM" | "MINIMUM", mean = false): Rule {
  return {
    convert(node, ctx) {
      const names = node.inputs.filter((n) => n);
      const spec = sameTypeAs(ctx, names[0]);
      const binary = (a: ReturnType<typeof ctx.operand>, b: ReturnType<typeof ctx.operand>) =>
        type === "ADD"
          ? ctx.emit("ADD", [a, b, ctx.builder.int32(FUSED_NONE)], [spec])[0]
          : ctx.emit(type, [a, b], [spec])[0];
      let value = ctx.operand(names[0]);
      for (const name of names.slice(1)) value = binary(value, ctx.operand(name));
      if (mean && names.length > 1) {
        const scale = ctx.builder.constant(
          "TENSOR_FLOAT32",
          [1],
          new Float32Array([1 / names.length]),
        );
        [value] = ctx.emit("MUL", [value, scale, ctx.builder.int32(FUSED_NONE)], [spec]);
      }
      if (names.length === 1) return ctx.alias(node.outputs[0], names[0]);
      ctx.setOperand(node.outputs[0], value, spec.elementType);
    },
  };
}

export const REDUCE_RULES: Record<string, Rule> = {
  ReduceMean: reduce("MEAN", 18),
  ReduceSum: reduce("REDUCE_SUM", 13, { initial: 0, combine: (a, x) => a + x }),
  ReduceMax: reduce("REDUCE_MAX", 18, { initial: -Infinity, combine: Math.max }),
  ReduceMin: reduce("REDUCE_MIN", 18, { initial: Infinity, combine: Math.min }),
  ReduceProd: reduce("REDUCE_PROD", 18, { initial: 1, combine: (a, x) => a * x }),
  ArgMax: argReduce("ARGMAX"),
  ArgMin: argReduce("ARGMIN"),
  Sum: variadic("ADD"),
  Max: variadic("MAXIMUM"),
  Min: variadic("MINIMUM"),
  Mean: variadic("ADD", true),
};
