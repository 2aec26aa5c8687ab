import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { OperandType } from "../nnapi/types.ts";
import type { DeclaredOperand } from "./operation.ts";
import { topkV2 } from "./topk_v2.ts";

function operand(
  index: number,
  type: OperandType,
  dimensions: number[],
  extra: Partial<DeclaredOperand> = {},
): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT", ...extra };
}

function signature(type: OperandType, k: number, indicesType: OperandType = "TENSOR_INT32") {
  return {
    type: "TOPK_V2" as const,
    inputs: [
      operand(0, type, [2, 3]),
      operand(1, "INT32", [], { lifetime: "CONSTANT_COPY", value: Int32Array.of(k) }),
    ],
    outputs: [operand(2, type, [2, k]), operand(3, indicesType, [2, k])],
  };
}

Deno.test("topkV2() needs V1_2 and rejects bad counts, types and k", () => {
  strictEqual(topkV2.validate(signature("TENSOR_INT32", 2)), "V1_2");
  const good = signature("TENSOR_FLOAT32", 2);
  throws(
    () => topkV2.validate({ ...good, outputs: good.outputs.slice(0, 1) }),
    /expected 2 outputs, got 1/,
  );
  throws(() => topkV2.validate(signature("TENSOR_BOOL8", 2)), /unsupported type TENSOR_BOOL8/);
  throws(
    () => topkV2.validate(signature("TENSOR_FLOAT32", 2, "TENSOR_FLOAT32")),
    /output 1 .* expected TENSOR_INT32/,
  );
  throws(() => topkV2.validate(signature("TENSOR_FLOAT32", 4)), /k 4, expected 1 to/);
});

Deno.test("topkV2() puts the higher index first among equal values", () => {
  const info = { scale: 0, zeroPoint: 0 };
  const values = new Float32Array(2);
  const indices = new Int32Array(2);
  topkV2.execute([
    { ...info, type: "TENSOR_FLOAT32", shape: [3], data: Float32Array.of(2, 5, 2) },
    { ...info, type: "INT32", shape: [], data: Int32Array.of(2) },
  ], [
    { ...info, type: "TENSOR_FLOAT32", shape: [2], data: values },
    { ...info, type: "TENSOR_INT32", shape: [2], data: indices },
  ]);
  deepStrictEqual([...values], [5, 2]);
  deepStrictEqual([...indices], [1, 2]);
});
