/**
 * FULLY_CONNECTED on `cpu-simd`: float32 with constant weights and bias, packed once at
 * preparation in the GEMM layout ([units / 8][8 biases, inputSize rows of 8 weights]) and
 * run by the manifest's generated GEMM kernel; other shapes than the planned ones are handed
 * to the reference kernel.
 */
import {
  packedGemmLength,
  packGemmWeights,
  unpackGemmWeights,
} from "../../../kernels/f32_packing.ts";
import { activationRangeFloat } from "../../../kernels/fixed_point.ts";
import type { FullyConnectedGeometry } from "../../../kernels/fc_fully_connected.ts";
import { createF32FullyConnected } from "../../../kernels/manifest.ts";
import { checkFusedActivation } from "../../operations/common/scalars.ts";
import { fullyConnected, geometryOf } from "../../operations/fully_connected.ts";
import { type Kernel, OperationError } from "../../operations/operation.ts";
import { isFullySpecified, sameShape, type TensorData } from "../../../nnapi/tensor.ts";
import type { StepImplementation, StepOperands } from "../device.ts";

/** Float32, rank-2 constant weights and bias, a constant activation, static shapes. */
function supports({ inputs, outputs }: StepOperands): boolean {
  const [input, weights, bias, activation] = inputs;
  return input.type === "TENSOR_FLOAT32" && weights.shape.length === 2 &&
    weights.value instanceof Float32Array && bias.value instanceof Float32Array &&
    activation.value != null && isFullySpecified(input.shape) &&
    isFullySpecified(outputs[0].shape);
}

/** The GEMM kernel bound to the packed weights; undefined keeps the reference kernel. */
function bind({ inputs }: StepOperands, packed: readonly TensorData[]): Kernel | undefined {
  const [input, weights, bias, activation] = inputs;
  const packedWeights = packed[0];
  if (input.type !== "TENSOR_FLOAT32" || packed.length !== 1) return undefined;
  if (!(packedWeights instanceof Float32Array) || activation.value == null) return undefined;
  let g: FullyConnectedGeometry;
  const code = Number(activation.value[0]);
  try {
    g = geometryOf(input.shape, weights.shape, bias.shape);
    checkFusedActivation(code, "input 3 (activation)");
  } catch (error) {
    if (error instanceof OperationError) return undefined; // the reference kernel reports it
    throw error;
  }
  if (g.batches === 0 || packedWeights.length !== packedGemmLength(g.units, g.inputSize)) {
    return undefined;
  }
  const run = createF32FullyConnected(
    { rows: g.batches, depth: g.inputSize, channels: g.units },
    packedWeights,
    { activation: activationRangeFloat(code) },
  );
  return fullyConnectedKernel(run, input.shape);
}

/** Runs `run` on the planned shape, the reference kernel on any other. */
function fullyConnectedKernel(
  run: (x: Float32Array, y: Float32Array) => void,
  inputShape: readonly number[],
): Kernel {
  return (inputs, outputs) => {
    const x = inputs[0].data;
    const y = outputs[0].data;
    if (
      !sameShape(inputs[0].shape, inputShape) || !(x instanceof Float32Array) ||
      !(y instanceof Float32Array)
    ) {
      return fullyConnected.execute(inputs, outputs);
    }
    run(x, y);
  };
}

/** FULLY_CONNECTED on the SIMD CPU. */
export const fullyConnectedSimd: StepImplementation<"FULLY_CONNECTED"> = {
  type: "FULLY_CONNECTED",
  supports,
  pack({ inputs }) {
    const [, weights, bias] = inputs;
    if (!(weights.value instanceof Float32Array) || !(bias.value instanceof Float32Array)) {
      return undefined;
    }
    const [units, inputSize] = weights.shape;
    return [packGemmWeights(weights.value, bias.value, { channels: units, depth: inputSize })];
  },
  packReplaces: [1, 2],
  unpack(inputs, packed) {
    const [units, inputSize] = inputs[1].shape;
    const { weights, bias } = unpackGemmWeights(packed[0], { channels: units, depth: inputSize });
    return [weights, bias];
  },
  bind,
};
