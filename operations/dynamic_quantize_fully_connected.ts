/**
 * DYNAMIC_QUANTIZE_FULLY_CONNECTED, an nnserve extension (NNAPI has no operation whose
 * quantization is chosen at execution; onnxruntime's DynamicQuantizeMatMul, and what ONNX's
 * DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul computes): a float32 input
 * quantized to uint8 with a scale and zero point chosen from its own values at each
 * execution (`kernels/dynamic_quantization.ts`), multiplied in integers by 8-bit weights
 * (TENSOR_QUANT8_ASYMM or TENSOR_QUANT8_ASYMM_SIGNED, their scale and zero point the
 * operand's), the int32 sums scaled back to float32 by the product of the two scales; then
 * the float32 bias added and the fused activation applied. Shapes as FULLY_CONNECTED's:
 * the input (rank >= 2) flattened to [batches, inputSize], weights [units, inputSize], bias
 * [units], output [batches, units].
 *
 * In float32 arithmetic (the weights' scale a float32, as NNAPI's operand scales are), output =
 * act(float(sum) * float(inputScale * weightsScale) + bias):
 * sums of 8-bit products are exact, so every device that computes them gives the same
 * result bit for bit.
 */
import {
  dequantizeSums,
  type DynamicQuantization,
  dynamicQuantization,
  quantizeCentered,
} from "../kernels/dynamic_quantization.ts";
import { activationRangeFloat } from "../kernels/fixed_point.ts";
import { elementCount, type Tensor, type TensorInfo } from "../nnapi/tensor.ts";
import { checkInputType } from "./common/operand_types.ts";
import { checkFusedActivation } from "./common/scalars.ts";
import { geometryOf } from "./fully_connected.ts";
import {
  checkArity,
  checkRank,
  checkTypes,
  type OperationDefinition,
  type PrepareInput,
  scalarOf,
  scalarValue,
} from "./operation.ts";

/** The float32 factor of the sums: the input's scale times the weights' (a float32). */
export function inputTimesWeightsScale(q: DynamicQuantization, weightsScale: number): number {
  return Math.fround(q.scale * Math.fround(weightsScale));
}

/** DYNAMIC_QUANTIZE_FULLY_CONNECTED (an nnserve extension, HAL 1.3 operand types). */
export const dynamicQuantizeFullyConnected: OperationDefinition<
  "DYNAMIC_QUANTIZE_FULLY_CONNECTED"
> = {
  type: "DYNAMIC_QUANTIZE_FULLY_CONNECTED",

  validate(signature) {
    checkArity(signature, [4], 1);
    const [input, weights, bias] = signature.inputs;
    checkInputType(weights, 1, ["TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED"]);
    const float = "TENSOR_FLOAT32";
    checkTypes(signature, [float, weights.type, float, "INT32"], [float]);
    checkRank(input, "input 0", (r) => r >= 2, "at least 2");
    checkRank(weights, "input 1 (weights)", (r) => r === 2, "2");
    checkRank(bias, "input 2 (bias)", (r) => r === 1, "1");
    return "V1_3";
  },

  prepare(inputs: readonly PrepareInput[]) {
    const [input, weights, bias, activation] = inputs;
    const g = geometryOf(input.shape, weights.shape, bias.shape);
    if (activation.value !== undefined) {
      checkFusedActivation(scalarValue(activation, "input 3 (activation)"), "input 3 (activation)");
    }
    return [[g.batches, g.units]];
  },

  cost(inputs: readonly PrepareInput[], outputs: readonly TensorInfo[]) {
    return elementCount(outputs[0].shape) * (inputs[1].shape[1] ?? 1);
  },

  execute(inputs: readonly Tensor[], outputs: readonly Tensor[]) {
    const [input, weights, bias, activationInput] = inputs;
    const out = outputs[0].data!;
    const g = geometryOf(input.shape, weights.shape, bias.shape);
    const activation = scalarOf(activationInput);
    checkFusedActivation(activation, "input 3 (activation)");
    const range = activationRangeFloat(activation);
    const x = input.data as Float32Array;
    const q = dynamicQuantization(x);
    const centered = new Float32Array(x.length);
    quantizeCentered(x, q, centered);
    const w = weights.data!;
    const { inputSize: k, units } = g;
    const sums = new Float64Array(g.batches * units);
    for (let row = 0; row < g.batches; row++) {
      const xRow = row * k;
      for (let u = 0; u < units; u++) {
        const wRow = u * k;
        let sum = 0;
        for (let p = 0; p < k; p++) {
          sum += centered[xRow + p] * (Number(w[wRow + p]) - weights.zeroPoint);
        }
        sums[row * units + u] = sum;
      }
    }
    const multiplier = inputTimesWeightsScale(q, weights.scale);
    dequantizeSums(sums, multiplier, bias.data!, range, out as Float32Array);
  },
};
