/**
 * DEPTHWISE_CONV_2D: per-channel 2-D convolution of an NHWC (or, HAL 1.2, NCHW) input with
 * a [1, filterHeight, filterWidth, inDepth * depthMultiplier] filter plus a bias, with a
 * fused activation; output channel `c * depthMultiplier + m` filters input channel `c`.
 *
 * Forms (by input count; Android 10 `validateOperation` and CpuExecutor):
 * - 8: implicit padding (SAME/VALID code), strides, depth multiplier, activation (HAL 1.0);
 * - 11 with input 8 INT32: explicit left/right/top/bottom padding, strides, depth
 *   multiplier, activation (HAL 1.0);
 * - 9 / 11 with input 8 BOOL: implicit + NCHW flag [+ dilation] (HAL 1.2);
 * - 12 / 14: explicit + NCHW flag [+ dilation] (HAL 1.2).
 * Types: float32, float16 (HAL 1.2), quant8 asymm with a quant8 asymm filter, or (HAL 1.2)
 * a per-channel symmetric int8 filter (channelDim 3).
 */
import { depthwiseConv2dFloat, depthwiseConv2dQuantized } from "../kernels/conv_depthwise.ts";
import {
  checkConvolutionRanks,
  convolutionCost,
  convolutionOutputShape,
  convolutionParams,
  executeConvolution,
  validateConvolution,
} from "./common/convolution.ts";
import { nhwcDims } from "./common/layout.ts";
import { check, type Kernel, type OperationDefinition, scalarValue } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** Reference kernel: NHWC depthwise convolution (float or Android 10 quantized arithmetic). */
const reference: Kernel = (inputs, outputs) => {
  executeConvolution(inputs, outputs, {
    type: "DEPTHWISE_CONV_2D",
    kernels: { float: depthwiseConv2dFloat, quantized: depthwiseConv2dQuantized },
  });
};

/** DEPTHWISE_CONV_2D definition. */
export const depthwiseConv2d: OperationDefinition<"DEPTHWISE_CONV_2D"> = withSignedQuant8({
  type: "DEPTHWISE_CONV_2D",
  validate: (signature) => validateConvolution(signature, "DEPTHWISE_CONV_2D"),
  prepare(inputs) {
    const [input, filter, bias] = inputs;
    checkConvolutionRanks(inputs);
    const p = convolutionParams(
      inputs,
      (i) => scalarValue(inputs[i], `input ${i}`),
      "DEPTHWISE_CONV_2D",
    );
    const [, inHeight, inWidth, inDepth] = nhwcDims(input.shape, p.nchw);
    const [filterBatch, , , outDepth] = filter.shape;
    check(filterBatch === 1, `input 1 (filter) has first dimension ${filterBatch}, expected 1`);
    check(
      bias.shape[0] === outDepth,
      `input 2 (bias) has ${bias.shape[0]} elements, expected ${outDepth} (filter depth)`,
    );
    check(
      inDepth * p.depthMultiplier === outDepth,
      `input 1 (filter) has depth ${outDepth}, expected ${inDepth} input channels x depth ` +
        `multiplier ${p.depthMultiplier}`,
    );
    check(
      inHeight > 0 && inWidth > 0 && inDepth > 0,
      `only the batch dimension may be 0 (input [${input.shape}])`,
    );
    return [convolutionOutputShape(inputs, p, outDepth)];
  },
  cost: (inputs, outputs) => convolutionCost(inputs, outputs, "DEPTHWISE_CONV_2D"),
  execute: reference,
});
