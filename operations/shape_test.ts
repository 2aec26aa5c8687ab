import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { OperandType } from "../nnapi/types.ts";
import { type DeclaredOperand, ValueNotYetKnown } from "./operation.ts";
import { shape } from "./shape.ts";

function operand(index: number, type: OperandType, dimensions: number[]): DeclaredOperand {
  return { index, type, dimensions, scale: 1, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

function validate(inputs: DeclaredOperand[], outputs: DeclaredOperand[]) {
  return shape.validate({ type: "SHAPE", inputs, outputs });
}

Deno.test("shape() takes any tensor type and gives a rank-1 TENSOR_INT32 (HAL 1.3 types)", () => {
  for (
    const type of ["TENSOR_FLOAT32", "TENSOR_INT32", "TENSOR_QUANT8_ASYMM", "TENSOR_BOOL8"] as const
  ) {
    strictEqual(validate([operand(0, type, [2, 0])], [operand(1, "TENSOR_INT32", [2])]), "V1_3");
  }
  throws(
    () => validate([operand(0, "INT32", [])], [operand(1, "TENSOR_INT32", [1])]),
    /input 0 \(operand 0\) has unsupported type INT32/,
  );
  throws(
    () => validate([operand(0, "TENSOR_FLOAT32", [2])], [operand(1, "INT32", [])]),
    /output 0 \(operand 1\) has type INT32, expected TENSOR_INT32/,
  );
  throws(
    () => validate([operand(0, "TENSOR_FLOAT32", [2])], [operand(1, "TENSOR_INT32", [1, 1])]),
    /output 0 \(operand 1\) has rank 2, expected 1/,
  );
});

Deno.test("shape() gives the input's rank as its extent, and its extents at execution", () => {
  const input = { type: "TENSOR_FLOAT32" as const, shape: [2, 0, 5], scale: 0, zeroPoint: 0 };
  deepStrictEqual(shape.prepare([{ ...input, value: undefined }], []), [[3]]);
  // Unknown rank: nothing to infer yet.
  throws(() => shape.prepare([{ ...input, shape: [], value: undefined }], []), ValueNotYetKnown);
  const out = new Int32Array(3);
  const output = { type: "TENSOR_INT32" as const, shape: [3], scale: 0, zeroPoint: 0, data: out };
  shape.execute([{ ...input, shape: [2, 7, 5], data: new Float32Array(70) }], [output]);
  deepStrictEqual(Array.from(out), [2, 7, 5]);
});
