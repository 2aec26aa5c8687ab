/**
 * CONV_2D: 2-D convolution of an NHWC (or, HAL 1.2, NCHW) input with an [outDepth,
 * filterHeight, filterWidth, inDepth] filter plus a bias, with a fused activation.
 *
 * Forms (by input count; Android 10 `conv_2d::validate` / `Conv2dParam::initialize`):
 * - 7: implicit padding (SAME/VALID code), strides, activation (HAL 1.0);
 * - 10 with input 7 INT32: explicit left/right/top/bottom padding, strides, activation
 *   (HAL 1.0);
 * - 8 / 10 with input 7 BOOL: implicit + NCHW flag [+ dilation] (HAL 1.2);
 * - 11 / 13: explicit + NCHW flag [+ dilation] (HAL 1.2).
 * Types: float32, float16 (HAL 1.2), quant8 asymm with a quant8 asymm filter, or (HAL 1.2)
 * a per-channel symmetric int8 filter (channelDim 0).
 */
import { conv2dFloat, conv2dQuantized } from "../kernels/conv_2d.ts";
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

/** Reference kernel: NHWC direct convolution (float or Android 10 quantized arithmetic). */
const reference: Kernel = (inputs, outputs) => {
  executeConvolution(inputs, outputs, {
    type: "CONV_2D",
    kernels: { float: conv2dFloat, quantized: conv2dQuantized },
  });
};

/** CONV_2D definition. */
export const conv2d: OperationDefinition<"CONV_2D"> = withSignedQuant8({
  type: "CONV_2D",
  validate: (signature) => validateConvolution(signature, "CONV_2D"),
  prepare(inputs) {
    const [input, filter, bias] = inputs;
    checkConvolutionRanks(inputs);
    const p = convolutionParams(inputs, (i) => scalarValue(inputs[i], `input ${i}`), "CONV_2D");
    const [, inHeight, inWidth, inDepth] = nhwcDims(input.shape, p.nchw);
    const [outDepth, , , filterDepth] = filter.shape;
    check(
      filterDepth === inDepth,
      `input 1 (filter) has depth ${filterDepth}, but the input has ${inDepth} channels`,
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
  cost: (inputs, outputs) => convolutionCost(inputs, outputs, "CONV_2D"),
  execute: reference,
});
