/**
 * Conv (2-D, NCHW; 1-D as 2-D with a height of 1) onto CONV_2D, DEPTHWISE_CONV_2D or
 * GROUPED_CONV_2D in NNAPI's NCHW mode, with a following BatchNormalization folded into the
 * filter and bias when the 2-D convolution is its only input; BatchNormalization elsewhere
 * (after a 1-D convolution too) becomes MUL + ADD per channel.
 */
import { FUSED_NONE } from "../../../nnapi/types.ts";
import { transpose } from "../../../kernels/shape_transform.ts";
import type { BuiltOperand } from "../../graph_builder.ts";
import type { ConversionContext, OutputSpec } from "../context.ts";
import type { NodeView } from "../node_view.ts";
import type { Rule } from "../rule.ts";
import type { HostTensor } from "../tensors.ts";
import { floatConstant, NCHW, requireFloat, sameTypeAs } from "./common.ts";
import { spatialPadding } from "./padding.ts";
import { withOneDimensional } from "./spatial_1d.ts";

/** Per-channel inference parameters of a BatchNormalization: y = x * scale + shift. */
function batchNormAffine(
  ctx: ConversionContext,
  node: NodeView,
): { scale: Float64Array; shift: Float64Array } {
  const [, s, b, mean, variance] = node.inputs;
  const gamma = ctx.requireConstant(s, "BatchNormalization's scale").data;
  const beta = ctx.requireConstant(b, "BatchNormalization's bias").data;
  const mu = ctx.requireConstant(mean, "BatchNormalization's mean").data;
  const sigma2 = ctx.requireConstant(variance, "BatchNormalization's variance").data;
  const epsilon = node.float("epsilon", 1e-5);
  if (node.outputs.slice(1).some((o) => o && ctx.uses(o) > 0)) {
    throw new Error("the training outputs (running mean/variance) are not supported");
  }
  const scale = new Float64Array(gamma.length);
  const shift = new Float64Array(gamma.length);
  for (let c = 0; c < gamma.length; c++) {
    scale[c] = gamma[c] / Math.sqrt(sigma2[c] + epsilon);
    shift[c] = beta[c] - mu[c] * scale[c];
  }
  return { scale, shift };
}

/** A Conv node's own parameters (QLinearConv's too), checked. */
export type ConvAttributes = ReturnType<typeof convAttributes>;

/** The convolution's own parameters, checked. */
export function convAttributes(node: NodeView, ctx: ConversionContext, weights: HostTensor) {
  const x = node.inputs[0];
  const dims = ctx.dims(x);
  if (dims.length !== 4 || weights.dims.length !== 4) {
    throw new Error(
      `only 2-D convolutions (4-D input and weights) are supported; input has rank ${dims.length}`,
    );
  }
  const [, kh, kw] = [0, weights.dims[2], weights.dims[3]];
  const kernel = node.ints("kernel_shape", [kh, kw]);
  if (kernel[0] !== kh || kernel[1] !== kw) {
    throw new Error(`kernel_shape [${kernel}] does not match the weights [${weights.dims}]`);
  }
  const strides = node.ints("strides", [1, 1]);
  const dilations = node.ints("dilations", [1, 1]);
  const group = node.int("group", 1);
  const padding = spatialPadding(node, dims, [kh, kw], strides, dilations);
  return { dims, kh, kw, strides, dilations, group, padding };
}

/** The NNAPI convolution a Conv node becomes, with its filter laid out for it. */
export interface ConvolutionPlan {
  type: "CONV_2D" | "DEPTHWISE_CONV_2D" | "GROUPED_CONV_2D";
  /** [O, kh, kw, I / group], or [1, kh, kw, O] for DEPTHWISE_CONV_2D. */
  filterDims: number[];
  filter: Float64Array;
  /** The filter's output-channel dimension (per-channel quantization's channelDim). */
  channelDim: number;
  /** DEPTHWISE_CONV_2D's depth multiplier or GROUPED_CONV_2D's group count. */
  parameter?: number;
}

/**
 * Chooses the operation by the group count (1: CONV_2D; one group per input channel:
 * DEPTHWISE_CONV_2D; otherwise GROUPED_CONV_2D) and lays the ONNX OIHW weights out for it.
 */
export function convolutionPlan(
  a: ConvAttributes,
  weights: { dims: readonly number[]; values: ArrayLike<number> },
): ConvolutionPlan {
  const [outChannels, inPerGroup] = weights.dims;
  const depthwise = a.group > 1 && a.group === a.dims[1] && inPerGroup === 1 &&
    outChannels % a.group === 0;
  const ohwi = [outChannels, a.kh, a.kw, inPerGroup];
  // ONNX weights are OIHW; NNAPI filters are OHWI (depthwise: 1HW(C*multiplier)).
  const permuted = new Float64Array(weights.values.length);
  transpose(weights.values, weights.dims, [0, 2, 3, 1], permuted);
  if (a.group === 1) return { type: "CONV_2D", filterDims: ohwi, filter: permuted, channelDim: 0 };
  if (depthwise) {
    // OHWI with I = 1 is [C*multiplier, kh, kw, 1]; NNAPI wants [1, kh, kw, C*multiplier].
    return {
      type: "DEPTHWISE_CONV_2D",
      filterDims: [1, a.kh, a.kw, outChannels],
      filter: transposed(permuted, ohwi),
      channelDim: 3,
      parameter: outChannels / a.group,
    };
  }
  if (a.dilations.some((d) => d !== 1)) {
    throw new Error(`grouped convolution (group ${a.group}) with dilations is not supported`);
  }
  return {
    type: "GROUPED_CONV_2D",
    filterDims: ohwi,
    filter: permuted,
    channelDim: 0,
    parameter: a.group,
  };
}

