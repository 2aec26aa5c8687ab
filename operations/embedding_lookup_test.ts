import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { Tensor } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { embeddingLookup } from "./embedding_lookup.ts";
import { type DeclaredOperand, OperationError } from "./operation.ts";

function declared(type: OperandType, dimensions: number[], index: number): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

function tensor(type: OperandType, shape: number[], data: Tensor["data"]): Tensor {
  return { type, shape, scale: 0, zeroPoint: 0, data };
}

Deno.test("embeddingLookup.validate() takes int32 lookups and float32/int32/quant8 values", () => {
  for (const type of ["TENSOR_FLOAT32", "TENSOR_INT32", "TENSOR_QUANT8_ASYMM"] as const) {
    const sig = {
      type: "EMBEDDING_LOOKUP" as const,
      inputs: [declared("TENSOR_INT32", [3], 0), declared(type, [3, 2], 1)],
      outputs: [declared(type, [3, 2], 2)],
    };
    strictEqual(embeddingLookup.validate(sig), "V1_0");
  }
  throws(() =>
    embeddingLookup.validate({
      type: "EMBEDDING_LOOKUP",
      inputs: [declared("TENSOR_INT32", [3], 0), declared("TENSOR_FLOAT32", [3], 1)],
      outputs: [declared("TENSOR_FLOAT32", [3], 2)],
    }), OperationError);
});

Deno.test("embeddingLookup.prepare() gives [lookups, ...value dims after the first]", () => {
  const info = (shape: number[]) => ({
    type: "TENSOR_FLOAT32" as const,
    shape,
    scale: 0,
    zeroPoint: 0,
    value: undefined,
  });
  deepStrictEqual(embeddingLookup.prepare([info([5]), info([3, 2, 4])], []), [[5, 2, 4]]);
});

Deno.test("embeddingLookup.execute() fails with an OperationError on an out-of-range lookup", () => {
  const values = tensor("TENSOR_FLOAT32", [3, 2], new Float32Array(6));
  const out = tensor("TENSOR_FLOAT32", [2, 2], new Float32Array(4));
  throws(
    () =>
      embeddingLookup.execute([tensor("TENSOR_INT32", [2], new Int32Array([0, 3])), values], [out]),
    OperationError,
  );
  throws(
    () =>
      embeddingLookup.execute([tensor("TENSOR_INT32", [2], new Int32Array([-1, 0])), values], [
        out,
      ]),
    OperationError,
  );
});

Deno.test("embeddingLookup.execute() gathers rows (CTS embedding_lookup order)", () => {
  const values = tensor("TENSOR_INT32", [3, 2], new Int32Array([0, 1, 10, 11, 20, 21]));
  const out = tensor("TENSOR_INT32", [3, 2], new Int32Array(6));
  embeddingLookup.execute([tensor("TENSOR_INT32", [3], new Int32Array([1, 0, 2])), values], [out]);
  deepStrictEqual(Array.from(out.data!), [10, 11, 0, 1, 20, 21]);
});

Deno.test("embeddingLookup.validate() takes float16 values as V1_3 and names a mismatched output", () => {
  const sig = (output: OperandType) => ({
    type: "EMBEDDING_LOOKUP" as const,
    inputs: [declared("TENSOR_INT32", [2], 0), declared("TENSOR_FLOAT16", [3, 2], 1)],
    outputs: [declared(output, [2, 2], 2)],
  });
  strictEqual(embeddingLookup.validate(sig("TENSOR_FLOAT16")), "V1_3");
  throws(
    () => embeddingLookup.validate(sig("TENSOR_FLOAT32")),
    /output 0 \(operand 2\) has type TENSOR_FLOAT32, expected TENSOR_FLOAT16/,
  );
});

Deno.test("embeddingLookup.execute() copies float16 rows bit for bit", () => {
  // Rows are copied, not converted: the largest float16, its smallest subnormal, -0 and the
  // float16 nearest 0.1 come out exactly.
  const rows = [65504, 2 ** -24, -0, 0.0999755859375, -1.5, 3];
  const values = tensor("TENSOR_FLOAT16", [3, 2], Float16Array.from(rows));
  const out = tensor("TENSOR_FLOAT16", [4, 2], new Float16Array(8));
  embeddingLookup.execute([tensor("TENSOR_INT32", [4], Int32Array.of(2, 0, 0, 1)), values], [
    out,
  ]);
  deepStrictEqual(Array.from(out.data!), [
    -1.5,
    3,
    65504,
    2 ** -24,
    65504,
    2 ** -24,
    -0,
    0.0999755859375,
  ]);
  strictEqual(Object.is((out.data as Float16Array)[6], -0), true);
});
