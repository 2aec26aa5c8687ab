/**
 * Comparisons and selection: Equal, Greater, Less, GreaterOrEqual, LessOrEqual onto NNAPI's
 * comparisons (TENSOR_BOOL8 results), And/Or onto the logical operations, Where onto SELECT
 * (which does not broadcast: the condition and values are broadcast to the output's shape
 * first, at conversion where the shapes are known, else at execution).
 */
import { FUSED_NONE } from "../../../nnapi/types.ts";
import type { OperationType } from "../../../nnapi/types.ts";
import type { BuiltOperand } from "../../graph_builder.ts";
import type { ConversionContext, OutputSpec } from "../context.ts";
import type { Rule } from "../rule.ts";
import { allocateHost, hostValues, nnapiConstant } from "../tensors.ts";
import { broadcastShape } from "../../../kernels/elementwise_binary.ts";
import { sameShapes } from "../symbolic_shapes.ts";
import {
  broadcastDims,
  broadcastTo,
  filledLike,
  foldBinary,
  knownProduct,
  sameDims,
  sameTypeAs,
  specOf,
  tensorConstant,
} from "./common.ts";

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
    const names = node.inputs;
    const shapes = names.map((name) => ctx.dims(name));
    // A constant's dims are all known ([] a scalar); an operand's [] is an unknown rank.
    const known = names.every((name, i) =>
      ctx.constant(name) !== undefined ||
      (shapes[i].length > 0 && knownProduct(shapes[i]) !== undefined)
    );
    if (!known) {
      // One shape at every execution (one symbol), or broadcast there.
      if (!sameShapes(ctx, names)) return whereAtExecution(ctx, node.outputs[0], names);
      const values = sameTypeAs(ctx, names[1]);
      const inputs = names.map((name) => ctx.operand(name));
      return void ctx.emitAs(node.outputs[0], "SELECT", inputs, values);
    }
    const dims = shapes.reduce<number[] | null>((out, d) => out && broadcastShape(out, d), []);
    if (!dims) {
      throw new Error(`the shapes ${shapes.map((d) => `[${d}]`).join(", ")} do not broadcast`);
    }
    const values = sameTypeAs(ctx, names[1]);
    const [c, a, b] = names.map((name, i) => {
      const spec = i === 0 ? specOf("bool") : values;
      const t = ctx.constant(name);
      if (!t || sameDims(t.dims, dims)) return broadcastOperand(ctx, ctx.operand(name), spec, dims);
      // A constant is broadcast on the host.
      const { type, data } = nnapiConstant(broadcastTo(t, dims));
      return ctx.builder.constant(type, dims, data);
    });
    ctx.emitAs(node.outputs[0], "SELECT", [c, a, b], values);
  },
};

/**
 * Where with shapes known only at execution: the condition and both values broadcast to the
 * output's shape there (zeros FILLed to each input's shape and added up give it: values ADD
 * them, the condition ORs a false of that shape), then SELECT.
 */
function whereAtExecution(ctx: ConversionContext, output: string, names: readonly string[]) {
  const values = sameTypeAs(ctx, names[1]);
  const dims = names.map((name) => ctx.dims(name)).reduce((a, b) => broadcastDims(a, b));
  const none = ctx.builder.int32(FUSED_NONE);
  // Zeros of each input's shape: constants where it is known, FILLed at execution otherwise.
  const zeros = names.flatMap((name) => {
    const shape = ctx.dims(name);
    if (shape.length === 0 || shape.every((d) => d === 1)) return []; // broadcasts anyway
    const count = knownProduct(shape);
    return [
      count === undefined
        ? filledLike(ctx, ctx.operand(name), 0, values)
        : tensorConstant(ctx, values, shape, hostValues(count)),
    ];
  }).reduce((sum, z) => ctx.emit("ADD", [sum, z, none], [{ ...values, dims }])[0]);
  const bool = { ...specOf("bool"), dims };
  const [falses] = ctx.emit("NOT_EQUAL", [zeros, zeros], [bool]);
  const [c, a, b] = names.map((name) => ctx.operand(name));
  const [cond] = ctx.emit("LOGICAL_OR", [c, falses], [bool]);
  const [left, right] = [a, b].map((x) =>
    ctx.emit("ADD", [x, zeros, none], [{ ...values, dims }])[0]
  );
  ctx.emitAs(output, "SELECT", [cond, left, right], { ...values, dims });
}

/**
 * `x` broadcast to `dims` (all known): LOGICAL_AND with an all-true constant of that shape
 * for a condition, ADD of a zero constant for values.
 */
function broadcastOperand(
  ctx: ConversionContext,
  x: BuiltOperand,
  spec: OutputSpec,
  dims: readonly number[],
): BuiltOperand {
  if (sameDims(x.dimensions, dims)) return x;
  const count = knownProduct(dims)!;
  if (spec.type === "TENSOR_BOOL8") {
    const yes = tensorConstant(ctx, spec, dims, hostValues(count).fill(1));
    return ctx.emit("LOGICAL_AND", [x, yes], [spec])[0];
  }
  const zeros = tensorConstant(ctx, spec, dims, hostValues(count));
  return ctx.emit("ADD", [x, zeros, ctx.builder.int32(FUSED_NONE)], [spec])[0];
}

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
