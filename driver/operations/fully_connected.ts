/**
 * FULLY_CONNECTED: output = activation(input x weights^T + bias). The input (rank >= 2) is
 * flattened to [batches, inputSize] with inputSize = weights dims[1]; weights are
 * [units, inputSize], bias [units], output [batches, units].
 * Types: float32, float16 (HAL 1.2) or quant8 asymm with an int32 bias (Android 10
 * `fully_connected::validate` / `prepare`).
 */
import {
  fullyConnectedFloat,
  type FullyConnectedGeometry,
  fullyConnectedQuantized,
} from "../../kernels/fc_fully_connected.ts";
import { packedGemmLength, packGemmWeights, unpackGemmWeights } from "../../kernels/f32_packing.ts";
import { activationRangeFloat } from "../../kernels/fixed_point.ts";
import { createF32FullyConnected } from "../../kernels/manifest.ts";
import { elementCount, type Tensor, type TensorData, type TensorInfo } from "../../nnapi/tensor.ts";
import type { HalVersion, OperandType } from "../../nnapi/types.ts";
import { checkInputType } from "./common/operand_types.ts";
import { checkBiasScale, convolutionOutputStage } from "./common/quantization.ts";
import { checkFusedActivation } from "./common/scalars.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  type Kernel,
  type OperationDefinition,
  OperationError,
  type OperationSignature,
  type PrepareInput,
  scalarOf,
  scalarValue,
} from "./operation.ts";

const SUPPORTED_INPUTS: readonly OperandType[] = [
  "TENSOR_FLOAT32",
  "TENSOR_FLOAT16",
  "TENSOR_QUANT8_ASYMM",
];

/** Checks FULLY_CONNECTED operand types and quantization; returns the HAL version needed. */
function validate(signature: OperationSignature): HalVersion {
  checkArity(signature, [4], 1);
  const [input, weights, bias] = signature.inputs;
  checkInputType(input, 0, SUPPORTED_INPUTS);
  const quantized = input.type === "TENSOR_QUANT8_ASYMM";
  checkTypes(
    signature,
    [input.type, input.type, quantized ? "TENSOR_INT32" : input.type, "INT32"],
    [input.type],
  );
  checkRank(input, "input 0", (r) => r >= 2, "at least 2");
  checkRank(weights, "input 1 (weights)", (r) => r === 2, "2");
  checkRank(bias, "input 2 (bias)", (r) => r === 1, "1");
  if (input.type === "TENSOR_FLOAT16") return "V1_2";
  // Before HAL 1.2, NNAPI required outputScale > inputScale * weightsScale.
  if (quantized && !checkBiasScale(signature, "weights")) return "V1_2";
  return "V1_0";
}

/** Batches, input size and units of a FULLY_CONNECTED call, checked as NNAPI does. */
function geometryOf(
  inputShape: readonly number[],
  weightsShape: readonly number[],
  biasShape: readonly number[],
): FullyConnectedGeometry {
  check(inputShape.length >= 2, `input 0 has rank ${inputShape.length}, expected at least 2`);
  check(weightsShape.length === 2, `input 1 (weights) has rank ${weightsShape.length}, expected 2`);
  check(biasShape.length === 1, `input 2 (bias) has rank ${biasShape.length}, expected 1`);
  const [units, inputSize] = weightsShape;
  check(units > 0 && inputSize > 0, `input 1 (weights) has empty dimensions [${weightsShape}]`);
  const elements = elementCount(inputShape);
  const batches = Math.trunc(elements / inputSize);
  check(
    batches * inputSize === elements,
    `input 0 has ${elements} elements, not a multiple of the weights' input size ${inputSize}`,
  );
  check(
    biasShape[0] === units,
    `input 2 (bias) has ${biasShape[0]} elements, expected ${units} (weights rows)`,
  );
  return { batches, inputSize, units };
}

/** Infers the [batches, units] output shape. */
function prepare(inputs: readonly PrepareInput[], _outputs: readonly TensorInfo[]): number[][] {
  const [input, weights, bias, activation] = inputs;
  const g = geometryOf(input.shape, weights.shape, bias.shape);
  // The activation does not affect the shape: check it now only if it is already known.
  if (activation.value !== undefined) {
    checkFusedActivation(scalarValue(activation, "input 3 (activation)"), "input 3 (activation)");
  }
  return [[g.batches, g.units]];
}

/** Multiply-adds: every output element is a dot product over the weights' input size. */
function cost(inputs: readonly PrepareInput[], outputs: readonly TensorInfo[]): number {
  return elementCount(outputs[0].shape) * (inputs[1].shape[1] ?? 1);
}

/** Reference kernel: row-by-row dot products (float or Android 10 quantized arithmetic). */
function execute(inputs: readonly Tensor[], outputs: readonly Tensor[]): void {
  const [input, weights, bias, activationInput] = inputs;
  const output = outputs[0];
  if (elementCount(output.shape) === 0) return;
  const g = geometryOf(input.shape, weights.shape, bias.shape);
  const activation = scalarOf(activationInput);
  checkFusedActivation(activation, "input 3 (activation)");
  if (input.type === "TENSOR_QUANT8_ASYMM") {
    const stage = convolutionOutputStage({ input, filter: weights, output }, g.units, activation);
    fullyConnectedQuantized(g, input.data!, weights.data!, bias.data!, stage, output.data!);
  } else {
    const range = activationRangeFloat(activation);
    fullyConnectedFloat(g, input.data!, weights.data!, bias.data!, range, output.data!);
  }
}

/**
 * Preparation-time packing for the optimized float32 kernels: constant float32 weights and
 * bias in the GEMM layout ([units / 8][8 biases, inputSize rows of 8 weights]).
 */
function pack(inputs: readonly PrepareInput[]): TensorData[] | undefined {
  const [input, weights, bias] = inputs;
  if (input.type !== "TENSOR_FLOAT32" || weights.shape.length !== 2) return undefined;
  if (!(weights.value instanceof Float32Array) || !(bias.value instanceof Float32Array)) {
    return undefined;
  }
  const [units, inputSize] = weights.shape;
  return [packGemmWeights(weights.value, bias.value, { channels: units, depth: inputSize })];
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/**
 * Binds the manifest's GEMM kernel to weights packed at preparation when the activation is
 * a constant; other shapes than the planned ones run the reference kernel.
 */
function selectKernel(
  inputs: readonly PrepareInput[],
  _outputs: readonly TensorInfo[],
  packed: readonly TensorData[],
): Kernel | undefined {
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
  const inputShape = input.shape;
  return (inputs, outputs) => {
    const x = inputs[0].data;
    const y = outputs[0].data;
    if (
      !sameShape(inputs[0].shape, inputShape) || !(x instanceof Float32Array) ||
      !(y instanceof Float32Array)
    ) {
      return execute(inputs, outputs);
    }
    run(x, y);
  };
}

/** FULLY_CONNECTED definition. */
export const fullyConnected: OperationDefinition<"FULLY_CONNECTED"> = {
  type: "FULLY_CONNECTED",
  validate,
  prepare,
  cost,
  execute,
  pack,
  packReplaces: [1, 2],
  unpack: (inputs, packed) => {
    const [units, inputSize] = inputs[1].shape;
    const { weights, bias } = unpackGemmWeights(packed[0], { channels: units, depth: inputSize });
    return [weights, bias];
  },
  selectKernel,
};
