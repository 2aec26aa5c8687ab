/**
 * FULLY_CONNECTED on `cpu-simd`: float32, run by the manifest's generated GEMM kernel on
 * weights in the GEMM layout ([units / 8][8 biases, inputSize rows of 8 weights]). Constant
 * weights and bias are packed once at preparation; weights computed at execution (a MatMul
 * of two runtime tensors: attention's query by key, its weights by value) are repacked
 * before each run, which costs one pass over them against `rows` passes of the product.
 * Other shapes than the planned ones are handed to the reference kernel.
 */
import {
  packedGemmLength,
  packGemmWeights,
  unpackGemmWeights,
} from "../../../kernels/f32_packing.ts";
import { activationRangeFloat } from "../../../kernels/fixed_point.ts";
import type { FullyConnectedGeometry } from "../../../kernels/fc_fully_connected.ts";
import { createF32FullyConnected } from "../../../kernels/manifest.ts";
import { checkFusedActivation } from "../../../operations/common/scalars.ts";
import { fullyConnected, geometryOf } from "../../../operations/fully_connected.ts";
import { type Kernel, OperationError } from "../../../operations/operation.ts";
import { sameShape, type TensorData } from "../../../nnapi/tensor.ts";
import type { StepImplementation, StepOperands } from "../device.ts";

/**
 * Float32, rank-2 weights, a constant activation (extents may be known only at execution:
 * the kernel is bound per shape).
 */
function supports({ inputs }: StepOperands): boolean {
  const [input, weights, , activation] = inputs;
  return input.type === "TENSOR_FLOAT32" && weights.shape.length === 2 &&
    activation.value != null;
}

/** Whether the step's weights and bias are constants (packed at preparation). */
function constantWeights({ inputs }: StepOperands): boolean {
  return inputs[1].value instanceof Float32Array && inputs[2].value instanceof Float32Array;
}

/**
 * The geometry and fused activation code of a dense layer's step (input, weights, bias,
 * activation: FULLY_CONNECTED's operands and those of its dynamically quantized form);
 * undefined when the activation is not a constant or the shapes are wrong (the reference
 * kernel reports those).
 */
export function denseLayerGeometry(
  step: StepOperands,
): { g: FullyConnectedGeometry; code: number } | undefined {
  const [input, weights, bias, activation] = step.inputs;
  if (activation.value == null) return undefined;
  const code = Number(activation.value[0]);
  try {
    const g = geometryOf(input.shape, weights.shape, bias.shape);
    checkFusedActivation(code, "input 3 (activation)");
    return { g, code };
  } catch (error) {
    if (error instanceof OperationError) return undefined;
    throw error;
  }
}

/** The GEMM kernel bound to the packed weights; undefined keeps the reference kernel. */
function bind(step: StepOperands, packed: readonly TensorData[]): Kernel | undefined {
  const input = step.inputs[0];
  // Packed weights are constants (whose raw values the plan may have dropped); none packed
  // are weights computed at execution.
  const packedWeights = packed[0];
  const live = packedWeights === undefined;
  if (input.type !== "TENSOR_FLOAT32") return undefined;
  if (live ? constantWeights(step) : !(packedWeights instanceof Float32Array)) return undefined;
  const dense = denseLayerGeometry(step);
  if (!dense) return undefined;
  const { g, code } = dense;
  const length = packedGemmLength(g.units, g.inputSize);
  if (g.batches === 0 || (packedWeights && packedWeights.length !== length)) return undefined;
  const gemm = { rows: g.batches, depth: g.inputSize, channels: g.units };
  const into = packedWeights instanceof Float32Array ? packedWeights : new Float32Array(length);
  const run = createF32FullyConnected(gemm, into, {
    activation: activationRangeFloat(code),
    liveWeights: live,
  });
  if (!live) return fullyConnectedKernel(run, input.shape);
  const shape = { channels: g.units, depth: g.inputSize };
  return fullyConnectedKernel((x, y, step) => {
    packGemmWeights(step[1].data as Float32Array, step[2].data as Float32Array, shape, into);
    run(x, y);
  }, input.shape);
}

/** Runs `run` on the planned shape, the reference kernel on any other. */
function fullyConnectedKernel(
  run: (x: Float32Array, y: Float32Array, inputs: Parameters<Kernel>[0]) => void,
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
    run(x, y, inputs);
  };
}

/** FULLY_CONNECTED on the SIMD CPU. */
export const fullyConnectedSimd: StepImplementation<"FULLY_CONNECTED"> = {
  type: "FULLY_CONNECTED",
  supports,
  pack(step) {
    if (!constantWeights(step)) return undefined;
    const [, weights, bias] = step.inputs;
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
