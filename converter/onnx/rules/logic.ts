/**
 * Comparisons and selection: Equal, Greater, Less, GreaterOrEqual, LessOrEqual onto NNAPI's
 * comparisons (TENSOR_BOOL8 results), And/Or/Xor onto the logical operations, Where onto
 * SELECT (the condition broadcast to the values' shape).
 */
import type { OperationType } from "../../../nnapi/types.ts";
import type { Rule } from "../rule.ts";
import { allocateHost } from "../tensors.ts";
import { broadcastShape } from "../../../kernels/elementwise_binary.ts";
import { broadcastTo, foldBinary, sameTypeAs, specOf } from "./common.ts";

function comparison(type: OperationType, f: (x: number, y: number) => boolean): Rule {
  return {
    fold: (_node, [a, b]) => [foldBinary(a!, b!, (x, y) => f(x, y) ? 1 : 0, "bool")],
    convert(node, ctx) {
      const [a, b] = node.inputs;
      ctx.emitAs(node.outputs[0], type, [ctx.operand(a), ctx.operand(b)], specOf("bool"));
    },
  };
}

function logical(type: OperationType, f: (x: boolean, y: boolean) => boolean): Rule {
  return {
    fold: (_node, [a, b]) => [foldBinary(a!, b!, (x, y) => f(!!x, !!y) ? 1 : 0, "bool")],
    convert(node, ctx) {
      const [a, b] = node.inputs;
      ctx.emitAs(node.outputs[0], type, [ctx.operand(a), ctx.operand(b)], specOf("bool"));
    },
  };
}

const where: Rule = {
  fold(_node, [c, a, b]) {
    const dims = broadcastShape(broadcastShape(c!.dims, a!.dims) ?? [], b!.dims);
    if (!dims) throw new Error("condition and values do not broadcast");
    const [cond, left, right] = [c!, a!, b!].map((t) => broadcastTo(t, dims));
    const out = allocateHost(a!.type, dims);
    for (let i = 0; i < out.data.length; i++) {
      out.data[i] = cond.data[i] ? left.data[i] : right.data[i];
    }
    return [out];
  },
  convert(node, ctx) {
    const [c, a, b] = node.inputs;
    const dims = [ctx.dims(c), ctx.dims(a), ctx.dims(b)];
    const same = dims.every((d) =>
      d.length === dims[1].length && d.every((x, i) => x === dims[1][i] && x !== 0)
    );
    if (!same) {
      throw new Error("Where with broadcasting between condition and values is not supported yet");
    }
    ctx.emitAs(
      node.outputs[0],
      "SELECT",
      [ctx.operand(c), ctx.operand(a), ctx.operand(b)],
      sameTypeAs(ctx, a),
    );
  },
};

export const LOGIC_RULES: Record<string, Rule> = {
  Equal: comparison("EQUAL", (x, y) => x === y),
  Greater: comparison("GREATER", (x, y) => x > y),
  Less: comparison("LESS", (x, y) => x < y),
  GreaterOrEqual: comparison("GREATER_EQUAL", (x, y) => x >= y),
  LessOrEqual: comparison("LESS_EQUAL", (x, y) => x <= y),
  And: logical("LOGICAL_AND", (x, y) => x && y),
  Or: logical("LOGICAL_OR", (x, y) => x || y),
  Where: where,
};
