/**
 * Elementwise ONNX operators: the broadcasting arithmetic (Add, Sub, Mul, Div, Pow), unary
 * math, and the activations (Relu, Clip, Sigmoid, Tanh, Elu, LeakyRelu, PRelu, HardSwish,
 * HardSigmoid), each onto its NNAPI operation, folded when the inputs are constants.
 */
import { FUSED_NONE } from "../../../nnapi/types.ts";
import type { OperationType } from "../../../nnapi/types.ts";
import type { BuiltOperand } from "../../graph_builder.ts";
import type { ConversionContext } from "../context.ts";
import type { NodeView } from "../node_view.ts";
import type { Rule } from "../rule.ts";
import type { HostTensor } from "../tensors.ts";
import {
  floatConstant,
  foldBinary,
  foldUnary,
  isIntegerType,
  requireFloat,
  sameTypeAs,
} from "./common.ts";

function binary(type: OperationType, f: (x: number, y: number) => number): Rule {
  return {
    fold: (_node, [a, b]) => [foldBinary(a!, b!, f)],
    convert(node, ctx) {
      const [a, b] = node.inputs;
      ctx.emitAs(
        node.outputs[0],
        type,
        [ctx.operand(a), ctx.operand(b), ctx.builder.int32(FUSED_NONE)],
        sameTypeAs(ctx, a),
      );
    },
  };
}

function unary(type: OperationType, f?: (x: number) => number): Rule {
  return {
    ...(f
      ? { fold: (_node: NodeView, [x]: readonly (HostTensor | undefined)[]) => [foldUnary(x!, f)] }
      : {}),
    convert(node, ctx) {
      const x = node.inputs[0];
      requireFloat(ctx, x);
      ctx.emitAs(node.outputs[0], type, [ctx.operand(x)], sameTypeAs(ctx, x));
    },
  };
}

/** A float tensor [1] holding `value`, in the element type of `like`. */
function scalarTensor(ctx: ConversionContext, like: string, value: number) {
  return floatConstant(ctx, sameTypeAs(ctx, like), [1], [value]);
}

/** A Clip bound: a number known at conversion, or a runtime value (broadcast by NNAPI). */
type Bound = number | BuiltOperand;

/**
 * max(x, lo) then min(., hi) with NNAPI's MAXIMUM/MINIMUM, skipping infinite bounds (RELU,
 * RELU1, RELU6 for the bounds they have).
 */
function clamp(ctx: ConversionContext, node: NodeView, lo: Bound, hi: Bound): void {
  const x = node.inputs[0];
  const spec = sameTypeAs(ctx, x);
  if (lo === 0 && hi === 6) {
    return void ctx.emitAs(node.outputs[0], "RELU6", [ctx.operand(x)], spec);
  }
  if (lo === -1 && hi === 1) {
    return void ctx.emitAs(node.outputs[0], "RELU1", [ctx.operand(x)], spec);
  }
  if (lo === 0 && hi === Infinity) {
    return void ctx.emitAs(node.outputs[0], "RELU", [ctx.operand(x)], spec);
  }
  const operand = (b: Bound) => typeof b === "number" ? scalarTensor(ctx, x, b) : b;
  let value = ctx.operand(x);
  if (lo !== -Infinity) [value] = ctx.emit("MAXIMUM", [value, operand(lo)], [spec]);
  if (hi !== Infinity) [value] = ctx.emit("MINIMUM", [value, operand(hi)], [spec]);
  ctx.setOperand(node.outputs[0], value, spec.elementType);
}

/** An optional bound input (Clip since opset 11): its value if constant, else its operand. */
function bound(ctx: ConversionContext, node: NodeView, i: number, fallback: number): Bound {
  const name = node.input(i);
  if (!name) return fallback;
  const t = ctx.constant(name);
  return t ? t.data[0] : ctx.operand(name);
}

const clip: Rule = {
  fold(node, [x, min, max], ctx) {
    const lo = ctx.opset < 11 ? node.float("min", -Infinity) : min ? min.data[0] : -Infinity;
    const hi = ctx.opset < 11 ? node.float("max", Infinity) : max ? max.data[0] : Infinity;
    return [foldUnary(x!, (v) => Math.min(Math.max(v, lo), hi))];
  },
  convert(node, ctx) {
    requireFloat(ctx, node.inputs[0]);
    if (ctx.opset < 11) {
      clamp(ctx, node, node.float("min", -Infinity), node.float("max", Infinity));
    } else {
      clamp(ctx, node, bound(ctx, node, 1, -Infinity), bound(ctx, node, 2, Infinity));
    }
  },
};

const leakyRelu: Rule = {
  convert(node, ctx) {
    const x = node.inputs[0];
    requireFloat(ctx, x);
    const alpha = scalarTensor(ctx, x, node.float("alpha", 0.01));
    ctx.emitAs(node.outputs[0], "PRELU", [ctx.operand(x), alpha], sameTypeAs(ctx, x));
  },
};

