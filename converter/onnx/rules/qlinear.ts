/**
 * QLinearConv and QLinearMatMul onto NNAPI's quantized operands. The runtime input keeps the
 * quantization it was produced with (TENSOR_QUANT8_ASYMM for uint8, _SIGNED for int8, from
 * QuantizeLinear or another QLinear node); constant weights become a filter of the input's
 * type when quantized per tensor, or a TENSOR_QUANT8_SYMM_PER_CHANNEL filter when quantized
 * per output channel; the int32 bias has scale input scale x filter scale (0 beside a
 * per-channel filter, whose bias scales NNAPI derives per channel). The output takes the
 * node's y_scale and y_zero_point. Scales are float32, as NNAPI's are, so nothing is
 * rounded twice.
 */
import { FUSED_NONE } from "../../../nnapi/types.ts";
import type { BuiltOperand } from "../../graph_builder.ts";
import type { ConversionContext, OutputSpec } from "../context.ts";
import type { NodeView } from "../node_view.ts";
import type { Rule } from "../rule.ts";
import type { ElementType, HostTensor } from "../tensors.ts";
import { convAttributes, type ConvolutionPlan, convolutionPlan, emitConvolution } from "./conv.ts";
import { matMulRows, transposedWeights } from "./matmul.ts";

/** The two 8-bit element types and the NNAPI operand types they quantize to. */
type Quant8 = "uint8" | "int8";
const QUANT8_TYPES = {
  uint8: "TENSOR_QUANT8_ASYMM",
  int8: "TENSOR_QUANT8_ASYMM_SIGNED",
} as const;

function quant8(type: ElementType, what: string): Quant8 {
  if (type !== "uint8" && type !== "int8") {
    throw new Error(`${what} is ${type}, expected uint8 or int8`);
  }
  return type;
}

/** A constant input of the node, named in messages by `what` when it is missing. */
function constantInput(ctx: ConversionContext, node: NodeView, at: number, what: string) {
  const name = node.input(at);
  if (name === undefined) throw new Error(`${what} (input ${at}) is missing`);
  return ctx.requireConstant(name, what);
}

/** A per-tensor scale and zero point: the node's constant inputs `at` and `at + 1`. */
function scalarQuantization(ctx: ConversionContext, node: NodeView, at: number, what: string) {
  const scale = constantInput(ctx, node, at, `${what}'s scale`);
  const zeroPoint = constantInput(ctx, node, at + 1, `${what}'s zero point`);
  if (scale.data.length !== 1 || zeroPoint.data.length !== 1) {
    throw new Error(`${what} must be quantized per tensor (one scale and one zero point)`);
  }
  return {
    scale: Math.fround(scale.data[0]),
    zeroPoint: zeroPoint.data[0],
    type: quant8(zeroPoint.type, `${what}'s zero point`),
  };
}

/**
 * The runtime quantized input `at`, whose operand must already carry the scale and zero
 * point (inputs `at + 1`, `at + 2`) the node reads it with.
 */
function quantizedInput(ctx: ConversionContext, node: NodeView, at: number, what: string) {
  const name = node.inputs[at];
  const value = ctx.value(name);
  if (value.kind !== "operand") {
    throw new Error(`${what} ('${name}') is a constant; a quantized runtime tensor is expected`);
  }
  const q = scalarQuantization(ctx, node, at + 1, what);
  const { operand } = value;
  const type = QUANT8_TYPES[q.type];
  if (operand.type !== type || operand.scale !== q.scale || operand.zeroPoint !== q.zeroPoint) {
    throw new Error(
      `${what} ('${name}') is ${operand.type} with scale ${operand.scale} and zero point ` +
        `${operand.zeroPoint}; the node reads it as ${type} with scale ${q.scale} and zero ` +
        `point ${q.zeroPoint}`,
    );
  }
  return { operand, type: q.type };
}

