/**
 * NNAPI operations that move elements, as ONNX: RESHAPE (its shape a constant), CONCATENATION,
 * TRANSPOSE (its permutation a constant, or the reversed axes), MEAN (constant axes).
 */
import type { OperationType } from "../../../nnapi/types.ts";
import type { ExportRule } from "../export.ts";
import { float32Only } from "./elementwise.ts";

const reshape: ExportRule = {
  supports: (step, ctx) => float32Only(step, ctx, [1]) && ctx.isConstant(step, 1),
  write(step, ctx) {
    const target = Array.from(ctx.operands[step.inputs[1]].value as ArrayLike<number>);
    const shape = ctx.constant("shape", [target.length], target, "int64");
    ctx.node("Reshape", [ctx.input(step, 0), shape], [ctx.name(step.outputs[0])]);
  },
};

const concatenation: ExportRule = {
  supports: (step, ctx) => float32Only(step, ctx) && ctx.isConstant(step, step.inputs.length - 1),
  write(step, ctx) {
    const count = step.inputs.length - 1;
    const axis = ctx.scalar(step, count);
    const parts = step.inputs.slice(0, count).map((_, j) => ctx.input(step, j));
    ctx.node("Concat", parts, [ctx.name(step.outputs[0])], { axis });
  },
};

const transpose: ExportRule = {
  supports: (step, ctx) =>
    float32Only(step, ctx, [1]) && (step.inputs.length < 2 || ctx.isConstant(step, 1) ||
      ctx.operands[step.inputs[1]]?.value === null),
  write(step, ctx) {
    const given = step.inputs.length > 1 ? ctx.operands[step.inputs[1]]?.value : null;
    const rank = ctx.operands[step.inputs[0]].shape.length;
    const perm = given
      ? Array.from(given as ArrayLike<number>)
      : Array.from({ length: rank }, (_, i) => rank - 1 - i);
    ctx.node("Transpose", [ctx.input(step, 0)], [ctx.name(step.outputs[0])], { perm });
  },
};

const mean: ExportRule = {
  supports: (step, ctx) =>
    float32Only(step, ctx, [1]) && ctx.isConstant(step, 1) && ctx.isConstant(step, 2),
  write(step, ctx) {
    const rank = ctx.operands[step.inputs[0]].shape.length;
    const axes = [
      ...new Set(
        Array.from(
          ctx.operands[step.inputs[1]].value as ArrayLike<number>,
          (a) => a < 0 ? a + rank : a,
        ),
      ),
    ];
    ctx.node("ReduceMean", [ctx.input(step, 0)], [ctx.name(step.outputs[0])], {
      axes,
      keepdims: ctx.scalar(step, 2) > 0 ? 1 : 0,
    });
  },
};

export const SHAPE_EXPORTS: { readonly [T in OperationType]?: ExportRule } = {
  RESHAPE: reshape,
  CONCATENATION: concatenation,
  TRANSPOSE: transpose,
  MEAN: mean,
};
