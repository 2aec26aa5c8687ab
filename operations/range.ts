/**
 * RANGE, an nnserve extension (NNAPI has none; TensorFlow Lite's RANGE and ONNX's Range are
 * the same): start, start + delta, ... up to but not including limit, as a rank-1 tensor of
 * TENSOR_INT32 or TENSOR_FLOAT32 (float32 accumulates, as onnxruntime does). Its inputs are
 * one-element tensors; its length depends on their values, which executors work out when
 * they bind a set of input shapes (a position table over a sequence given at execution).
 */
import { checkInputType } from "./common/operand_types.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  type OperationDefinition,
  type PrepareInput,
  tensorValue,
} from "./operation.ts";

/** The element count of a range from its three values. */
function rangeLength(start: number, limit: number, delta: number): number {
  check(delta !== 0, "delta (input 2) is 0");
  return Math.max(Math.ceil((limit - start) / delta), 0);
}

/** The one value of input `index`. */
function single(inputs: readonly PrepareInput[], index: number): number {
  const value = tensorValue(inputs[index], `input ${index}`);
  check(value.length === 1, `input ${index} holds ${value.length} values, expected 1`);
  return Number(value[0]);
}

/** RANGE (an nnserve extension, HAL 1.3 operand types). */
export const range: OperationDefinition<"RANGE"> = {
  type: "RANGE",

  validate(signature) {
    checkArity(signature, [3], 1);
    const [start] = signature.inputs;
    checkInputType(start, 0, ["TENSOR_INT32", "TENSOR_FLOAT32"]);
    checkTypes(signature, [start.type, start.type, start.type], [start.type]);
    signature.inputs.forEach((input, i) => checkRank(input, `input ${i}`, (r) => r <= 1, "0 or 1"));
    checkRank(signature.outputs[0], "output 0", (r) => r === 1, "1");
    return "V1_3";
  },

  prepare(inputs) {
    return [[rangeLength(single(inputs, 0), single(inputs, 1), single(inputs, 2))]];
  },

  execute(inputs, outputs) {
    const [start, limit, delta] = inputs.map((t) => Number(t.data![0]));
    const out = outputs[0].data!;
    check(out.length === rangeLength(start, limit, delta), "output 0 has the wrong length");
    const float32 = out instanceof Float32Array;
    let value = start;
    for (let i = 0; i < out.length; i++) {
      out[i] = value;
      value = float32 ? Math.fround(value + delta) : value + delta;
    }
  },
};
