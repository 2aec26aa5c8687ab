import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import {
  activationFunction,
  isSupportedActivation,
  matrixBatchVectorMultiplyAccumulate,
} from "./recurrent_common.ts";

Deno.test("isSupportedActivation() accepts exactly the codes the reference functor implements", () => {
  deepStrictEqual([0, 1, 2, 3, 4, 5, 6, 7].filter(isSupportedActivation), [0, 1, 3, 4, 6]);
});

Deno.test("activationFunction() clamps RELU6 and rejects RELU1", () => {
  strictEqual(activationFunction(3)(7), 6);
  strictEqual(activationFunction(3)(-2), 0);
  strictEqual(activationFunction(1)(-2), 0);
  strictEqual(activationFunction(6)(0), 0.5);
  throws(() => activationFunction(2), RangeError);
});

Deno.test("matrixBatchVectorMultiplyAccumulate() adds into strided results per batch and row", () => {
  const matrix = new Float32Array([1, 2, 3, 4]); // 2x2
  const vectors = new Float32Array([1, 1, 2, 0]); // 2 batches
  const result = new Float32Array(8).fill(1);
  matrixBatchVectorMultiplyAccumulate(matrix, 2, 2, vectors, 2, result, 1, 2);
  deepStrictEqual(Array.from(result), [1, 4, 1, 8, 1, 3, 1, 7]);
});
