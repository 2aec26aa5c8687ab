/**
 * ConvTranspose (2-D, NCHW, group 1; 1-D as 2-D with a height of 1) onto TRANSPOSE_CONV_2D
 * in NCHW mode: ONNX weights [C, M, kh, kw] become NNAPI's [M, kh, kw, C]; output_padding
 * moves into a smaller (even negative) end padding, which NNAPI allows.
 */
import { FUSED_NONE } from "../../../nnapi/types.ts";
import { transpose } from "../../../kernels/shape_transform.ts";
import type { Rule } from "../rule.ts";
import { floatConstant, NCHW, requireFloat, sameTypeAs } from "./common.ts";
import { withOneDimensional } from "./spatial_1d.ts";

const convTranspose: Rule = {
  convert(node, ctx) {
    const [x, w, b] = node.inputs;
    requireFloat(ctx, x);
    const dims = ctx.dims(x);
    const weights = ctx.requireConstant(w, "ConvTranspose's weights");
    if (dims.length !== 4 || weights.dims.length !== 4) {
      throw new Error(
        "only 1-D and 2-D transposed convolutions (3-D or 4-D input and weights) are supported",
      );
    }
    if (node.int("group", 1) !== 1) throw new Error("grouped ConvTranspose is not supported");
    if (node.ints("dilations", [1, 1]).some((d) => d !== 1)) {
      throw new Error("dilated ConvTranspose is not supported");
    }
    if (node.has("output_shape")) throw new Error("the output_shape attribute is not supported");
    const autoPad = node.string("auto_pad", "NOTSET");
    if (autoPad !== "NOTSET" && autoPad !== "VALID") {
      throw new Error(`auto_pad ${autoPad} is not supported for ConvTranspose`);
    }
    const [inChannels, outChannels, kh, kw] = weights.dims;
    const strides = node.ints("strides", [1, 1]);
    const [top, left, bottom, right] = autoPad === "VALID"
      ? [0, 0, 0, 0]
      : node.ints("pads", [0, 0, 0, 0]);
    const [extraH, extraW] = node.ints("output_padding", [0, 0]);
    const filter = new Float64Array(weights.data.length);
    transpose(weights.data, weights.dims, [1, 2, 3, 0], filter);
    const bias = b
      ? ctx.requireConstant(b, "ConvTranspose's bias").data
      : new Float64Array(outChannels);
    const spec = sameTypeAs(ctx, x);
    const constant = (shape: number[], values: ArrayLike<number>) =>
      floatConstant(ctx, spec, shape, values);
    const s = ctx.builder;
    ctx.emitAs(node.outputs[0], "TRANSPOSE_CONV_2D", [
      ctx.operand(x),
      constant([outChannels, kh, kw, inChannels], filter),
      constant([outChannels], bias),
      s.int32(left),
      s.int32(right - extraW),
      s.int32(top),
      s.int32(bottom - extraH),
      s.int32(strides[1]),
      s.int32(strides[0]),
      s.int32(FUSED_NONE),
      s.bool(NCHW),
    ], spec);
  },
};

export const CONV_TRANSPOSE_RULES: Record<string, Rule> = {
  ConvTranspose: withOneDimensional(convTranspose, { weights: 1 }),
};
