import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { OperandType } from "../nnapi/types.ts";
import { instanceNormalization } from "./instance_normalization.ts";
import type { DeclaredOperand } from "./operation.ts";

function operand(index: number, type: OperandType, dimensions: number[]): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

function signature(type: OperandType, dims: number[], scalar: OperandType) {
  return {
    type: "INSTANCE_NORMALIZATION" as const,
    inputs: [
      operand(0, type, dims),
      operand(1, scalar, []),
      operand(2, scalar, []),
      operand(3, scalar, []),
      operand(4, "BOOL", []),
    ],
    outputs: [operand(5, type, dims)],
  };
}

Deno.test("instanceNormalization() needs V1_2 and rejects bad counts, types and ranks", () => {
  strictEqual(
    instanceNormalization.validate(signature("TENSOR_FLOAT16", [1, 2, 2, 1], "FLOAT16")),
    "V1_2",
  );
  const good = signature("TENSOR_FLOAT32", [1, 2, 2, 1], "FLOAT32");
  throws(
    () => instanceNormalization.validate({ ...good, inputs: good.inputs.slice(0, 4) }),
    /expected 5 inputs, got 4/,
  );
  throws(
    () => instanceNormalization.validate(signature("TENSOR_FLOAT32", [1, 2, 2, 1], "FLOAT16")),
    /input 1 .* expected FLOAT32/,
  );
  throws(
    () => instanceNormalization.validate(signature("TENSOR_FLOAT32", [2, 2, 1], "FLOAT32")),
    /rank 3, expected 4/,
  );
});

Deno.test("instanceNormalization() normalizes each NCHW channel plane", () => {
  const info = { scale: 0, zeroPoint: 0 };
  const scalar = (value: number) => ({
    ...info,
    type: "FLOAT32" as const,
    shape: [],
    data: Float32Array.of(value),
  });
  const out = new Float32Array(4);
  instanceNormalization.execute([
    { ...info, type: "TENSOR_FLOAT32", shape: [1, 2, 1, 2], data: Float32Array.of(1, -1, 3, 3) },
    scalar(1),
    scalar(0),
    scalar(0),
    { ...info, type: "BOOL", shape: [], data: Uint8Array.of(1) },
  ], [{ ...info, type: "TENSOR_FLOAT32", shape: [1, 2, 1, 2], data: out }]);
  deepStrictEqual([...out], [1, -1, 0, 0]);
});