/** What {@link emitConvolution} appends: the planned operation on these operands. */
export interface ConvolutionCall {
  output: string;
  attributes: ConvAttributes;
  plan: ConvolutionPlan;
  input: BuiltOperand;
  /** The plan's filter as an operand of the model. */
  filter: BuiltOperand;
  bias: BuiltOperand;
  spec: OutputSpec;
}

/** Appends the planned convolution (NCHW, no fused activation) and names its result. */
export function emitConvolution(ctx: ConversionContext, call: ConvolutionCall): BuiltOperand {
  const { attributes: a, plan } = call;
  const s = ctx.builder;
  const pads = a.padding;
  // Every form: input, filter, bias, padding, strides, [its parameter], activation, NCHW.
  return ctx.emitAs(call.output, plan.type, [
    call.input,
    call.filter,
    call.bias,
    ...(pads.kind === "explicit"
      ? [s.int32(pads.left), s.int32(pads.right), s.int32(pads.top), s.int32(pads.bottom)]
      : [s.int32(pads.scheme)]),
    s.int32(a.strides[1]),
    s.int32(a.strides[0]),
    ...(plan.parameter === undefined ? [] : [s.int32(plan.parameter)]),
    s.int32(FUSED_NONE),
    s.bool(NCHW),
    ...(plan.type === "GROUPED_CONV_2D" ? [] : [s.int32(a.dilations[1]), s.int32(a.dilations[0])]),
  ], call.spec);
}

const conv: Rule = {
  convert(node, ctx) {
    const [x, w, b] = node.inputs;
    requireFloat(ctx, x);
    const weights = ctx.requireConstant(w, "Conv's weights");
    const a = convAttributes(node, ctx, weights);
    const outChannels = weights.dims[0];
    const bias = b ? ctx.requireConstant(b, "Conv's bias") : undefined;
    const filter = Float64Array.from(weights.data);
    const biasValues = bias ? Float64Array.from(bias.data) : new Float64Array(outChannels);

    // Fold a BatchNormalization that reads only this convolution (its input then names the
    // normalized value too, which nothing else reads).
    let output = node.outputs[0];
    const next = ctx.soleConsumer(output);
    if (next?.opType === "BatchNormalization" && isConstantBatchNorm(ctx, next)) {
      const { scale, shift } = batchNormAffine(ctx, next);
      const perChannel = filter.length / outChannels;
      for (let m = 0; m < outChannels; m++) {
        for (let i = 0; i < perChannel; i++) filter[m * perChannel + i] *= scale[m];
        biasValues[m] = biasValues[m] * scale[m] + shift[m];
      }
      ctx.absorb(next);
      output = next.outputs[0];
      ctx.aliasLater(node.outputs[0], output);
      ctx.notes.push(`BatchNormalization folded into the Conv before it: '${next.name}'`);
    }

    const spec = sameTypeAs(ctx, x);
    const plan = convolutionPlan(a, { dims: weights.dims, values: filter });
    emitConvolution(ctx, {
      output,
      attributes: a,
      plan,
      filter: floatConstant(ctx, spec, plan.filterDims, plan.filter),
      input: ctx.operand(x),
      bias: floatConstant(ctx, spec, [outChannels], biasValues),
      spec,
    });
  },
};

/** [M, kh, kw, 1] -> [1, kh, kw, M]. */
function transposed(values: Float64Array, dims: number[]): Float64Array {
  const out = new Float64Array(values.length);
  transpose(values, dims, [3, 1, 2, 0], out);
  return out;
}

function isConstantBatchNorm(ctx: ConversionContext, node: NodeView): boolean {
  return node.inputs.slice(1, 5).every((name) => name && ctx.constant(name) !== undefined);
}

/** BatchNormalization on its own: x * scale + shift, with [C, 1, 1] constants (NCHW). */
const batchNormalization: Rule = {
  convert(node, ctx) {
    const x = node.inputs[0];
    requireFloat(ctx, x);
    const rank = ctx.dims(x).length;
    const { scale, shift } = batchNormAffine(ctx, node);
    const spec = sameTypeAs(ctx, x);
    const shape = [scale.length, ...new Array(Math.max(rank - 2, 0)).fill(1)];
    const none = ctx.builder.int32(FUSED_NONE);
    const [scaled] = ctx.emit(
      "MUL",
      [ctx.operand(x), floatConstant(ctx, spec, shape, scale), none],
      [spec],
    );
    ctx.emitAs(
      node.outputs[0],
      "ADD",
      [scaled, floatConstant(ctx, spec, shape, shift), none],
      spec,
    );
  },
};

export const CONV_RULES: Record<string, Rule> = {
  Conv: withOneDimensional(conv, { weights: 1 }),
  BatchNormalization: batchNormalization,
};
