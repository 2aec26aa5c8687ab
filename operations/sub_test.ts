import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { Tensor } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { div } from "./div.ts";
import type { DeclaredOperand } from "./operation.ts";
import { sub } from "./sub.ts";

function operand(
  index: number,
  type: OperandType,
  dimensions: number[],
  extra: Partial<DeclaredOperand> = {},
): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT", ...extra };
}

const activation = (code: number) =>
  operand(2, "INT32", [], { lifetime: "CONSTANT_COPY", value: Int32Array.of(code) });

function signature<T extends "SUB" | "DIV">(type: T, operandType: OperandType, dims = [2]) {
  const extra = operandType === "TENSOR_QUANT8_ASYMM" ? { scale: 0.5, zeroPoint: 0 } : {};
  return {
    type,
    inputs: [
      operand(0, operandType, dims, extra),
      operand(1, operandType, dims, extra),
      activation(0),
    ],
    outputs: [operand(3, operandType, dims, extra)],
  };
}

function tensor(type: OperandType, shape: number[], data: Tensor["data"], scale = 0): Tensor {
  return { type, shape, scale, zeroPoint: 0, data };
}

Deno.test("sub() needs V1_1 for float32 and V1_2 for float16 and quant8", () => {
  strictEqual(sub.validate(signature("SUB", "TENSOR_FLOAT32")), "V1_1");
  strictEqual(sub.validate(signature("SUB", "TENSOR_FLOAT16")), "V1_2");
  strictEqual(sub.validate(signature("SUB", "TENSOR_QUANT8_ASYMM")), "V1_2");
});

Deno.test("div() needs V1_1 for float32 and V1_2 for float16 and rejects quant8", () => {
  strictEqual(div.validate(signature("DIV", "TENSOR_FLOAT32")), "V1_1");
  strictEqual(div.validate(signature("DIV", "TENSOR_FLOAT16")), "V1_2");
  throws(
    () => div.validate(signature("DIV", "TENSOR_QUANT8_ASYMM")),
    /input 0 \(operand 0\) has unsupported type TENSOR_QUANT8_ASYMM/,
  );
});

Deno.test("sub() and div() reject a wrong input count, a bool8 tensor and rank 5", () => {
  for (const op of [sub, div]) {
    const s = signature(op.type, "TENSOR_FLOAT32");
    throws(() => op.validate({ ...s, inputs: s.inputs.slice(0, 2) }), /expected 3 inputs, got 2/);
    throws(
      () => op.validate(signature(op.type, "TENSOR_BOOL8")),
      /unsupported type TENSOR_BOOL8/,
    );
    throws(
      () => op.validate(signature(op.type, "TENSOR_FLOAT32", [1, 1, 1, 1, 2])),
      /input 0 \(operand 0\) has rank 5, expected at most 4/,
    );
    const mixed = signature(op.type, "TENSOR_FLOAT32");
    throws(
      () =>
        op.validate({
          ...mixed,
          inputs: [mixed.inputs[0], operand(1, "TENSOR_FLOAT16", [2]), activation(0)],
        }),
      /input 1 \(operand 1\) has type TENSOR_FLOAT16, expected TENSOR_FLOAT32/,
    );
  }
});

Deno.test("sub() broadcasts and applies the fused activation", () => {
  const out = tensor("TENSOR_FLOAT32", [2, 2], new Float32Array(4));
  sub.execute([
    tensor("TENSOR_FLOAT32", [2, 2], Float32Array.of(1, 2, 3, 4)),
    tensor("TENSOR_FLOAT32", [2], Float32Array.of(2, 2)),
    tensor("INT32", [], Int32Array.of(1)),
  ], [out]);
  deepStrictEqual([...out.data as Float32Array], [0, 0, 1, 2]);
});