/** The output's quantization (inputs `at`, `at + 1`), of the input's 8-bit type. */
function outputSpec(ctx: ConversionContext, node: NodeView, at: number, input: Quant8): OutputSpec {
  const y = scalarQuantization(ctx, node, at, "the output");
  if (y.type !== input) {
    throw new Error(
      `the output is ${y.type} but the input ${input}; NNAPI's quantized operations keep ` +
        "the input's type",
    );
  }
  return {
    type: QUANT8_TYPES[y.type],
    elementType: y.type,
    quant: { scale: y.scale, zeroPoint: y.zeroPoint },
  };
}

/** Constant 8-bit weights with one scale and zero point, or one per output channel. */
interface QuantizedWeights {
  tensor: HostTensor;
  type: Quant8;
  /** float32 values. */
  scales: number[];
  zeroPoints: number[];
}

/** The weights (input `at`) with their scales and zero points (`at + 1`, `at + 2`). */
function quantizedWeights(
  ctx: ConversionContext,
  node: NodeView,
  at: number,
  what: string,
): QuantizedWeights {
  const tensor = constantInput(ctx, node, at, what);
  const type = quant8(tensor.type, what);
  const scale = constantInput(ctx, node, at + 1, `${what}' scale`);
  const zeroPoint = constantInput(ctx, node, at + 2, `${what}' zero point`);
  if (zeroPoint.type !== type) {
    throw new Error(`${what} are ${type} but their zero point is ${zeroPoint.type}`);
  }
  const scales = Array.from(scale.data, Math.fround);
  if (scales.some((s) => !(s > 0))) throw new Error(`${what}' scales must be positive`);
  return { tensor, type, scales, zeroPoints: Array.from(zeroPoint.data) };
}

/**
 * The weights, laid out by `layout` (their values in NNAPI's order), as the NNAPI filter or
 * weights operand for an input of type `input`. Per tensor, weights of the other 8-bit type
 * move by 128 with their zero point (q - z is unchanged); per channel, q - z[c] must fit the
 * symmetric int8 of TENSOR_QUANT8_SYMM_PER_CHANNEL.
 */
function weightsOperand(
  ctx: ConversionContext,
  w: QuantizedWeights,
  layout: Pick<ConvolutionPlan, "filterDims" | "filter" | "channelDim">,
  input: Quant8,
): BuiltOperand {
  const { filterDims: dims, filter: values, channelDim } = layout;
  const channels = dims[channelDim];
  for (const [what, list] of [["scales", w.scales], ["zero points", w.zeroPoints]] as const) {
    if (list.length !== 1 && list.length !== channels) {
      throw new Error(`the weights have ${list.length} ${what} for ${channels} output channels`);
    }
  }
  if (w.scales.length === 1 && w.zeroPoints.length === 1) {
    const shift = w.type === input ? 0 : input === "uint8" ? 128 : -128;
    const shifted = values.map((v) => v + shift);
    const data = input === "uint8" ? Uint8Array.from(shifted) : Int8Array.from(shifted);
    return ctx.builder.constant(QUANT8_TYPES[input], dims, data, {
      scale: w.scales[0],
      zeroPoint: w.zeroPoints[0] + shift,
    });
  }
  const inner = dims.slice(channelDim + 1).reduce((x, y) => x * y, 1);
  const perChannel = (list: number[], c: number) => list.length === 1 ? list[0] : list[c];
  const data = new Int8Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const c = Math.floor(i / inner) % channels;
    const zeroPoint = perChannel(w.zeroPoints, c);
    const v = values[i] - zeroPoint;
    if (v < -128 || v > 127) {
      throw new Error(
        `weights quantized per channel must be symmetric int8 after their zero point is ` +
          `taken off (NNAPI's TENSOR_QUANT8_SYMM_PER_CHANNEL); channel ${c} with zero point ` +
          `${zeroPoint} holds ${values[i]}`,
      );
    }
    data[i] = v;
  }
  const scales = Array.from({ length: channels }, (_, c) => perChannel(w.scales, c));
  return ctx.builder.constant("TENSOR_QUANT8_SYMM_PER_CHANNEL", dims, data, {
    scale: 0,
    zeroPoint: 0,
    channelQuant: { channelDim, scales },
  });
}

