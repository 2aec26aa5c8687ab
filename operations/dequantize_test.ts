import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { Tensor } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { dequantize } from "./dequantize.ts";
import type { DeclaredOperand } from "./operation.ts";

function operand(index: number, type: OperandType): DeclaredOperand {
  return { index, type, dimensions: [4], scale: 1, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

const signature = (input: OperandType, output: OperandType) => ({
  type: "DEQUANTIZE" as const,
  inputs: [operand(0, input)],
  outputs: [operand(1, output)],
});

Deno.test("dequantize() needs V1_0 only for quant8 asymm to float32", () => {
  strictEqual(dequantize.validate(signature("TENSOR_QUANT8_ASYMM", "TENSOR_FLOAT32")), "V1_0");
  strictEqual(dequantize.validate(signature("TENSOR_QUANT8_ASYMM", "TENSOR_FLOAT16")), "V1_2");
  strictEqual(dequantize.validate(signature("TENSOR_QUANT8_SYMM", "TENSOR_FLOAT32")), "V1_2");
  throws(() => dequantize.validate(signature("TENSOR_INT32", "TENSOR_FLOAT32")), /input 0/);
  throws(() => dequantize.validate(signature("TENSOR_QUANT8_ASYMM", "TENSOR_INT32")), /output 0/);
});

Deno.test("dequantize() writes float16 outputs rounded from float32", () => {
  const input: Tensor = {
    type: "TENSOR_QUANT8_ASYMM",
    shape: [3],
    scale: 0.1,
    zeroPoint: 10,
    data: Uint8Array.of(10, 11, 20),
  };
  const output: Tensor = {
    type: "TENSOR_FLOAT16",
    shape: [3],
    scale: 0,
    zeroPoint: 0,
    data: new Float16Array(3),
  };
  dequantize.execute([input], [output]);
  deepStrictEqual([...output.data as Float16Array], [0, Math.f16round(0.1), 1]);
});
