import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { Tensor } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { abs } from "./abs.ts";
import type { DeclaredOperand } from "./operation.ts";

function operand(index: number, type: OperandType): DeclaredOperand {
  return { index, type, dimensions: [3], scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

function signature(input: OperandType, output = input) {
  return { type: "ABS" as const, inputs: [operand(0, input)], outputs: [operand(1, output)] };
}

Deno.test("abs() is V1_2 for float32 and float16, V1_3 for int32", () => {
  strictEqual(abs.validate(signature("TENSOR_FLOAT32")), "V1_2");
  strictEqual(abs.validate(signature("TENSOR_FLOAT16")), "V1_2");
  strictEqual(abs.validate(signature("TENSOR_INT32")), "V1_3");
  throws(
    () => abs.validate(signature("TENSOR_QUANT8_ASYMM")),
    /input 0 \(operand 0\) has unsupported type TENSOR_QUANT8_ASYMM/,
  );
  throws(
    () => abs.validate(signature("TENSOR_INT32", "TENSOR_FLOAT32")),
    /output 0 \(operand 1\) has type TENSOR_FLOAT32, expected TENSOR_INT32/,
  );
});

Deno.test("abs() on int32 takes magnitudes, |-2^31| wrapping to -2^31", () => {
  const tensor = (data: Int32Array): Tensor => ({
    type: "TENSOR_INT32",
    shape: [data.length],
    scale: 0,
    zeroPoint: 0,
    data,
  });
  const out = tensor(new Int32Array(5));
  abs.execute([tensor(Int32Array.of(-7, 0, 7, 2 ** 31 - 1, -(2 ** 31)))], [out]);
  deepStrictEqual([...out.data as Int32Array], [7, 0, 7, 2 ** 31 - 1, -(2 ** 31)]);
});
