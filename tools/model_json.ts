/** Operands of the model JSON (`POST /v1/models`), for tests and benchmarks that build small models. */

/** A float32 tensor operand; constants carry their values. */
export function float32Tensor(dimensions: number[], lifetime: string, value?: number[]) {
  return {
    type: "TENSOR_FLOAT32",
    dimensions,
    scale: 0,
    zeroPoint: 0,
    lifetime,
    ...(value ? { value } : {}),
  };
}

/** An INT32 scalar constant operand (the converter's own). */
export { int32ScalarOperand as int32Scalar } from "../converter/passes/model_graph.ts";
