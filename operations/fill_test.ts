import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { Tensor, TensorData } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { fill } from "./fill.ts";
import { type DeclaredOperand, type PrepareInput, ValueNotYetKnown } from "./operation.ts";

function operand(index: number, type: OperandType, dimensions: number[]): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

function validate(inputs: DeclaredOperand[], outputs: DeclaredOperand[]) {
  return fill.validate({ type: "FILL", inputs, outputs });
}

function prepareInput(
  type: OperandType,
  shape: number[],
  value: TensorData | undefined,
): PrepareInput {
  return { type, shape, scale: 0, zeroPoint: 0, value };
}

const OUTPUT = { type: "TENSOR_FLOAT32", shape: [], scale: 0, zeroPoint: 0 } as const;

Deno.test("fill() needs V1_3 and takes the value type from the output type", () => {
  for (
    const [output, value] of [
      ["TENSOR_FLOAT32", "FLOAT32"],
      ["TENSOR_FLOAT16", "FLOAT16"],
      ["TENSOR_INT32", "INT32"],
    ] as const
  ) {
    strictEqual(
      validate(
        [operand(0, "TENSOR_INT32", [2]), operand(1, value, [])],
        [operand(2, output, [0, 0])],
      ),
      "V1_3",
    );
  }
});

Deno.test("fill() rejects a quant8 output, a mismatched value type and a rank-2 dims tensor", () => {
  throws(
    () =>
      validate(
        [operand(0, "TENSOR_INT32", [1]), operand(1, "INT32", [])],
        [operand(2, "TENSOR_QUANT8_ASYMM", [])],
      ),
    /output 0 \(operand 2\) has unsupported type TENSOR_QUANT8_ASYMM/,
  );
  throws(
    () =>
      validate(
        [operand(0, "TENSOR_INT32", [1]), operand(1, "INT32", [])],
        [operand(2, "TENSOR_FLOAT32", [])],
      ),
    /input 1 \(operand 1\) has type INT32, expected FLOAT32/,
  );
  throws(
    () =>
      validate(
        [operand(0, "TENSOR_INT32", [1, 2]), operand(1, "FLOAT32", [])],
        [operand(2, "TENSOR_FLOAT32", [])],
      ),
    /dims \(input 0\) \(operand 0\) has rank 2, expected 1/,
  );
  throws(
    () =>
      validate(
        [operand(0, "TENSOR_INT32", [3]), operand(1, "FLOAT32", [])],
        [operand(2, "TENSOR_FLOAT32", [1, 1])],
      ),
    /output 0 \(operand 2\) has rank 2, expected 3/,
  );
  throws(
    () => validate([operand(0, "TENSOR_INT32", [1])], [operand(1, "TENSOR_FLOAT32", [])]),
    /expected 2 inputs, got 1/,
  );
});

Deno.test("fill() takes the output shape from a known dims tensor and waits for an unknown one", () => {
  const value = prepareInput("FLOAT32", [], Float32Array.of(1));
  deepStrictEqual(
    fill.prepare([prepareInput("TENSOR_INT32", [3], Int32Array.of(2, 1, 3)), value], [OUTPUT]),
    [[2, 1, 3]],
  );
  throws(
    () => fill.prepare([prepareInput("TENSOR_INT32", [3], undefined), value], [OUTPUT]),
    ValueNotYetKnown,
  );
  throws(
    () => fill.prepare([prepareInput("TENSOR_INT32", [2], Int32Array.of(2, -1)), value], [OUTPUT]),
    /dims \(input 0\) has -1 at 1, expected >= 0/,
  );
});

Deno.test("fill() sets every element to the value, in the output's type", () => {
  const run = (type: OperandType, valueType: OperandType, value: TensorData, out: TensorData) => {
    const tensor = (t: OperandType, shape: number[], data: TensorData): Tensor => ({
      type: t,
      shape,
      scale: 0,
      zeroPoint: 0,
      data,
    });
    fill.execute(
      [tensor("TENSOR_INT32", [2], Int32Array.of(2, 2)), tensor(valueType, [], value)],
      [tensor(type, [2, 2], out)],
    );
    return [...out];
  };
  deepStrictEqual(
    run("TENSOR_FLOAT32", "FLOAT32", Float32Array.of(1.5), new Float32Array(4)),
    [1.5, 1.5, 1.5, 1.5],
  );
  deepStrictEqual(run("TENSOR_INT32", "INT32", Int32Array.of(-7), new Int32Array(4)), [
    -7,
    -7,
    -7,
    -7,
  ]);
  deepStrictEqual(
    run("TENSOR_FLOAT16", "FLOAT16", Float16Array.of(0.1), new Float16Array(4)),
    Array(4).fill(Math.f16round(0.1)),
  );
});
