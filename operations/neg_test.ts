import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { Tensor } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { abs } from "./abs.ts";
import { exp } from "./exp.ts";
import { log } from "./log.ts";
import { neg } from "./neg.ts";
import type { DeclaredOperand, OperationDefinition } from "./operation.ts";
import { rsqrt } from "./rsqrt.ts";
import { sin } from "./sin.ts";
import { sqrt } from "./sqrt.ts";

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

const MATH = [abs, exp, log, neg, sin, sqrt, rsqrt];

Deno.test("the HAL 1.2 unary math operations need V1_2 for float32 and float16", () => {
  for (const definition of MATH) {
    for (const type of ["TENSOR_FLOAT32", "TENSOR_FLOAT16"] as const) {
      strictEqual(
        validate(definition, [operand(0, type, [1, 2, 3, 4, 5])], [operand(1, type, [])]),
        "V1_2",
      );
    }
  }
});

Deno.test("the unary math operations reject a wrong input count", () => {
  const input = operand(0, "TENSOR_FLOAT32", [2]);
  for (const definition of MATH) {
    throws(
      () => validate(definition, [input, input], [operand(2, "TENSOR_FLOAT32", [2])]),
      /expected 1 inputs, got 2/,
    );
  }
});

Deno.test("neg() accepts int32 (V1_2), abs() since V1_3, and the others reject it", () => {
  const int32 = [operand(0, "TENSOR_INT32", [2])];
  strictEqual(validate(neg, int32, [operand(1, "TENSOR_INT32", [2])]), "V1_2");
  strictEqual(validate(abs, int32, [operand(1, "TENSOR_INT32", [2])]), "V1_3");
  for (const definition of [exp, log, sin, sqrt, rsqrt]) {
    throws(
      () => validate(definition, int32, [operand(1, "TENSOR_INT32", [2])]),
      /input 0 \(operand 0\) has unsupported type TENSOR_INT32/,
    );
  }
  throws(
    () =>
      validate(neg, [operand(0, "TENSOR_QUANT8_ASYMM", [2])], [
        operand(1, "TENSOR_QUANT8_ASYMM", [2]),
      ]),
    /unsupported type TENSOR_QUANT8_ASYMM/,
  );
});

Deno.test("sqrt() rejects an output type different from the input's", () => {
  throws(
    () => validate(sqrt, [operand(0, "TENSOR_FLOAT32", [2])], [operand(1, "TENSOR_FLOAT16", [2])]),
    /output 0 \(operand 1\) has type TENSOR_FLOAT16, expected TENSOR_FLOAT32/,
  );
});

Deno.test("neg() negates int32 and rsqrt() computes float16 in float32", () => {
  const shape = [3];
  const tensor = (type: OperandType, data: Tensor["data"]): Tensor => ({
    type,
    shape,
    scale: 0,
    zeroPoint: 0,
    data,
  });
  const out = new Int32Array(3);
  neg.execute([tensor("TENSOR_INT32", new Int32Array([1, -2, -2147483648]))], [
    tensor("TENSOR_INT32", out),
  ]);
  deepStrictEqual([...out], [-1, 2, -2147483648]);
  const half = new Float16Array(3);
  rsqrt.execute([tensor("TENSOR_FLOAT16", new Float16Array([4, 16, 0.25]))], [
    tensor("TENSOR_FLOAT16", half),
  ]);
  deepStrictEqual([...half], [0.5, 0.25, 2]);
  deepStrictEqual(neg.prepare([{ ...tensor("TENSOR_INT32", null), value: undefined }], []), [
    shape,
  ]);
});
