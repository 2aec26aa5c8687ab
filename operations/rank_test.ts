import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { Tensor } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import type { DeclaredOperand } from "./operation.ts";
import { rank } from "./rank.ts";

function operand(index: number, type: OperandType, dimensions: number[]): DeclaredOperand {
  return { index, type, dimensions, scale: 1, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

function validate(inputs: DeclaredOperand[], outputs: DeclaredOperand[]) {
  return rank.validate({ type: "RANK", inputs, outputs });
}

Deno.test("rank() needs V1_3 for every tensor type, quant8 signed and bool8 included", () => {
  for (
    const type of [
      "TENSOR_FLOAT32",
      "TENSOR_FLOAT16",
      "TENSOR_INT32",
      "TENSOR_QUANT8_ASYMM",
      "TENSOR_QUANT8_ASYMM_SIGNED",
      "TENSOR_QUANT16_SYMM",
      "TENSOR_BOOL8",
    ] as const
  ) {
    strictEqual(validate([operand(0, type, [2, 3])], [operand(1, "INT32", [])]), "V1_3");
  }
});

Deno.test("rank() rejects a scalar input, a tensor output and a wrong input count", () => {
  throws(
    () => validate([operand(0, "INT32", [])], [operand(1, "INT32", [])]),
    /input 0 \(operand 0\) has unsupported type INT32/,
  );
  throws(
    () => validate([operand(0, "TENSOR_FLOAT32", [2])], [operand(1, "TENSOR_INT32", [1])]),
    /output 0 \(operand 1\) has type TENSOR_INT32, expected INT32/,
  );
  throws(
    () =>
      validate(
        [operand(0, "TENSOR_FLOAT32", [2]), operand(1, "TENSOR_FLOAT32", [2])],
        [operand(2, "INT32", [])],
      ),
    /expected 1 inputs, got 2/,
  );
});

Deno.test("rank() outputs a scalar holding the input's number of dimensions", () => {
  const input: Tensor = {
    type: "TENSOR_QUANT8_ASYMM",
    shape: [2, 1, 3],
    scale: 1,
    zeroPoint: 0,
    data: new Uint8Array(6),
  };
  deepStrictEqual(rank.prepare([{ ...input, value: undefined }], []), [[]]);
  const out = new Int32Array(1);
  rank.execute([input], [{ type: "INT32", shape: [], scale: 0, zeroPoint: 0, data: out }]);
  strictEqual(out[0], 3);
});
