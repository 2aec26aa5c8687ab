/**
 * Reference FULLY_CONNECTED kernels: output[b, u] = bias[u] + sum_i input[b, i] *
 * weights[u, i] over a [batches, inputSize] input and a [units, inputSize] weight matrix.
 */
import type { QuantizedOutputStage } from "./conv_common.ts";
import { type ActivationRange, multiplyByQuantizedMultiplier } from "./fixed_point.ts";
import type { Numbers, ReadonlyNumbers } from "./typed_arrays.ts";

/** Matrix sizes of a fully connected layer. */
export interface FullyConnectedGeometry {
  batches: number;
  inputSize: number;
  units: number;
}

/** Float fully connected layer, accumulating in double precision. */
export function fullyConnectedFloat(
  g: FullyConnectedGeometry,
  input: ReadonlyNumbers,
  weights: ReadonlyNumbers,
  bias: ReadonlyNumbers,
  activation: ActivationRange,
  output: Numbers,
): void {
  const { batches, inputSize, units } = g;
  const { min, max } = activation;
  let o = 0;
  for (let b = 0; b < batches; b++) {
    const rowBase = b * inputSize;
    const rowEnd = rowBase + inputSize;
    for (let u = 0; u < units; u++) {
      let acc = 0;
      for (let i = rowBase, w = u * inputSize; i < rowEnd; i++, w++) acc += input[i] * weights[w];
      acc += bias[u];
      output[o++] = acc < min ? min : acc > max ? max : acc;
    }
  }
}

/**
 * Quantized fully connected layer (uint8 input, weights and output) with the Android 10
 * NNAPI output stage (`q` holds one multiplier per unit, normally all equal).
 */
export function fullyConnectedQuantized(
  g: FullyConnectedGeometry,
  input: ReadonlyNumbers,
  weights: ReadonlyNumbers,
  bias: ReadonlyNumbers,
  q: QuantizedOutputStage,
  output: Numbers,
): void {
  const { batches, inputSize, units } = g;
  const { inputOffset, filterOffset, outputOffset, multipliers, shifts } = q;
  const { min, max } = q.activation;
  let o = 0;
  for (let b = 0; b < batches; b++) {
    const rowBase = b * inputSize;
    const rowEnd = rowBase + inputSize;
    for (let u = 0; u < units; u++) {
      let acc = 0;
      for (let i = rowBase, w = u * inputSize; i < rowEnd; i++, w++) {
        acc += (input[i] + inputOffset) * (weights[w] + filterOffset);
      }
      acc = (acc + bias[u]) | 0;
      let v = multiplyByQuantizedMultiplier(acc, multipliers[u], shifts[u]) + outputOffset;
      v = v < min ? min : v > max ? max : v;
      output[o++] = v;
    }
  }
}
