import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { Tensor } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { maximum } from "./maximum.ts";
import { minimum } from "./minimum.ts";
import type { DeclaredOperand, PrepareInput } from "./operation.ts";
import { pow } from "./pow.ts";
import { prelu } from "./prelu.ts";

function operand(index: number, type: OperandType, dimensions: number[]): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

function signature<T extends "MAXIMUM" | "MINIMUM" | "POW" | "PRELU">(
  type: T,
  operandType: OperandType,
) {
  return {
    type,
    inputs: [operand(0, operandType, [2]), operand(1, operandType, [2])],
    outputs: [operand(2, operandType, [2])],
  };
}

function shaped(shape: number[]): PrepareInput {
  return { type: "TENSOR_FLOAT32", shape, scale: 0, zeroPoint: 0, value: undefined };
}

function tensor(
  type: OperandType,
  shape: number[],
  data: Tensor["data"],
  quant = { scale: 0, zeroPoint: 0 },
): Tensor {
  return { type, shape, ...quant, data };
}

Deno.test("maximum(), minimum(), pow() and prelu() need V1_2 for each of their types", () => {
  for (const op of [maximum, minimum]) {
    for (const t of ["TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_INT32", "TENSOR_QUANT8_ASYMM"]) {
      strictEqual(op.validate(signature(op.type, t as OperandType)), "V1_2");
    }
  }
  strictEqual(pow.validate(signature("POW", "TENSOR_FLOAT16")), "V1_2");
  strictEqual(prelu.validate(signature("PRELU", "TENSOR_QUANT8_ASYMM")), "V1_2");
});

Deno.test("maximum(), minimum(), pow() and prelu() name the faulty input count and type", () => {
  for (const op of [maximum, minimum, pow, prelu]) {
    const s = signature(op.type, "TENSOR_FLOAT32");
    throws(() => op.validate({ ...s, inputs: s.inputs.slice(0, 1) }), /expected 2 inputs, got 1/);
    throws(
      () => op.validate({ ...s, inputs: [s.inputs[0], operand(1, "TENSOR_INT32", [2])] }),
      /input 1 \(operand 1\) has type TENSOR_INT32, expected TENSOR_FLOAT32/,
    );
    throws(
      () => op.validate(signature(op.type, "TENSOR_BOOL8")),
      /input 0 \(operand 0\) has unsupported type TENSOR_BOOL8/,
    );
    throws(
      () => op.prepare([shaped([3]), shaped([2, 2])], []),
      /input shapes \[3\] and \[2,2\] cannot be broadcast/,
    );
  }
  throws(() => pow.validate(signature("POW", "TENSOR_QUANT8_ASYMM")), /unsupported type/);
  throws(() => prelu.validate(signature("PRELU", "TENSOR_INT32")), /unsupported type/);
});

Deno.test("maximum() requantizes quant8 inputs to the output before comparing", () => {
  const out = tensor("TENSOR_QUANT8_ASYMM", [2], new Uint8Array(2), { scale: 1, zeroPoint: 0 });
  maximum.execute([
    tensor("TENSOR_QUANT8_ASYMM", [2], Uint8Array.of(10, 3), { scale: 0.5, zeroPoint: 0 }),
    tensor("TENSOR_QUANT8_ASYMM", [1], Uint8Array.of(132), { scale: 2, zeroPoint: 128 }),
  ], [out]);
  deepStrictEqual([...out.data as Uint8Array], [8, 8]);
});

Deno.test("minimum() broadcasts int32 inputs", () => {
  const out = tensor("TENSOR_INT32", [2, 2], new Int32Array(4));
  minimum.execute([
    tensor("TENSOR_INT32", [2, 2], Int32Array.of(1, 5, -3, 7)),
    tensor("TENSOR_INT32", [2], Int32Array.of(2, 6)),
  ], [out]);
  deepStrictEqual([...out.data as Int32Array], [1, 5, -3, 6]);
});

Deno.test("prelu() scales negative inputs by the broadcast alpha", () => {
  const out = tensor("TENSOR_FLOAT32", [2, 2], new Float32Array(4));
  prelu.execute([
    tensor("TENSOR_FLOAT32", [2, 2], Float32Array.of(1, -2, -4, 3)),
    tensor("TENSOR_FLOAT32", [2], Float32Array.of(0.5, 0.25)),
  ], [out]);
  deepStrictEqual([...out.data as Float32Array], [1, -0.5, -2, 3]);
});

Deno.test("pow() broadcasts the exponent", () => {
  const out = tensor("TENSOR_FLOAT32", [3], new Float32Array(3));
  pow.execute([
    tensor("TENSOR_FLOAT32", [3], Float32Array.of(2, 3, 4)),
    tensor("TENSOR_FLOAT32", [1], Float32Array.of(2)),
  ], [out]);
  deepStrictEqual([...out.data as Float32Array], [4, 9, 16]);
});
