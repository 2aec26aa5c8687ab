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
} from "../kernels/fc_fully_connected.ts";
import { activationRangeFloat } from "../kernels/fixed_point.ts";
import { elementCount, type Tensor, type TensorInfo } from "../nnapi/tensor.ts";
import type { HalVersion, OperandType } from "../nnapi/types.ts";
import { checkInputType } from "./common/operand_types.ts";
import { checkBiasScale, convolutionOutputStage } from "./common/quantization.ts";
import { checkFusedActivation } from "./common/scalars.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  type OperationDefinition,
  type OperationSignature,
  type PrepareInput,
  scalarOf,
  scalarValue,
} from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

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
export function geometryOf(
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

/** FULLY_CONNECTED definition. */
export const fullyConnected: OperationDefinition<"FULLY_CONNECTED"> = withSignedQuant8({
  type: "FULLY_CONNECTED",
  validate,
  prepare,
  cost,
  execute,
});
