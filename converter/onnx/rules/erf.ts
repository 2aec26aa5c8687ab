/**
 * Erf and Gelu: ERF (nnserve's extension; NNAPI lacks the error function), and Gelu (opset
 * 20) as 0.5 x (1 + erf(x / sqrt 2)), or its tanh form when approximate = "tanh". Written
 * as ONNX spells Gelu out, so a device that hands it to onnxruntime gets its fused Gelu.
 */
import { FUSED_NONE } from "../../../nnapi/types.ts";
import type { BuiltOperand } from "../../graph_builder.ts";
import { erf as erfHost } from "../../../kernels/elementwise_math.ts";
import type { Rule } from "../rule.ts";
import { floatConstant, foldUnary, requireFloat, sameTypeAs } from "./common.ts";

const erf: Rule = {
  fold: (_node, [x]) => [foldUnary(x!, erfHost)],
  convert(node, ctx) {
    const x = node.inputs[0];
    requireFloat(ctx, x);
    ctx.emitAs(node.outputs[0], "ERF", [ctx.operand(x)], sameTypeAs(ctx, x));
  },
};

const gelu: Rule = {
  convert(node, ctx) {
    const x = node.inputs[0];
    requireFloat(ctx, x);
    const spec = sameTypeAs(ctx, x);
    const s = ctx.builder;
    const none = s.int32(FUSED_NONE);
    const constant = (v: number) => floatConstant(ctx, spec, [1], [v]);
    const one = (type: Parameters<typeof ctx.emit>[0], inputs: BuiltOperand[]) =>
      ctx.emit(type, inputs, [spec])[0];
    const input = ctx.operand(x);
    let inner: BuiltOperand;
    if (node.string("approximate", "none") === "tanh") {
      // tanh(sqrt(2/pi) (x + 0.044715 x^3))
      const cube = one("MUL", [one("MUL", [input, input, none]), input, none]);
      const sum = one("ADD", [input, one("MUL", [cube, constant(0.044715), none]), none]);
      inner = one("TANH", [one("MUL", [sum, constant(Math.sqrt(2 / Math.PI)), none])]);
    } else {
      inner = one("ERF", [one("DIV", [input, constant(Math.SQRT2), none])]);
    }
    const half = one("MUL", [input, constant(0.5), none]);
    ctx.emitAs(node.outputs[0], "MUL", [half, one("ADD", [inner, constant(1), none]), none], spec);
  },
};

export const ERF_RULES: Record<string, Rule> = { Erf: erf, Gelu: gelu };
