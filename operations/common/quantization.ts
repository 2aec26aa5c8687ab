/**
 * Quantization rules several operations share: outputs that keep an input's quantization,
 * outputs with a fixed quantization, the bias scale of the convolution-like operations and
 * their output stage.
 */
import {
  biasScaleMatches,
  type QuantizedOutputStage,
  quantizedOutputStage,
} from "../../kernels/conv_common.ts";
import { activationRangeQuantized } from "../../kernels/fixed_point.ts";
import type { Tensor } from "../../nnapi/tensor.ts";
import { check, type DeclaredOperand } from "../operation.ts";

/** Checks that output 0 of a quantized operation has the scale and zero point of an input. */
export function checkSameQuantization(
  input: DeclaredOperand,
  output: DeclaredOperand,
  inputPosition = 0,
): void {
  const whose = inputPosition === 0 ? "the input's" : `input ${inputPosition}'s`;
  check(
    output.scale === input.scale && output.zeroPoint === input.zeroPoint,
    `output 0 (operand ${output.index}) has scale ${output.scale} and zero point ` +
      `${output.zeroPoint}, expected ${whose} ${input.scale} and ${input.zeroPoint}`,
  );
}

/** A quantization NNAPI prescribes; `scaleText` spells the scale in messages ("1/256"). */
export interface FixedQuantization {
  scale: number;
  zeroPoint: number;
  scaleText: string;
}

/** Checks the fixed quantization NNAPI prescribes for output 0 (e.g. quant8 SOFTMAX's). */
export function checkFixedQuantization(output: DeclaredOperand, fixed: FixedQuantization): void {
  const { scale, zeroPoint, scaleText } = fixed;
  check(
    output.scale === scale && output.zeroPoint === zeroPoint,
    `output 0 (operand ${output.index}) must have scale ${scaleText} and zero point ` +
      `${zeroPoint}, has ${output.scale} and ${output.zeroPoint}`,
  );
}

/**
 * Checks the bias scale of a quantized convolution-like operation (input 2 = input scale x
 * filter scale, NNAPI's tolerance) and returns whether the output scale exceeds that
 * product, which NNAPI required before HAL 1.2.
 */
export function checkBiasScale(
  signature: { inputs: readonly DeclaredOperand[]; outputs: readonly DeclaredOperand[] },
  filterName: string,
): boolean {
  const [input, filter, bias] = signature.inputs;
  const product = Math.fround(input.scale * filter.scale);
  check(
    biasScaleMatches(input.scale, filter.scale, bias.scale),
    `input 2 (operand ${bias.index}) has scale ${bias.scale}, expected input scale x ` +
      `${filterName} scale = ${product}`,
  );
  return signature.outputs[0].scale > product;
}

/**
 * The output stage of a quantized convolution-like operation: one multiplier for a quant8
 * asymm filter, one per output channel for a per-channel filter.
 */
export function convolutionOutputStage(
  tensors: { input: Tensor; filter: Tensor; output: Tensor },
  channels: number,
  activation: number,
): QuantizedOutputStage {
  const { input, filter, output } = tensors;
  const perChannel = filter.type === "TENSOR_QUANT8_SYMM_PER_CHANNEL";
  return quantizedOutputStage(
    channels,
    input.scale,
    input.zeroPoint,
    perChannel ? filter.channelQuant!.scales : [filter.scale],
    perChannel ? 0 : filter.zeroPoint,
    output.scale,
    output.zeroPoint,
    activationRangeQuantized(activation, output.scale, output.zeroPoint),
  );
}