const prelu: Rule = {
  convert(node, ctx) {
    const [x, slope] = node.inputs;
    requireFloat(ctx, x);
    ctx.emitAs(node.outputs[0], "PRELU", [ctx.operand(x), ctx.operand(slope)], sameTypeAs(ctx, x));
  },
};

const elu: Rule = {
  convert(node, ctx) {
    const x = node.inputs[0];
    requireFloat(ctx, x);
    const alpha = ctx.elementType(x) === "float16"
      ? ctx.builder.constant("FLOAT16", [], new Float16Array([node.float("alpha", 1)]))
      : ctx.builder.float32(node.float("alpha", 1));
    ctx.emitAs(node.outputs[0], "ELU", [ctx.operand(x), alpha], sameTypeAs(ctx, x));
  },
};

/** HardSigmoid: clamp(alpha * x + beta, 0, 1). */
const hardSigmoid: Rule = {
  convert(node, ctx) {
    const x = node.inputs[0];
    requireFloat(ctx, x);
    const spec = sameTypeAs(ctx, x);
    const none = ctx.builder.int32(FUSED_NONE);
    const alpha = scalarTensor(ctx, x, node.float("alpha", 0.2));
    const beta = scalarTensor(ctx, x, node.float("beta", 0.5));
    const [scaled] = ctx.emit("MUL", [ctx.operand(x), alpha, none], [spec]);
    const [shifted] = ctx.emit("ADD", [scaled, beta, none], [spec]);
    const [low] = ctx.emit("MAXIMUM", [shifted, scalarTensor(ctx, x, 0)], [spec]);
    ctx.emitAs(node.outputs[0], "MINIMUM", [low, scalarTensor(ctx, x, 1)], spec);
  },
};

/** ONNX Div truncates integers; floats divide exactly. */
function divide(x: number, y: number, integer: boolean): number {
  return integer ? Math.trunc(x / y) : x / y;
}

export const ELEMENTWISE_RULES: Record<string, Rule> = {
  Add: binary("ADD", (x, y) => x + y),
  Sub: binary("SUB", (x, y) => x - y),
  Mul: binary("MUL", (x, y) => x * y),
  Div: {
    fold: (_node, [a, b]) => [foldBinary(a!, b!, (x, y) => divide(x, y, isIntegerType(a!.type)))],
    convert: binary("DIV", (x, y) => x / y).convert,
  },
  Pow: {
    fold: (_node, [a, b]) => [foldBinary(a!, b!, (x, y) => x ** y)],
    convert(node, ctx) {
      const [a, b] = node.inputs;
      requireFloat(ctx, a);
      ctx.emitAs(node.outputs[0], "POW", [ctx.operand(a), ctx.operand(b)], sameTypeAs(ctx, a));
    },
  },
  Relu: unary("RELU", (x) => Math.max(x, 0)),
  Sigmoid: unary("LOGISTIC", (x) => 1 / (1 + Math.exp(-x))),
  Tanh: unary("TANH", Math.tanh),
  Exp: unary("EXP", Math.exp),
  Log: unary("LOG", Math.log),
  Sqrt: unary("SQRT", Math.sqrt),
  Abs: unary("ABS", Math.abs),
  Neg: unary("NEG", (x) => -x),
  Sin: unary("SIN", Math.sin),
  Cos: {
    fold: (_node, [x]) => [foldUnary(x!, Math.cos)],
    // NNAPI has no COS: 1 - 2 sin^2(x / 2), whose halving is exact, where sin(x + pi/2)
    // would round x + pi/2 first (an absolute error of a few float32 steps of 1).
    convert(node, ctx) {
      const x = node.inputs[0];
      requireFloat(ctx, x);
      const spec = sameTypeAs(ctx, x);
      const none = ctx.builder.int32(FUSED_NONE);
      const emit = (type: OperationType, inputs: BuiltOperand[]) =>
        ctx.emit(type, inputs, [spec])[0];
      const half = emit("MUL", [ctx.operand(x), scalarTensor(ctx, x, 0.5), none]);
      const sine = emit("SIN", [half]);
      const square = emit("MUL", [sine, sine, none]);
      const twice = emit("MUL", [square, scalarTensor(ctx, x, -2), none]);
      ctx.emitAs(node.outputs[0], "ADD", [twice, scalarTensor(ctx, x, 1), none], spec);
    },
  },
  Floor: unary("FLOOR", Math.floor),
  HardSwish: unary("HARD_SWISH"),
  Clip: clip,
  LeakyRelu: leakyRelu,
  PRelu: prelu,
  Elu: elu,
  HardSigmoid: hardSigmoid,
  Not: {
    fold: (_node, [x]) => [foldUnary(x!, (v) => v ? 0 : 1)],
    convert(node, ctx) {
      const x = node.inputs[0];
      ctx.emitAs(node.outputs[0], "LOGICAL_NOT", [ctx.operand(x)], sameTypeAs(ctx, x));
    },
  },
};
