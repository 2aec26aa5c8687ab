import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { TensorData } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { lshProjection } from "./lsh_projection.ts";
import { type DeclaredOperand, OperationError, type PrepareInput } from "./operation.ts";

function declared(
  type: OperandType,
  dimensions: number[],
  index: number,
  value?: TensorData,
): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT", value };
}

function signature(hashType: OperandType, projection: number) {
  return {
    type: "LSH_PROJECTION" as const,
    inputs: [
      declared(hashType, [4, 2], 0),
      declared("TENSOR_INT32", [3, 2], 1),
      declared(hashType, [3], 2),
      declared("INT32", [], 3, new Int32Array([projection])),
    ],
    outputs: [declared("TENSOR_INT32", [8], 4)],
  };
}

/** 4 functions of 2 bits over 3 items; `weight`: data, null (omitted) or unknown. */
function inputs(projection: number, weight: Float32Array | null | undefined): PrepareInput[] {
  const info = (type: OperandType, shape: number[], value: TensorData | null | undefined) => ({
    type,
    shape,
    scale: 0,
    zeroPoint: 0,
    value,
  });
  return [
    info("TENSOR_FLOAT32", [4, 2], new Float32Array(8)),
    info("TENSOR_INT32", [3, 2], undefined),
    info("TENSOR_FLOAT32", [3], weight),
    info("INT32", [], new Int32Array([projection])),
  ];
}

Deno.test("lshProjection.validate() gives V1_0 for float32 seeds, V1_2 for float16 or SPARSE", () => {
  strictEqual(lshProjection.validate(signature("TENSOR_FLOAT32", 2)), "V1_0");
  strictEqual(lshProjection.validate(signature("TENSOR_FLOAT32", 1)), "V1_0");
  strictEqual(lshProjection.validate(signature("TENSOR_FLOAT32", 3)), "V1_2");
  strictEqual(lshProjection.validate(signature("TENSOR_FLOAT16", 2)), "V1_2");
  throws(() => lshProjection.validate(signature("TENSOR_FLOAT32", 4)), OperationError);
  throws(() => lshProjection.validate(signature("TENSOR_INT32", 2)), OperationError);
});

Deno.test("lshProjection.prepare() outputs one int per function (sparse) or per bit (dense)", () => {
  deepStrictEqual(lshProjection.prepare(inputs(1, null), []), [[4]]);
  deepStrictEqual(lshProjection.prepare(inputs(3, undefined), []), [[4]]);
  deepStrictEqual(lshProjection.prepare(inputs(2, new Float32Array(3)), []), [[8]]);
  deepStrictEqual(lshProjection.prepare(inputs(2, undefined), []), [[8]]);
});

Deno.test("lshProjection.prepare() rejects a weighted sparse or unweighted dense projection", () => {
  throws(() => lshProjection.prepare(inputs(1, new Float32Array(3)), []), OperationError);
  throws(() => lshProjection.prepare(inputs(2, null), []), OperationError);
});

Deno.test("lshProjection.prepare() rejects more than 32 bits per hash function", () => {
  const wide = inputs(1, null);
  wide[0] = { ...wide[0], shape: [1, 33] };
  throws(() => lshProjection.prepare(wide, []), OperationError);
});

Deno.test("lshProjection.execute() hashes the CTS lsh_projection_2 input (sparse, no weight)", () => {
  const t = (type: OperandType, shape: number[], data: TensorData | null) => ({
    type,
    shape,
    scale: 0,
    zeroPoint: 0,
    data,
  });
  const out = t("TENSOR_INT32", [4], new Int32Array(4));
  lshProjection.execute([
    t(
      "TENSOR_FLOAT32",
      [4, 2],
      new Float32Array([0.123, 0.456, -0.321, -0.654, 1.234, 5.678, -4.321, -8.765]),
    ),
    t("TENSOR_INT32", [3, 2], new Int32Array([12345, 54321, 67890, 9876, -12345678, -87654321])),
    t("TENSOR_FLOAT32", [3], null),
    t("INT32", [], new Int32Array([1])),
  ], [out]);
  deepStrictEqual(Array.from(out.data!), [1, 2, 2, 0]);
});
