import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { Tensor } from "../../nnapi/tensor.ts";
import type { OperandType } from "../../nnapi/types.ts";
import { add } from "./add.ts";
import { mul } from "./mul.ts";
import type { DeclaredOperand, PrepareInput } from "./operation.ts";
import { OperationError } from "./operation.ts";

function operand(
  index: number,
  type: OperandType,
  dimensions: number[],
  extra: Partial<DeclaredOperand> = {},
): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT", ...extra };
}

function shaped(shape: number[]): PrepareInput {
  return { type: "TENSOR_FLOAT32", shape, scale: 0, zeroPoint: 0, value: undefined };
}

const q8 = (index: number, scale: number) =>
  operand(index, "TENSOR_QUANT8_ASYMM", [2], { scale, zeroPoint: 0 });
const activation = (code: number) =>
  operand(2, "INT32", [], { lifetime: "CONSTANT_COPY", value: Int32Array.of(code) });

Deno.test("add() needs V1_0 for float32 and quant8 and V1_2 for float16", () => {
  const f = (type: OperandType) => ({
    type: "ADD" as const,
    inputs: [operand(0, type, [2]), operand(1, type, [2]), activation(0)],
    outputs: [operand(3, type, [2])],
  });
  strictEqual(add.validate(f("TENSOR_FLOAT32")), "V1_0");
  strictEqual(add.validate(f("TENSOR_FLOAT16")), "V1_2");
  throws(() => add.validate(f("TENSOR_INT32")), OperationError);
});

Deno.test("add() rejects a constant fused activation code outside 0..3", () => {
  throws(
    () =>
      add.validate({
        type: "ADD",
        inputs: [
          operand(0, "TENSOR_FLOAT32", [2]),
          operand(1, "TENSOR_FLOAT32", [2]),
          activation(4),
        ],
        outputs: [operand(3, "TENSOR_FLOAT32", [2])],
      }),
    /fused activation code 4/,
  );
});

Deno.test("add() broadcasts shapes and rejects incompatible ones", () => {
  deepStrictEqual(add.prepare([shaped([1, 2]), shaped([2, 2]), shaped([])], []), [[2, 2]]);
  throws(() => add.prepare([shaped([3]), shaped([2, 2]), shaped([])], []), /cannot be broadcast/);
});

Deno.test("mul() rejects a quant8 output scale not above the product of the input scales", () => {
  const signature = (outScale: number) => ({
    type: "MUL" as const,
    inputs: [q8(0, 1), q8(1, 2), activation(0)],
    outputs: [q8(3, outScale)],
  });
  strictEqual(mul.validate(signature(2.5)), "V1_0");
  throws(() => mul.validate(signature(2)), /must exceed the product/);
});

Deno.test("mul() runs float16 through float32 and applies RELU", () => {
  const t = (data: Float16Array): Tensor => ({
    type: "TENSOR_FLOAT16",
    shape: [3],
    scale: 0,
    zeroPoint: 0,
    data,
  });
  const out = t(new Float16Array(3));
  const code: Tensor = { type: "INT32", shape: [], scale: 0, zeroPoint: 0, data: Int32Array.of(1) };
  mul.execute([t(Float16Array.of(1.5, -2, 3)), t(Float16Array.of(2, 2, 0.5)), code], [out]);
  deepStrictEqual([...out.data as Float16Array], [3, 0, 1.5]);
});
