import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { Tensor } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import type { DeclaredOperand } from "./operation.ts";
import { quantize } from "./quantize.ts";

function operand(index: number, type: OperandType, dimensions: number[] = [2]): DeclaredOperand {
  return { index, type, dimensions, scale: 0.5, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

const validate = (inputs: DeclaredOperand[], outputs: DeclaredOperand[]) =>
  quantize.validate({ type: "QUANTIZE", inputs, outputs });

Deno.test("quantize() needs V1_2 from float32 or float16 to quant8 of any rank", () => {
  for (const type of ["TENSOR_FLOAT32", "TENSOR_FLOAT16"] as const) {
    strictEqual(
      validate([operand(0, type, [1, 1, 1, 1, 2])], [operand(1, "TENSOR_QUANT8_ASYMM")]),
      "V1_2",
    );
  }
});

Deno.test("quantize() rejects a wrong input count and wrong types", () => {
  throws(
    () =>
      validate([operand(0, "TENSOR_FLOAT32"), operand(1, "TENSOR_FLOAT32")], [
        operand(2, "TENSOR_QUANT8_ASYMM"),
      ]),
    /expected 1 inputs, got 2/,
  );
  throws(
    () => validate([operand(0, "TENSOR_INT32")], [operand(1, "TENSOR_QUANT8_ASYMM")]),
    /input 0 \(operand 0\) has unsupported type TENSOR_INT32/,
  );
  throws(
    () => validate([operand(0, "TENSOR_FLOAT32")], [operand(1, "TENSOR_INT32")]),
    /output 0 \(operand 1\) has type TENSOR_INT32, expected TENSOR_QUANT8_ASYMM/,
  );
});

Deno.test("quantize() rounds halves away from zero and saturates", () => {
  const out: Tensor = {
    type: "TENSOR_QUANT8_ASYMM",
    shape: [5],
    scale: 0.5,
    zeroPoint: 10,
    data: new Uint8Array(5),
  };
  const input: Tensor = {
    type: "TENSOR_FLOAT32",
    shape: [5],
    scale: 0,
    zeroPoint: 0,
    data: new Float32Array([0.25, -0.25, -5.25, -100, 200]),
  };
  quantize.execute([input], [out]);
  deepStrictEqual([...out.data!], [11, 9, 0, 0, 255]);
});
