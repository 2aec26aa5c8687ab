import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { Tensor } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { equal } from "./equal.ts";
import { greater } from "./greater.ts";
import { greaterEqual } from "./greater_equal.ts";
import { less } from "./less.ts";
import { lessEqual } from "./less_equal.ts";
import { notEqual } from "./not_equal.ts";
import type { DeclaredOperand, PrepareInput } from "./operation.ts";

const COMPARISONS = [equal, notEqual, less, lessEqual, greater, greaterEqual];

function operand(index: number, type: OperandType, dimensions: number[]): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

function signature(type: typeof COMPARISONS[number]["type"], inputType: OperandType) {
  return {
    type,
    inputs: [operand(0, inputType, [2]), operand(1, inputType, [2])],
    outputs: [operand(2, "TENSOR_BOOL8", [2])],
  };
}

function shaped(shape: number[]): PrepareInput {
  return { type: "TENSOR_INT32", shape, scale: 0, zeroPoint: 0, value: undefined };
}

function tensor(
  type: OperandType,
  shape: number[],
  data: Tensor["data"],
  quant = { scale: 0, zeroPoint: 0 },
): Tensor {
  return { type, shape, ...quant, data };
}

Deno.test("comparisons need V1_2 for bool8, float16, float32, int32 and quant8 inputs", () => {
  for (const op of COMPARISONS) {
    for (
      const t of [
        "TENSOR_BOOL8",
        "TENSOR_FLOAT16",
        "TENSOR_FLOAT32",
        "TENSOR_INT32",
        "TENSOR_QUANT8_ASYMM",
      ] as const
    ) {
      strictEqual(op.validate(signature(op.type, t)), "V1_2");
    }
  }
});

Deno.test("comparisons name a wrong input count, input type or output type", () => {
  for (const op of COMPARISONS) {
    const s = signature(op.type, "TENSOR_FLOAT32");
    throws(
      () => op.validate({ ...s, inputs: [...s.inputs, s.inputs[0]] }),
      /expected 2 inputs, got 3/,
    );
    throws(
      () => op.validate(signature(op.type, "TENSOR_QUANT16_ASYMM")),
      /input 0 \(operand 0\) has unsupported type TENSOR_QUANT16_ASYMM/,
    );
    throws(
      () => op.validate({ ...s, outputs: [operand(2, "TENSOR_FLOAT32", [2])] }),
      /output 0 \(operand 2\) has type TENSOR_FLOAT32, expected TENSOR_BOOL8/,
    );
    throws(() => op.prepare([shaped([2, 3]), shaped([2])], []), /cannot be broadcast/);
  }
});

Deno.test("comparisons broadcast and write 0/1 bytes", () => {
  const a = tensor("TENSOR_INT32", [2, 2], Int32Array.of(1, 2, 3, 4));
  const b = tensor("TENSOR_INT32", [2], Int32Array.of(2, 3));
  const expected = {
    EQUAL: [0, 0, 0, 0],
    NOT_EQUAL: [1, 1, 1, 1],
    LESS: [1, 1, 0, 0],
    LESS_EQUAL: [1, 1, 0, 0],
    GREATER: [0, 0, 1, 1],
    GREATER_EQUAL: [0, 0, 1, 1],
  };
  for (const op of COMPARISONS) {
    const out = tensor("TENSOR_BOOL8", [2, 2], new Uint8Array(4));
    op.execute([a, b], [out]);
    deepStrictEqual([...out.data as Uint8Array], expected[op.type], op.type);
  }
});

Deno.test("comparisons compare quant8 inputs as real values", () => {
  const out = tensor("TENSOR_BOOL8", [2], new Uint8Array(2));
  equal.execute([
    tensor("TENSOR_QUANT8_ASYMM", [2], Uint8Array.of(4, 5), { scale: 0.5, zeroPoint: 0 }),
    tensor("TENSOR_QUANT8_ASYMM", [2], Uint8Array.of(130, 130), { scale: 1, zeroPoint: 128 }),
  ], [out]);
  deepStrictEqual([...out.data as Uint8Array], [1, 0]);
});
