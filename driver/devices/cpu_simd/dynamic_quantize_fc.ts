/**
 * DYNAMIC_QUANTIZE_FULLY_CONNECTED on `cpu-simd`: the input quantized at execution
 * (`kernels/dynamic_quantization.ts`) and its centered integers multiplied by the centered
 * weights on the float32 GEMM kernel, then scaled, biased and clamped as the reference
 * does. float32 holds every integer below 2^24, so the GEMM's sums (partial ones too, in
 * any order) are exact when each row's sum of magnitudes times the largest weight stays
 * below it: the run checks that bound as it quantizes, and an input past it (sums no real
 * layer reaches) runs on the reference kernel. The result is the reference's bit for bit.
 * The centered weights are packed once at preparation.
 */
import {
  packedGemmLength,
  packGemmWeights,
  unpackGemmWeights,
} from "../../../kernels/f32_packing.ts";
import {
  dequantizeSums,
  dynamicQuantization,
  quantizeCentered,
} from "../../../kernels/dynamic_quantization.ts";
import { activationRangeFloat } from "../../../kernels/fixed_point.ts";
import { createF32FullyConnected } from "../../../kernels/manifest.ts";
import { FUSED_NONE } from "../../../nnapi/types.ts";
import { sameShape, type TensorData } from "../../../nnapi/tensor.ts";
import {
  dynamicQuantizeFullyConnected,
  inputTimesWeightsScale,
} from "../../../operations/dynamic_quantize_fully_connected.ts";
import type { Kernel } from "../../../operations/operation.ts";
import { denseLayerGeometry } from "./fully_connected.ts";
import type { StepImplementation, StepOperands } from "../device.ts";

/** float32 holds every integer of smaller magnitude exactly. */
const EXACT_FLOAT_INTEGERS = 2 ** 24;

/** The largest magnitude among `values`. */
function largestMagnitude(values: ArrayLike<number>): number {
  let largest = 0;
  for (let i = 0; i < values.length; i++) largest = Math.max(largest, Math.abs(values[i]));
  return largest;
}

/** The largest sum of magnitudes of a row of the [rows, depth] matrix `centered`. */
function largestRowSum(centered: Float32Array, depth: number): number {
  let largest = 0;
  for (let start = 0; start < centered.length; start += depth) {
    let sum = 0;
    for (let p = start; p < start + depth; p++) sum += Math.abs(centered[p]);
    largest = Math.max(largest, sum);
  }
  return largest;
}

function bind(step: StepOperands, packed: readonly TensorData[]): Kernel | undefined {
  const [input, weights] = step.inputs;
  const into = packed[0];
  const dense = denseLayerGeometry(step);
  if (!(into instanceof Float32Array) || !dense) return undefined;
  const { g, code } = dense;
  const { batches: rows, inputSize: depth, units } = g;
  if (rows === 0 || into.length !== packedGemmLength(units, depth)) return undefined;
  const run = createF32FullyConnected({ rows, depth, channels: units }, into, {
    activation: activationRangeFloat(FUSED_NONE),
    liveWeights: false,
  });
  // The packed block holds the centered weights and zeros (bias, padding).
  const largestWeight = largestMagnitude(into);
  const range = activationRangeFloat(code);
  const centered = new Float32Array(rows * depth);
  const sums = new Float32Array(rows * units);
  const inputShape = input.shape;
  return (inputs, outputs) => {
    const [x, b] = [inputs[0].data, inputs[2].data];
    const y = outputs[0].data;
    if (
      !sameShape(inputs[0].shape, inputShape) || !(x instanceof Float32Array) ||
      !(y instanceof Float32Array) || !(b instanceof Float32Array)
    ) {
      return dynamicQuantizeFullyConnected.execute(inputs, outputs);
    }
    const q = dynamicQuantization(x);
    quantizeCentered(x, q, centered);
    if (largestRowSum(centered, depth) * largestWeight >= EXACT_FLOAT_INTEGERS) {
      return dynamicQuantizeFullyConnected.execute(inputs, outputs);
    }
    run(centered, sums);
    dequantizeSums(sums, inputTimesWeightsScale(q, weights.scale), b, range, y);
  };
}

/** DYNAMIC_QUANTIZE_FULLY_CONNECTED on the SIMD CPU (constant weights). */
export const dynamicQuantizeFullyConnectedSimd: StepImplementation<
  "DYNAMIC_QUANTIZE_FULLY_CONNECTED"
> = {
  type: "DYNAMIC_QUANTIZE_FULLY_CONNECTED",
  supports: ({ inputs }) =>
    inputs[1].value != null && inputs[1].shape.length === 2 && inputs[3].value != null,
  pack({ inputs }) {
    const weights = inputs[1];
    if (weights.value == null) return undefined;
    const [units, depth] = weights.shape;
    // A loop: TypedArray.from with a mapping runs about 60 ns an element in V8.
    const values = weights.value as ArrayLike<number>;
    const centered = new Float32Array(values.length);
    for (let i = 0; i < values.length; i++) centered[i] = values[i] - weights.zeroPoint;
    return [packGemmWeights(centered, new Float32Array(units), { channels: units, depth })];
  },
  packReplaces: [1],
  unpack(inputs, packed) {
    const weights = inputs[1];
    const [units, depth] = weights.shape;
    const centered = unpackGemmWeights(packed[0], { channels: units, depth }).weights;
    const raw = weights.type === "TENSOR_QUANT8_ASYMM_SIGNED"
      ? new Int8Array(units * depth)
      : new Uint8Array(units * depth);
    for (let i = 0; i < raw.length; i++) raw[i] = centered[i] + weights.zeroPoint;
    return [raw];
  },
  bind,
};
