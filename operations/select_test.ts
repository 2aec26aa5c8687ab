import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { Tensor } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import type { DeclaredOperand, PrepareInput } from "./operation.ts";
import { select } from "./select.ts";

function operand(index: number, type: OperandType, dimensions: number[] = [2]): DeclaredOperand {
  return { index, type, dimensions, scale: 0.5, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

const validate = (inputs: DeclaredOperand[], outputs: DeclaredOperand[]) =>
  select.validate({ type: "SELECT", inputs, outputs });

function shaped(type: OperandType, shape: number[]): PrepareInput {
  return { type, shape, scale: 0, zeroPoint: 0, value: undefined };
}

Deno.test("select() needs V1_2 for float32, float16, int32 and quant8", () => {
  for (
    const type of [
      "TENSOR_FLOAT32",
      "TENSOR_FLOAT16",
      "TENSOR_INT32",
      "TENSOR_QUANT8_ASYMM",
    ] as const
  ) {
    strictEqual(
      validate(
        [operand(0, "TENSOR_BOOL8"), operand(1, type), operand(2, type)],
        [operand(3, type)],
      ),
      "V1_2",
    );
  }
});

Deno.test("select() rejects a wrong input count", () => {
  throws(
    () =>
      validate([operand(0, "TENSOR_BOOL8"), operand(1, "TENSOR_FLOAT32")], [
        operand(2, "TENSOR_FLOAT32"),
      ]),
    /expected 3 inputs, got 2/,
  );
});

Deno.test("select() rejects a non-bool8 condition and mismatched input types", () => {
  throws(
    () =>
      validate(
        [operand(0, "TENSOR_INT32"), operand(1, "TENSOR_FLOAT32"), operand(2, "TENSOR_FLOAT32")],
        [operand(3, "TENSOR_FLOAT32")],
      ),
    /input 0 \(operand 0\) has type TENSOR_INT32, expected TENSOR_BOOL8/,
  );
  throws(
    () =>
      validate(
        [operand(0, "TENSOR_BOOL8"), operand(1, "TENSOR_FLOAT32"), operand(2, "TENSOR_INT32")],
        [operand(3, "TENSOR_FLOAT32")],
      ),
    /input 2 \(operand 2\) has type TENSOR_INT32, expected TENSOR_FLOAT32/,
  );
  throws(
    () =>
      validate(
        [operand(0, "TENSOR_BOOL8"), operand(1, "TENSOR_BOOL8"), operand(2, "TENSOR_BOOL8")],
        [operand(3, "TENSOR_BOOL8")],
      ),
    /input 1 \(operand 1\) has unsupported type TENSOR_BOOL8/,
  );
});

Deno.test("select() rejects a condition of another rank or shape than the inputs", () => {
  const f = (shape: number[]) => shaped("TENSOR_FLOAT32", shape);
  deepStrictEqual(select.prepare([shaped("TENSOR_BOOL8", [2, 3]), f([2, 3]), f([2, 3])], []), [
    [2, 3],
  ]);
  throws(
    () => select.prepare([shaped("TENSOR_BOOL8", [6]), f([2, 3]), f([2, 3])], []),
    /condition shape \[6\] differs from input 1 shape \[2,3\]/,
  );
  throws(
    () => select.prepare([shaped("TENSOR_BOOL8", [2, 3]), f([2, 3]), f([3, 2])], []),
    /input 1 shape \[2,3\] differs from input 2 shape \[3,2\]/,
  );
});

Deno.test("select() requantizes quant8 inputs to the output's quantization", () => {
  const q = (data: number[], scale: number, zeroPoint: number): Tensor => ({
    type: "TENSOR_QUANT8_ASYMM",
    shape: [3],
    scale,
    zeroPoint,
    data: new Uint8Array(data),
  });
  const condition: Tensor = {
    type: "TENSOR_BOOL8",
    shape: [3],
    scale: 0,
    zeroPoint: 0,
    data: new Uint8Array([1, 0, 1]),
  };
  const out = q([0, 0, 0], 1, 128);
  select.execute([condition, q([129, 0, 255], 1.5, 129), q([0, 128, 0], 0.5, 127)], [out]);
  // 1.5 * (255 - 129) = 189 is above 255 - 128 and saturates.
  deepStrictEqual([...out.data!], [128, 129, 255]);
});
