/**
 * Softmax and LogSoftmax onto NNAPI's SOFTMAX / LOG_SOFTMAX along one axis. Before opset 13
 * ONNX normalizes over all axes from `axis` on (the input coerced to 2-D): unless that is
 * the last axis alone, the input is reshaped to [outer, inner] and back.
 */
import type { OperationType } from "../../../nnapi/types.ts";
import type { Rule } from "../rule.ts";
import { knownProduct, normalizeAxis, requireFloat, sameTypeAs } from "./common.ts";

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
      const outer = knownProduct(dims.slice(0, axis));
      const inner = knownProduct(dims.slice(axis));
      if (inner === undefined || (outer === undefined && dims.includes(0))) {
        if (inner === undefined) {
          throw new Error("the normalized extents must be known at conversion");
        }
      }
      const rows = s.constant("TENSOR_INT32", [2], new Int32Array([outer ?? -1, inner]));
      const [flat] = ctx.emit("RESHAPE", [ctx.operand(x), rows], [spec]);
      const [normalized] = ctx.emit(type, [flat, beta, s.int32(1)], [spec]);
      if (dims.filter((d) => d === 0).length > 1) {
        throw new Error("several extents known only at execution");
      }
      const back = s.constant(
        "TENSOR_INT32",
        [dims.length],
        new Int32Array(dims.map((d) => d || -1)),
      );
      ctx.emitAs(node.outputs[0], "RESHAPE", [normalized, back], spec);
    },
  };
}

export const SOFTMAX_RULES: Record<string, Rule> = {
  Softmax: softmax("SOFTMAX"),
  LogSoftmax: softmax("LOG_SOFTMAX"),
};
