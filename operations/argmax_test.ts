import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { OperandType } from "../nnapi/types.ts";
import { argmax } from "./argmax.ts";
import { argmin } from "./argmin.ts";
import type { DeclaredOperand } from "./operation.ts";

function operand(index: number, type: OperandType, dimensions: number[]): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

function signature(type: OperandType, axis: number, outputType: OperandType = "TENSOR_INT32") {
  return {
    type: "ARGMAX" as const,
    inputs: [
      operand(0, type, [2, 3]),
      {
        ...operand(1, "INT32", []),
        lifetime: "CONSTANT_COPY" as const,
        value: Int32Array.of(axis),
      },
    ],
    outputs: [operand(2, outputType, [2])],
  };
}

Deno.test("argmax() needs V1_2 and rejects bad counts, types and axes", () => {
  strictEqual(argmax.validate(signature("TENSOR_QUANT8_ASYMM", -1)), "V1_2");
  const good = signature("TENSOR_FLOAT32", 1);
  throws(() => argmax.validate({ ...good, inputs: good.inputs.slice(0, 1) }), /expected 2 inputs/);
  throws(() => argmax.validate(signature("TENSOR_BOOL8", 1)), /unsupported type TENSOR_BOOL8/);
  throws(
    () => argmax.validate(signature("TENSOR_FLOAT32", 1, "TENSOR_FLOAT32")),
    /output 0 .* expected TENSOR_INT32/,
  );
  throws(() => argmax.validate(signature("TENSOR_FLOAT32", 2)), /axis 2, out of range for rank 2/);
});

Deno.test("argmin() drops the axis and picks the first extreme", () => {
  const info = { scale: 0, zeroPoint: 0 };
  deepStrictEqual(
    argmin.prepare([
      { ...info, type: "TENSOR_FLOAT32", shape: [2, 3], value: undefined },
      { ...info, type: "INT32", shape: [], value: Int32Array.of(0) },
    ], []),
    [[3]],
  );
  const out = new Int32Array(2);
  argmin.execute([
    { ...info, type: "TENSOR_INT32", shape: [2, 3], data: Int32Array.of(5, 1, 1, 2, 2, 0) },
    { ...info, type: "INT32", shape: [], data: Int32Array.of(-1) },
  ], [{ ...info, type: "TENSOR_INT32", shape: [2], data: out }]);
  deepStrictEqual([...out], [1, 2]);
});
