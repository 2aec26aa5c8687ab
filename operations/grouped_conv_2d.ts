/**
 * GROUPED_CONV_2D (HAL 1.2): 2-D convolution whose channels are split into `numGroups`
 * equal groups, each convolved with its own slice of output channels: input [b, h, w,
 * inDepth] (or NCHW), filter [outDepth, filterHeight, filterWidth, inDepth / numGroups],
 * bias [outDepth], with a fused activation (Android 10 `GroupedConv2D.cpp`).
 *
 * Forms (by input count; the NCHW flag is always present):
 * - 9: implicit padding (SAME/VALID code), strides, number of groups, activation, layout;
 * - 12: explicit left/right/top/bottom padding, strides, number of groups, activation, layout.
 * These parameters sit where DEPTHWISE_CONV_2D's HAL 1.2 layout forms put theirs, with the
 * group count in the depth multiplier's slot, so the shared convolution parsing serves both.
 * Types: float32, float16, quant8 asymm with a quant8 asymm filter or a per-channel symmetric
 * int8 filter (channelDim 0).
 */
import {
  groupedConv2dFloat,
  groupedConv2dQuantized,
  type GroupedGeometry,
} from "../kernels/conv_grouped.ts";
import type { DepthwiseGeometry } from "../kernels/conv_depthwise.ts";
import type { OperandType } from "../nnapi/types.ts";
import {
  checkConvolutionOperandRanks,
  checkConvolutionRanks,
  checkFilterQuantization,
  convolutionCost,
  convolutionOutputShape,
  convolutionParams,
  executeConvolution,
} from "./common/convolution.ts";
import { nhwcDims } from "./common/layout.ts";
import { checkInputType } from "./common/operand_types.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  type Kernel,
  type OperationDefinition,
  scalarValue,
} from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

const IMPLICIT_INPUTS = 9;
const EXPLICIT_INPUTS = 12;

/** Position of the group count: after the padding parameters and the two strides. */
function groupsIndex(inputCount: number): number {
  return inputCount === EXPLICIT_INPUTS ? 9 : 6;
}

/** The grouped geometry from the shared one (whose depth multiplier is the group count). */
function grouped(g: DepthwiseGeometry): GroupedGeometry {
  return { ...g, groups: g.depthMultiplier };
}

/** Reference kernel: NHWC grouped convolution (float or Android 10 quantized arithmetic). */
const reference: Kernel = (inputs, outputs) => {
  executeConvolution(inputs, outputs, {
    type: "DEPTHWISE_CONV_2D",
    kernels: {
      float: (g, ...rest) => groupedConv2dFloat(grouped(g), ...rest),
      quantized: (g, ...rest) => groupedConv2dQuantized(grouped(g), ...rest),
    },
  });
};

/** GROUPED_CONV_2D definition. */
export const groupedConv2d: OperationDefinition<"GROUPED_CONV_2D"> = withSignedQuant8({
  type: "GROUPED_CONV_2D",

  validate(signature) {
    checkArity(signature, [IMPLICIT_INPUTS, EXPLICIT_INPUTS], 1);
    const [input, filter] = signature.inputs;
    checkInputType(input, 0, ["TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_QUANT8_ASYMM"]);
    const quantized = input.type === "TENSOR_QUANT8_ASYMM";
    const perChannel = quantized && filter.type === "TENSOR_QUANT8_SYMM_PER_CHANNEL";
    const count = signature.inputs.length;
    const expected: OperandType[] = [
      input.type,
      perChannel ? filter.type : input.type,
      quantized ? "TENSOR_INT32" : input.type,
      ...new Array<OperandType>(count - 4).fill("INT32"),
      "BOOL",
    ];
    checkTypes(signature, expected, [input.type]);
    checkConvolutionOperandRanks(signature);
    checkRank(signature.outputs[0], "output 0", (r) => r === 4, "4");
    checkFilterQuantization(signature, { quantized, perChannel, channelDim: 0 });
    return "V1_2";
  },

  prepare(inputs) {
    const [input, filter, bias] = inputs;
    checkConvolutionRanks(inputs);
    const at = groupsIndex(inputs.length);
    const groups = scalarValue(inputs[at], `input ${at} (number of groups)`);
    check(groups > 0, `input ${at} (number of groups) is ${groups}, expected a positive count`);
    const p = convolutionParams(
      inputs,
      (i) => scalarValue(inputs[i], `input ${i}`),
      "DEPTHWISE_CONV_2D",
    );
    const [, inHeight, inWidth, inDepth] = nhwcDims(input.shape, p.nchw);
    const [outDepth, , , groupDepth] = filter.shape;
    check(
      groupDepth * groups === inDepth,
      `input 1 (filter) has depth ${groupDepth}, expected ${inDepth} input channels / ` +
        `${groups} groups`,
    );
    check(
      outDepth % groups === 0,
      `input 1 (filter) has ${outDepth} output channels, not a multiple of ${groups} groups`,
    );
    check(
      bias.shape[0] === outDepth,
      `input 2 (bias) has ${bias.shape[0]} elements, expected ${outDepth} (filter outputs)`,
    );
    check(
      inHeight > 0 && inWidth > 0 && inDepth > 0 && outDepth > 0,
      `only the batch dimension may be 0 (input [${input.shape}], filter [${filter.shape}])`,
    );
    return [convolutionOutputShape(inputs, p, outDepth)];
  },

  /** Each output reads filterHeight x filterWidth taps of its group's channels. */
  cost: (inputs, outputs) => convolutionCost(inputs, outputs, "CONV_2D"),
  execute: reference,
});