/** An int32 bias at the scale NNAPI requires: input x filter scale (per tensor), else 0. */
function biasOperand(
  ctx: ConversionContext,
  values: Int32Array,
  operands: { input: BuiltOperand; filter: BuiltOperand },
): BuiltOperand {
  const { input, filter } = operands;
  const scale = filter.channelQuant ? 0 : Math.fround(input.scale * filter.scale);
  return ctx.builder.constant("TENSOR_INT32", [values.length], values, { scale, zeroPoint: 0 });
}

/** QLinearConv's optional int32 bias (input 8), zeros when absent. */
function convBias(ctx: ConversionContext, node: NodeView, channels: number): Int32Array {
  const name = node.input(8);
  if (name === undefined) return new Int32Array(channels);
  const bias = ctx.requireConstant(name, "the bias");
  if (bias.type !== "int32" || bias.data.length !== channels) {
    throw new Error(
      `the bias is ${bias.type} [${bias.dims}], expected int32 [${channels}] (one per output ` +
        "channel)",
    );
  }
  return Int32Array.from(bias.data);
}

/**
 * QLinearConv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B):
 * the Conv rule's operation (CONV_2D, DEPTHWISE_CONV_2D or GROUPED_CONV_2D, NCHW) on
 * quantized operands.
 */
const qlinearConv: Rule = {
  convert(node, ctx) {
    const x = quantizedInput(ctx, node, 0, "x");
    const w = quantizedWeights(ctx, node, 3, "the weights");
    const spec = outputSpec(ctx, node, 6, x.type);
    const a = convAttributes(node, ctx, w.tensor);
    const plan = convolutionPlan(a, { dims: w.tensor.dims, values: w.tensor.data });
    const filter = weightsOperand(ctx, w, plan, x.type);
    const bias = convBias(ctx, node, w.tensor.dims[0]);
    emitConvolution(ctx, {
      output: node.outputs[0],
      attributes: a,
      plan,
      filter,
      input: x.operand,
      bias: biasOperand(ctx, bias, { input: x.operand, filter }),
      spec,
    });
  },
};

/**
 * QLinearMatMul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point)
 * with constant b quantized per tensor: FULLY_CONNECTED with b transposed and a zero bias,
 * rows reshaped as the MatMul rule does.
 */
const qlinearMatMul: Rule = {
  convert(node, ctx) {
    const x = quantizedInput(ctx, node, 0, "a");
    const b = node.inputs[3];
    if (ctx.constant(b) === undefined) {
      throw new Error(
        `b ('${b}') is a runtime tensor; QLinearMatMul is supported with constant b only ` +
          "(the weights of NNAPI's FULLY_CONNECTED)",
      );
    }
    const w = quantizedWeights(ctx, node, 3, "b");
    if (w.scales.length !== 1 || w.zeroPoints.length !== 1) {
      throw new Error(
        "b is quantized per column; NNAPI's quantized FULLY_CONNECTED takes weights " +
          "quantized per tensor",
      );
    }
    const spec = outputSpec(ctx, node, 6, x.type);
    const { w: values, n, k } = transposedWeights(w.tensor);
    const weights = weightsOperand(
      ctx,
      w,
      { filterDims: [n, k], filter: values, channelDim: 0 },
      x.type,
    );
    const bias = biasOperand(ctx, new Int32Array(n), { input: x.operand, filter: weights });
    matMulRows(ctx, {
      name: node.outputs[0],
      a: node.inputs[0],
      k,
      n,
      product: (rows, name) =>
        ctx.emitAs(name, "FULLY_CONNECTED", [
          rows,
          weights,
          bias,
          ctx.builder.int32(FUSED_NONE),
        ], spec),
    });
  },
};

export const QLINEAR_RULES: Record<string, Rule> = {
  QLinearConv: qlinearConv,
  QLinearMatMul: qlinearMatMul,
};