Deno.test("sub() quant8 subtracts real values through the negated ADD multiplier", () => {
  const out = tensor("TENSOR_QUANT8_ASYMM", [3], new Uint8Array(3), 1);
  sub.execute([
    tensor("TENSOR_QUANT8_ASYMM", [3], Uint8Array.of(10, 20, 30), 1),
    tensor("TENSOR_QUANT8_ASYMM", [3], Uint8Array.of(2, 4, 40), 2),
    tensor("INT32", [], Int32Array.of(0)),
  ], [out]);
  deepStrictEqual([...out.data as Uint8Array], [6, 12, 0]);
});

Deno.test("div() divides float16 through float32", () => {
  const out = tensor("TENSOR_FLOAT16", [2], new Float16Array(2));
  div.execute([
    tensor("TENSOR_FLOAT16", [2], Float16Array.of(3, -1)),
    tensor("TENSOR_FLOAT16", [1], Float16Array.of(2)),
    tensor("INT32", [], Int32Array.of(0)),
  ], [out]);
  deepStrictEqual([...out.data as Float16Array], [1.5, -0.5]);
});

Deno.test("sub() on int32 is V1_3, broadcasts and wraps around", () => {
  strictEqual(sub.validate(signature("SUB", "TENSOR_INT32")), "V1_3");
  const out = tensor("TENSOR_INT32", [2, 2], new Int32Array(4));
  sub.execute([
    tensor("TENSOR_INT32", [2, 2], Int32Array.of(-(2 ** 31), 10, 0, 2 ** 31 - 1)),
    tensor("TENSOR_INT32", [2, 1], Int32Array.of(1, -1)),
    tensor("INT32", [], Int32Array.of(0)),
  ], [out]);
  // By hand: -2^31 - 1 wraps to 2^31-1; 10 - 1; 0 - (-1); 2^31-1 - (-1) wraps to -2^31.
  deepStrictEqual([...out.data as Int32Array], [2 ** 31 - 1, 9, 1, -(2 ** 31)]);
});

Deno.test("div() on int32 is V1_3 and names a non-NONE activation's operand", () => {
  strictEqual(div.validate(signature("DIV", "TENSOR_INT32")), "V1_3");
  const relu = signature("DIV", "TENSOR_INT32");
  throws(
    () => div.validate({ ...relu, inputs: [relu.inputs[0], relu.inputs[1], activation(1)] }),
    /input 2 \(operand 2\) is fused activation code 1, but TENSOR_INT32/,
  );
});

Deno.test("div() on int32 is floor division, 0 for a zero divisor", () => {
  // Python: 5//2, -5//2, 5//-2, -5//-2, 7//7, -7//1, 0//3, -2**31//1, 3//0 (NNAPI: undefined,
  // Android's reference writes 0), -2**31//-1 (2**31, wrapped to -2**31 in int32).
  const a = [5, -5, 5, -5, 7, -7, 0, -(2 ** 31), 3, -(2 ** 31)];
  const b = [2, 2, -2, -2, 7, 1, 3, 1, 0, -1];
  const expected = [2, -3, -3, 2, 1, -7, 0, -(2 ** 31), 0, -(2 ** 31)];
  const out = tensor("TENSOR_INT32", [10], new Int32Array(10));
  div.execute([
    tensor("TENSOR_INT32", [10], Int32Array.from(a)),
    tensor("TENSOR_INT32", [10], Int32Array.from(b)),
    tensor("INT32", [], Int32Array.of(0)),
  ], [out]);
  deepStrictEqual([...out.data as Int32Array], expected);
  // Broadcasting a column of divisors: [-7, 7] by [[2], [-3]].
  const rows = tensor("TENSOR_INT32", [2, 2], new Int32Array(4));
  div.execute([
    tensor("TENSOR_INT32", [2], Int32Array.of(-7, 7)),
    tensor("TENSOR_INT32", [2, 1], Int32Array.of(2, -3)),
    tensor("INT32", [], Int32Array.of(0)),
  ], [rows]);
  deepStrictEqual([...rows.data as Int32Array], [-4, 3, 2, -3]);
});
