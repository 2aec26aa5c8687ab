/**
 * Reductions: ReduceMean/Sum/Max/Min/Prod onto MEAN and REDUCE_* (axes as an attribute
 * before opset 18, ReduceSum's since 13; noop_with_empty_axes), ArgMax/ArgMin onto
 * ARGMAX/ARGMIN (keepdims by a reshape), and the variadic Sum/Max/Min/Mean as chains.
 */
import type { OperationType } from "../../../nnapi/types.ts";
import type { ConversionContext, NodeView } from "../context.ts";
import type { Rule } from "../rule.ts";
import { normalizeAxis, requireFloat, sameTypeAs, specOf } from "./common.ts";

const NO_ACTIVATION = 0;

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

function reduce(type: OperationType, inputSince: number): Rule {
  return {
    convert(node, ctx) {
      const x = node.inputs[0];
      requireFloat(ctx, x);
      const rank = ctx.dims(x).length;
      const axes = reduceAxes(node, ctx, rank, inputSince);
      if (axes === undefined) return ctx.alias(node.outputs[0], x);
      const keep = node.int("keepdims", 1) === 1;
      const s = ctx.builder;
      const axesOperand = s.constant("TENSOR_INT32", [axes.length], new Int32Array(axes));
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
      ctx.notes.push(`${node.opType} '${node.name}' returns int32 indices (int64 in ONNX)`);
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
          ? ctx.emit("ADD", [a, b, ctx.builder.int32(NO_ACTIVATION)], [spec])[0]
          : ctx.emit(type, [a, b], [spec])[0];
      let value = ctx.operand(names[0]);
      for (const name of names.slice(1)) value = binary(value, ctx.operand(name));
      if (mean && names.length > 1) {
        const scale = ctx.builder.constant(
          "TENSOR_FLOAT32",
          [1],
          new Float32Array([1 / names.length]),
        );
        [value] = ctx.emit("MUL", [value, scale, ctx.builder.int32(NO_ACTIVATION)], [spec]);
      }
      if (names.length === 1) return ctx.alias(node.outputs[0], names[0]);
      ctx.setOperand(node.outputs[0], value, spec.elementType);
    },
  };
}

export const REDUCE_RULES: Record<string, Rule> = {
  ReduceMean: reduce("MEAN", 18),
  ReduceSum: reduce("REDUCE_SUM", 13),
  ReduceMax: reduce("REDUCE_MAX", 18),
  ReduceMin: reduce("REDUCE_MIN", 18),
  ReduceProd: reduce("REDUCE_PROD", 18),
  ArgMax: argReduce("ARGMAX"),
  ArgMin: argReduce("ARGMIN"),
  Sum: variadic("ADD"),
  Max: variadic("MAXIMUM"),
  Min: variadic("MINIMUM"),
  Mean: variadic("ADD", true),
};
