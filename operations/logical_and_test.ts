import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { Tensor } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { logicalAnd } from "./logical_and.ts";
import { logicalNot } from "./logical_not.ts";
import { logicalOr } from "./logical_or.ts";
import type { DeclaredOperand, OperationDefinition } from "./operation.ts";

function operand(index: number, type: OperandType, dimensions: number[]): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

function validate(
  definition: OperationDefinition,
  inputs: DeclaredOperand[],
  outputs: DeclaredOperand[],
) {
  return definition.validate({ type: definition.type, inputs, outputs });
}

const bool = (index: number, dimensions: number[] = [2]) =>
  operand(index, "TENSOR_BOOL8", dimensions);

function tensor(shape: number[], values: number[]): Tensor {
  return { type: "TENSOR_BOOL8", shape, scale: 0, zeroPoint: 0, data: new Uint8Array(values) };
}

Deno.test("the logical operations need V1_2 on bool8 tensors of any rank", () => {
  strictEqual(validate(logicalNot, [bool(0, [1, 1, 1, 1, 2])], [bool(1)]), "V1_2");
  strictEqual(validate(logicalAnd, [bool(0), bool(1, [3, 1])], [bool(2)]), "V1_2");
  strictEqual(validate(logicalOr, [bool(0), bool(1)], [bool(2)]), "V1_2");
});

Deno.test("logicalAnd() and logicalOr() reject a wrong input count", () => {
  for (const definition of [logicalAnd, logicalOr]) {
    throws(() => validate(definition, [bool(0)], [bool(1)]), /expected 2 inputs, got 1/);
  }
  throws(() => validate(logicalNot, [bool(0), bool(1)], [bool(2)]), /expected 1 inputs, got 2/);
});

Deno.test("the logical operations reject non-bool8 operands", () => {
  throws(
    () => validate(logicalAnd, [bool(0), operand(1, "TENSOR_INT32", [2])], [bool(2)]),
    /input 1 \(operand 1\) has type TENSOR_INT32, expected TENSOR_BOOL8/,
  );
  throws(
    () => validate(logicalOr, [bool(0), bool(1)], [operand(2, "TENSOR_QUANT8_ASYMM", [2])]),
    /output 0 \(operand 2\) has type TENSOR_QUANT8_ASYMM/,
  );
  throws(
    () => validate(logicalNot, [operand(0, "TENSOR_FLOAT32", [2])], [bool(1)]),
    /unsupported type TENSOR_FLOAT32/,
  );
});

Deno.test("logicalAnd() rejects shapes that cannot be broadcast", () => {
  const input = (shape: number[]) => ({ ...tensor(shape, []), value: undefined });
  deepStrictEqual(logicalAnd.prepare([input([2, 1]), input([3])], []), [[2, 3]]);
  throws(() => logicalAnd.prepare([input([2]), input([3])], []), /cannot be broadcast/);
});

Deno.test("logicalOr() broadcasts and treats any nonzero byte as true", () => {
  const out = tensor([2, 2], [0, 0, 0, 0]);
  logicalOr.execute([tensor([2, 1], [0, 7]), tensor([2], [0, 1])], [out]);
  deepStrictEqual([...out.data!], [0, 1, 1, 1]);
  const not = tensor([3], [0, 0, 0]);
  logicalNot.execute([tensor([3], [0, 1, 255])], [not]);
  deepStrictEqual([...not.data!], [1, 0, 0]);
});
