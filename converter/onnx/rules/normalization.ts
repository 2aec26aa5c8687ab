/**
 * InstanceNormalization and LayerNormalization, both decomposed into MEAN, SUB, MUL, RSQRT
 * and ADD over the normalized axes, then the scale and bias.
 */
import { FUSED_NONE } from "../../../nnapi/types.ts";
import type { BuiltOperand } from "../../graph_builder.ts";
import type { ConversionContext } from "../context.ts";
import type { NodeView } from "../node_view.ts";
import type { Rule } from "../rule.ts";
import { floatConstant, normalizeAxis, requireFloat, sameTypeAs } from "./common.ts";

/** (x - mean) / sqrt(variance + epsilon) over `axes`, by MEAN, SUB, MUL, ADD and RSQRT. */
function normalize(
  ctx: ConversionContext,
  x: string,
  axes: number[],
  epsilon: number,
): BuiltOperand {
  const s = ctx.builder;
  const spec = sameTypeAs(ctx, x);
  const none = s.int32(FUSED_NONE);
  const axesOperand = s.constant("TENSOR_INT32", [axes.length], new Int32Array(axes));
  const keep = s.int32(1);
  const input = ctx.operand(x);
  const emit1 = (type: Parameters<typeof ctx.emit>[0], inputs: BuiltOperand[]) =>
    ctx.emit(type, inputs, [spec])[0];
  const mean = emit1("MEAN", [input, axesOperand, keep]);
  const centered = emit1("SUB", [input, mean, none]);
  const variance = emit1("MEAN", [emit1("MUL", [centered, centered, none]), axesOperand, keep]);
  const shifted = emit1("ADD", [
    variance,
    floatConstant(ctx, sameTypeAs(ctx, x), [1], [epsilon]),
    none,
  ]);
  return emit1("MUL", [centered, emit1("RSQRT", [shifted]), none]);
}

/**
 * InstanceNormalization. Not NNAPI's INSTANCE_NORMALIZATION: Android's reference (and so the
 * CTS goldens) divides by sqrt(mean(x^2) + epsilon) rather than the standard deviation, so
 * ONNX's textbook formula is built from MEAN over the spatial axes instead.
 */
const instanceNormalization: Rule = {
  convert(node, ctx) {
    const [x, scale, bias] = node.inputs;
    requireFloat(ctx, x);
    const rank = ctx.dims(x).length;
    if (rank < 3) throw new Error(`input rank ${rank} has no spatial axes`);
    const axes = Array.from({ length: rank - 2 }, (_, i) => i + 2);
    const normalized = normalize(ctx, x, axes, node.float("epsilon", 1e-5));
    const gamma = ctx.requireConstant(scale, "InstanceNormalization's scale").data;
    const beta = ctx.requireConstant(bias, "InstanceNormalization's B").data;
    const perChannel = [gamma.length, ...new Array(rank - 2).fill(1)];
    const spec = sameTypeAs(ctx, x);
    const none = ctx.builder.int32(FUSED_NONE);
    const [scaled] = ctx.emit("MUL", [
      normalized,
      floatConstant(ctx, sameTypeAs(ctx, x), perChannel, gamma),
      none,
    ], [
      spec,
    ]);
    ctx.emitAs(
      node.outputs[0],
      "ADD",
      [scaled, floatConstant(ctx, sameTypeAs(ctx, x), perChannel, beta), none],
      spec,
    );
  },
};

const layerNormalization: Rule = {
  convert(node: NodeView, ctx: ConversionContext) {
    const [x, scale, bias] = node.inputs;
    requireFloat(ctx, x);
    if (node.outputs.slice(1).some((o) => o && ctx.uses(o) > 0)) {
      throw new Error("the Mean and InvStdDev outputs are not supported");
    }
    const rank = ctx.dims(x).length;
    const axis = normalizeAxis(node.int("axis", -1), rank);
    const axes = Array.from({ length: rank - axis }, (_, i) => axis + i);
    const spec = sameTypeAs(ctx, x);
    const none = ctx.builder.int32(FUSED_NONE);
    let [y] = ctx.emit("MUL", [
      normalize(ctx, x, axes, node.float("epsilon", 1e-5)),
      ctx.operand(scale),
      none,
    ], [spec]);
    if (bias) [y] = ctx.emit("ADD", [y, ctx.operand(bias), none], [spec]);
    ctx.setOperand(node.outputs[0], y, spec.elementType);
  },
};

export const NORMALIZATION_RULES: Record<string, Rule> = {
  InstanceNormalization: instanceNormalization,
  LayerNormalization: layerNormalization,
};
