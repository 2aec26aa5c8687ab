import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { Tensor } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
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

Deno.test("add() needs V1_0 for float32 and quant8, V1_2 for float16, V1_3 for int32", () => {
  const f = (type: OperandType) => ({
    type: "ADD" as const,
    inputs: [operand(0, type, [2]), operand(1, type, [2]), activation(0)],
    outputs: [operand(3, type, [2])],
  });
  strictEqual(add.validate(f("TENSOR_FLOAT32")), "V1_0");
  strictEqual(add.validate(f("TENSOR_FLOAT16")), "V1_2");
  strictEqual(add.validate(f("TENSOR_INT32")), "V1_3");
  throws(() => add.validate(f("TENSOR_BOOL8")), OperationError);
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

/** An int32 tensor with its data. */
function int32Tensor(shape: number[], values: number[]): Tensor {
  return { type: "TENSOR_INT32", shape, scale: 0, zeroPoint: 0, data: Int32Array.from(values) };
}

const fuseCode = (code: number): Tensor => ({
  type: "INT32",
  shape: [],
  scale: 0,
  zeroPoint: 0,
  data: Int32Array.of(code),
});

Deno.test("add() and mul() on int32 broadcast and wrap around as two's complement", () => {
  const a = int32Tensor([2, 2], [2 ** 31 - 1, -5, 7, 65536]);
  const b = int32Tensor([2], [1, 3]);
  const sum = int32Tensor([2, 2], [0, 0, 0, 0]);
  add.execute([a, b, fuseCode(0)], [sum]);
  // By hand: 2^31-1 + 1 wraps to -2^31; -5 + 3; 7 + 1; 65536 + 3.
  deepStrictEqual([...sum.data as Int32Array], [-(2 ** 31), -2, 8, 65539]);
  const product = int32Tensor([2, 2], [0, 0, 0, 0]);
  mul.execute([a, int32Tensor([2], [2, 65536]), fuseCode(0)], [product]);
  // (2^31-1) * 2 = 2^32 - 2 keeps its low 32 bits: -2; -5 * 65536; 7 * 2; 2^16 * 2^16 = 2^32: 0.
  deepStrictEqual([...product.data as Int32Array], [-2, -327680, 14, 0]);
});

Deno.test("add() and mul() take int32 as V1_3 and refuse a constant activation other than NONE", () => {
  for (const op of [add, mul]) {
    const signature = (code: number) => ({
      type: op.type,
      inputs: [
        operand(0, "TENSOR_INT32", [2]),
        operand(1, "TENSOR_INT32", [1]),
        activation(code),
      ],
      outputs: [operand(3, "TENSOR_INT32", [2])],
    });
    strictEqual(op.validate(signature(0)), "V1_3");
    throws(
      () => op.validate(signature(1)),
      /input 2 \(operand 2\) is fused activation code 1, but TENSOR_INT32 operands take only 0/,
    );
    throws(
      () =>
        op.validate({
          ...signature(0),
          outputs: [operand(3, "TENSOR_FLOAT32", [2])],
        }),
      /output 0 \(operand 3\) has type TENSOR_FLOAT32, expected TENSOR_INT32/,
    );
  }
});

Deno.test("add() fails an int32 execution whose activation, known only then, is RELU6", () => {
  const out = int32Tensor([1], [0]);
  throws(
    () => add.execute([int32Tensor([1], [1]), int32Tensor([1], [2]), fuseCode(3)], [out]),
    /input 2 is fused activation code 3, but TENSOR_INT32 operands take only 0 \(NONE\)/,
  );
});
