/**
 * Erf and Gelu, which NNAPI lacks, built from its elementwise operations: erf(|x|) as
 * 1 - erfc(|x|) with the Chebyshev-fitted erfc of Numerical Recipes (fractional error below
 * 1.2e-7 everywhere), the sign restored with SELECT. Gelu (opset 20) is
 * 0.5 x (1 + erf(x / sqrt 2)), or its tanh form when approximate = "tanh".
 */
import { FUSED_NONE } from "../../../nnapi/types.ts";
import type { BuiltOperand } from "../../graph_builder.ts";
import type { ConversionContext, OutputSpec } from "../context.ts";
import type { Rule } from "../rule.ts";
import { floatConstant, foldUnary, requireFloat, sameTypeAs, specOf } from "./common.ts";

/** erfc(z) for z >= 0: t exp(-z^2 + P(t)), t = 1 / (1 + z/2) (Numerical Recipes' erfcc). */
const ERFC_COEFFICIENTS = [
  -1.26551223,
  1.00002368,
  0.37409196,
  0.09678418,
  -0.18628806,
  0.27886807,
  -1.13520398,
  1.48851587,
  -0.82215223,
  0.17087277,
];

function erfHost(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  let p = 0;
  for (let i = ERFC_COEFFICIENTS.length - 1; i >= 0; i--) p = ERFC_COEFFICIENTS[i] + t * p;
  const e = 1 - t * Math.exp(-z * z + p);
  return x < 0 ? -e : e;
}

/** Emits erf of `input` (an operand of type `spec`). */
export function emitErf(
  ctx: ConversionContext,
  input: BuiltOperand,
  spec: OutputSpec,
): BuiltOperand {
  const s = ctx.builder;
  const none = s.int32(FUSED_NONE);
  const constant = (v: number) => floatConstant(ctx, spec, [1], [v]);
  const one = (type: Parameters<typeof ctx.emit>[0], inputs: BuiltOperand[]) =>
    ctx.emit(type, inputs, [spec])[0];
  const z = one("ABS", [input]);
  const t = one("DIV", [
    constant(1),
    one("ADD", [one("MUL", [z, constant(0.5), none]), constant(1), none]),
    none,
  ]);
  let p = constant(ERFC_COEFFICIENTS[ERFC_COEFFICIENTS.length - 1]);
  for (let i = ERFC_COEFFICIENTS.length - 2; i >= 0; i--) {
    p = one("ADD", [one("MUL", [t, p, none]), constant(ERFC_COEFFICIENTS[i]), none]);
  }
  const exponent = one("SUB", [p, one("MUL", [z, z, none]), none]);
  const erfc = one("MUL", [t, one("EXP", [exponent]), none]);
  const magnitude = one("SUB", [constant(1), erfc, none]);
  const [negative] = ctx.emit("LESS", [input, constant(0)], [specOf("bool")]);
  return ctx.emit("SELECT", [negative, one("NEG", [magnitude]), magnitude], [spec])[0];
}

const erf: Rule = {
  fold: (_node, [x]) => [foldUnary(x!, erfHost)],
  convert(node, ctx) {
    const x = node.inputs[0];
    requireFloat(ctx, x);
    const spec = sameTypeAs(ctx, x);
    ctx.setOperand(node.outputs[0], emitErf(ctx, ctx.operand(x), spec), spec.elementType);
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
      inner = emitErf(ctx, one("MUL", [input, constant(Math.SQRT1_2), none]), spec);
    }
    const half = one("MUL", [input, constant(0.5), none]);
    ctx.emitAs(node.outputs[0], "MUL", [half, one("ADD", [inner, constant(1), none]), none], spec);
  },
};

export const ERF_RULES: Record<string, Rule> = { Erf: erf, Gelu: gelu };
