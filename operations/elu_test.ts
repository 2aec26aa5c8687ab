import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import type { Tensor } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { elu } from "./elu.ts";
import type { DeclaredOperand } from "./operation.ts";

function operand(index: number, type: OperandType, dimensions: number[]): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

function validate(inputs: DeclaredOperand[], outputs: DeclaredOperand[]) {
  return elu.validate({ type: "ELU", inputs, outputs });
}

function tensor(type: OperandType, shape: number[], data: Tensor["data"]): Tensor {
  return { type, shape, scale: 0, zeroPoint: 0, data };
}

/** Runs ELU on float32 values with the given alpha. */
function run(values: number[], alpha: number): number[] {
  const out = new Float32Array(values.length);
  elu.execute([
    tensor("TENSOR_FLOAT32", [values.length], Float32Array.from(values)),
    tensor("FLOAT32", [], Float32Array.of(alpha)),
  ], [tensor("TENSOR_FLOAT32", [values.length], out)]);
  return [...out];
}

function near(actual: number[], expected: number[]) {
  strictEqual(actual.length, expected.length);
  actual.forEach((a, i) => {
    const tolerance = 1e-6 * Math.max(1, Math.abs(expected[i]));
    ok(Math.abs(a - expected[i]) <= tolerance, `element ${i}: ${a}, expected ${expected[i]}`);
  });
}

Deno.test("elu() needs V1_3 for float32 and float16 tensors of any rank", () => {
  strictEqual(
    validate(
      [operand(0, "TENSOR_FLOAT32", [1, 2, 3, 4, 5]), operand(1, "FLOAT32", [])],
      [operand(2, "TENSOR_FLOAT32", [])],
    ),
    "V1_3",
  );
  strictEqual(
    validate(
      [operand(0, "TENSOR_FLOAT16", [3]), operand(1, "FLOAT16", [])],
      [operand(2, "TENSOR_FLOAT16", [3])],
    ),
    "V1_3",
  );
});

Deno.test("elu() rejects a wrong input count, a quant8 input and a mismatched alpha type", () => {
  throws(
    () => validate([operand(0, "TENSOR_FLOAT32", [2])], [operand(1, "TENSOR_FLOAT32", [2])]),
    /expected 2 inputs, got 1/,
  );
  throws(
    () =>
      validate(
        [operand(0, "TENSOR_QUANT8_ASYMM", [2]), operand(1, "FLOAT32", [])],
        [operand(2, "TENSOR_QUANT8_ASYMM", [2])],
      ),
    /input 0 \(operand 0\) has unsupported type TENSOR_QUANT8_ASYMM/,
  );
  throws(
    () =>
      validate(
        [operand(0, "TENSOR_FLOAT16", [2]), operand(1, "FLOAT32", [])],
        [operand(2, "TENSOR_FLOAT16", [2])],
      ),
    /input 1 \(operand 1\) has type FLOAT32, expected FLOAT16/,
  );
  throws(
    () =>
      validate(
        [operand(0, "TENSOR_FLOAT32", [2]), operand(1, "FLOAT32", [])],
        [operand(2, "TENSOR_FLOAT16", [2])],
      ),
    /output 0 \(operand 2\) has type TENSOR_FLOAT16, expected TENSOR_FLOAT32/,
  );
});

Deno.test("elu() keeps the input's shape", () => {
  const input = { ...tensor("TENSOR_FLOAT32", [2, 1, 3], null), value: undefined };
  const alpha = { ...tensor("FLOAT32", [], null), value: undefined };
  deepStrictEqual(elu.prepare([input, alpha], []), [[2, 1, 3]]);
});

Deno.test("elu() is x above zero and alpha * (exp(x) - 1) below", () => {
  near(run([-1, 0, 2, -0.5, 1e30], 1), [Math.exp(-1) - 1, 0, 2, Math.exp(-0.5) - 1, 1e30]);
  near(run([-2, -20, 0.25], 0.5), [0.5 * (Math.exp(-2) - 1), 0.5 * (Math.exp(-20) - 1), 0.25]);
});

Deno.test("elu() follows NNAPI's max(0, x) + min(0, alpha * (exp(x) - 1)) for a negative alpha", () => {
  // alpha = -1: 1 + min(0, -(e - 1)) = 2 - e; for x < 0 the second term is positive, so 0.
  near(run([1, -1], -1), [2 - Math.E, 0]);
});

Deno.test("elu() computes float16 in float32 and rounds the result to float16", () => {
  const out = new Float16Array(2);
  elu.execute([
    tensor("TENSOR_FLOAT16", [2], Float16Array.of(-1, 3)),
    tensor("FLOAT16", [], Float16Array.of(2)),
  ], [tensor("TENSOR_FLOAT16", [2], out)]);
  deepStrictEqual([...out], [...Float16Array.of(2 * (Math.exp(-1) - 1), 3)]);
});
