/**
 * Softmax and LogSoftmax onto NNAPI's SOFTMAX / LOG_SOFTMAX along one axis. Before opset 13
 * ONNX normalizes over all axes from `axis` on (the input coerced to 2-D): unless that is
 * the last axis alone, the input is reshaped to [outer, inner] and back (computed at
 * execution where extents are known only then).
 */
import type { OperationType } from "../../../nnapi/types.ts";
import type { Rule } from "../rule.ts";
import { knownProduct, normalizeAxis, requireFloat, sameTypeAs } from "./common.ts";
import { reshapeOperand } from "./reshape.ts";
import type { RuntimeExtent } from "../runtime_extents.ts";

function softmax(type: OperationType): Rule {
  return {
    convert(node, ctx) {
      const x = node.inputs[0];
      requireFloat(ctx, x);
      const dims = ctx.dims(x);
      const spec = sameTypeAs(ctx, x);
      const s = ctx.builder;
      const beta = s.float32(1);
      const legacy = ctx.opset < 13;
      const axis = normalizeAxis(node.int("axis", legacy ? 1 : -1), dims.length);
      const trailing = dims.slice(axis + 1);
      if (!legacy || trailing.every((d) => d === 1)) {
        ctx.emitAs(node.outputs[0], type, [ctx.operand(x), beta, s.int32(axis)], spec);
        return;
      }
      // Rows of the normalized extents, and back; extents known only at execution are
      // computed there (SHAPE of x, their products).
      const operand = ctx.operand(x);
      const product = (axes: number[]): RuntimeExtent => ({
        factors: axes.filter((a) => dims[a] === 0).map((a) => ({
          operand: operand.index,
          axis: a,
        })),
        scale: axes.reduce((p, a) => p * (dims[a] || 1), 1),
      });
      const lead = dims.slice(0, axis).map((_, a) => a);
      const trail = dims.slice(axis).map((_, a) => axis + a);
      const flat = reshapeOperand(ctx, operand, {
        spec,
        dims: [knownProduct(dims.slice(0, axis)) ?? 0, knownProduct(dims.slice(axis)) ?? 0],
        extents: [product(lead), product(trail)],
      });
      const [normalized] = ctx.emit(type, [flat, beta, s.int32(1)], [spec]);
      const back = reshapeOperand(ctx, normalized, {
        spec,
        dims,
        extents: dims.map((d, a) => d === 0 ? product([a]) : undefined),
      });
      ctx.setOperand(node.outputs[0], back, spec.elementType);
    },
  };
}

export const SOFTMAX_RULES: Record<string, Rule> = {
  Softmax: softmax("SOFTMAX"),
  LogSoftmax: softmax("LOG_SOFTMAX"),
};
