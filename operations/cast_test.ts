import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { Tensor } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { cast } from "./cast.ts";
import type { DeclaredOperand } from "./operation.ts";

function operand(index: number, type: OperandType, dimensions: number[] = [2]): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

const validate = (inputs: DeclaredOperand[], outputs: DeclaredOperand[]) =>
  cast.validate({ type: "CAST", inputs, outputs });

Deno.test("cast() needs V1_2 between float32, float16, int32 and quant8 of any rank", () => {
  const types = [
    "TENSOR_FLOAT32",
    "TENSOR_FLOAT16",
    "TENSOR_INT32",
    "TENSOR_QUANT8_ASYMM",
  ] as const;
  for (const from of types) {
    for (const to of types) {
      strictEqual(validate([operand(0, from, [1, 1, 1, 1, 2])], [operand(1, to)]), "V1_2");
    }
  }
});

Deno.test("cast() rejects a wrong input count and unsupported types", () => {
  throws(
    () =>
      validate([operand(0, "TENSOR_INT32"), operand(1, "TENSOR_INT32")], [
        operand(2, "TENSOR_INT32"),
      ]),
    /expected 1 inputs, got 2/,
  );
  throws(
    () => validate([operand(0, "TENSOR_BOOL8")], [operand(1, "TENSOR_INT32")]),
    /output 0 \(operand 1\) has type TENSOR_INT32; a TENSOR_BOOL8 input casts only to TENSOR_BOOL8/,
  );
  throws(
    () => validate([operand(0, "TENSOR_FLOAT32")], [operand(1, "TENSOR_QUANT16_ASYMM")]),
    /output 0 \(operand 1\) has unsupported type TENSOR_QUANT16_ASYMM/,
  );
});

Deno.test("cast() truncates floats and saturates to quant8, ignoring quantization", () => {
  const tensor = (type: OperandType, data: Tensor["data"], scale = 0): Tensor => ({
    type,
    shape: [4],
    scale,
    zeroPoint: 0,
    data,
  });
  const q = new Uint8Array(4);
  cast.execute([tensor("TENSOR_FLOAT32", new Float32Array([-1, 2.7, 255.9, 300]))], [
    tensor("TENSOR_QUANT8_ASYMM", q, 4),
  ]);
  deepStrictEqual([...q], [0, 2, 255, 255]);
  const i = new Int32Array(4);
  cast.execute([tensor("TENSOR_FLOAT16", new Float16Array([-1.5, 2.5, -0.5, 7]))], [
    tensor("TENSOR_INT32", i),
  ]);
  deepStrictEqual([...i], [-1, 2, 0, 7]);
  const f = new Float32Array(4);
  cast.execute([tensor("TENSOR_QUANT8_ASYMM", new Uint8Array([0, 1, 128, 255]), 0.5)], [
    tensor("TENSOR_FLOAT32", f),
  ]);
  deepStrictEqual([...f], [0, 1, 128, 255]);
});

Deno.test("cast() copies the stored values of a HAL 1.3 identity cast", () => {
  const input = new Int8Array([-128, -1, 0, 127]);
  const output = new Int8Array(4);
  const tensor = (data: Int8Array): Tensor => ({
    type: "TENSOR_QUANT8_ASYMM_SIGNED",
    shape: [4],
    scale: 0.5,
    zeroPoint: -3,
    data,
  });
  cast.execute([tensor(input)], [tensor(output)]);
  deepStrictEqual([...output], [-128, -1, 0, 127]);
});
