/**
 * MaxPool, AveragePool (2-D, NCHW; pads, auto_pad, ceil_mode, count_include_pad; 1-D as 2-D
 * with a height of 1) onto NNAPI's pooling in NCHW mode; GlobalAveragePool onto MEAN and
 * GlobalMaxPool onto REDUCE_MAX over the spatial axes.
 */
import { FUSED_NONE } from "../../../nnapi/types.ts";
import type { OperationType } from "../../../nnapi/types.ts";
import type { ConversionContext } from "../context.ts";
import type { NodeView } from "../node_view.ts";
import type { Rule } from "../rule.ts";
import { NCHW, requireFloat, sameTypeAs } from "./common.ts";
import { ceilModeExtra, type SpatialPadding, spatialPadding } from "./padding.ts";
import { withOneDimensional } from "./spatial_1d.ts";

function pool(type: "MAX_POOL_2D" | "AVERAGE_POOL_2D"): Rule {
  return {
    convert(node, ctx) {
      const x = node.inputs[0];
      requireFloat(ctx, x);
      if (node.outputs.length > 1 && ctx.uses(node.outputs[1]) > 0) {
        throw new Error("the Indices output is not supported");
      }
      const dims = ctx.dims(x);
      if (dims.length !== 4) {
        throw new Error(`only 1-D and 2-D pooling (3-D or 4-D input) is supported`);
      }
      const kernel = node.ints("kernel_shape");
      if (kernel.length !== 2) throw new Error(`kernel_shape [${kernel}] is not 2-D`);
      const strides = node.ints("strides", [1, 1]);
      const dilations = node.ints("dilations", [1, 1]);
      if (dilations.some((d) => d !== 1)) throw new Error("dilated pooling is not supported");
      if (node.int("storage_order", 0) !== 0) throw new Error("storage_order 1 is not supported");
      let padding = spatialPadding(node, dims, kernel, strides, dilations);
      const ceil = node.int("ceil_mode", 0) === 1;
      if (ceil) padding = withCeilMode(padding, dims, kernel, strides);
      let input = ctx.operand(x);
      const spec = sameTypeAs(ctx, x);
      const s = ctx.builder;
      if (type === "AVERAGE_POOL_2D" && node.int("count_include_pad", 0) === 1) {
        // NNAPI averages over the input only: pad with zeros first, then pool unpadded.
        if (padding.kind !== "explicit" || ceil) {
          throw new Error("count_include_pad with ceil_mode or implicit padding is not supported");
        }
        const { top, left, bottom, right } = padding;
        const pads = s.constant(
          "TENSOR_INT32",
          [4, 2],
          new Int32Array([0, 0, 0, 0, top, bottom, left, right]),
        );
        [input] = ctx.emit("PAD", [input, pads], [spec]);
        padding = { kind: "explicit", top: 0, left: 0, bottom: 0, right: 0 };
      }
      const padInputs = padding.kind === "explicit"
        ? [
          s.int32(padding.left),
          s.int32(padding.right),
          s.int32(padding.top),
          s.int32(padding.bottom),
        ]
        : [s.int32(padding.scheme)];
      ctx.emitAs(node.outputs[0], type, [
        input,
        ...padInputs,
        s.int32(strides[1]),
        s.int32(strides[0]),
        s.int32(kernel[1]),
        s.int32(kernel[0]),
        s.int32(FUSED_NONE),
        s.bool(NCHW),
      ], spec);
    },
  };
}

function withCeilMode(
  padding: SpatialPadding,
  dims: readonly number[],
  kernel: readonly number[],
  strides: readonly number[],
): SpatialPadding {
  if (padding.kind !== "explicit" || dims[2] === 0 || dims[3] === 0) {
    throw new Error("ceil_mode needs explicit padding and the spatial size known at conversion");
  }
  return {
    ...padding,
    bottom: padding.bottom +
      ceilModeExtra(dims[2], kernel[0], strides[0], padding.top, padding.bottom),
    right: padding.right +
      ceilModeExtra(dims[3], kernel[1], strides[1], padding.left, padding.right),
  };
}

function globalPool(type: OperationType): Rule {
  return {
    convert(node: NodeView, ctx: ConversionContext) {
      const x = node.inputs[0];
      requireFloat(ctx, x);
      const rank = ctx.dims(x).length;
      if (rank < 3) throw new Error(`input rank ${rank} has no spatial axes`);
      const axes = Array.from({ length: rank - 2 }, (_, i) => i + 2);
      const s = ctx.builder;
      const axesOperand = s.constant("TENSOR_INT32", [axes.length], new Int32Array(axes));
      const keep = type === "MEAN" ? s.int32(1) : s.bool(true);
      ctx.emitAs(node.outputs[0], type, [ctx.operand(x), axesOperand, keep], sameTypeAs(ctx, x));
    },
  };
}

export const POOL_RULES: Record<string, Rule> = {
  MaxPool: withOneDimensional(pool("MAX_POOL_2D")),
  AveragePool: withOneDimensional(pool("AVERAGE_POOL_2D")),
  GlobalAveragePool: globalPool("MEAN"),
  GlobalMaxPool: globalPool("REDUCE_MAX"),
};
