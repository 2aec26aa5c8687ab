import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import { known, operand, signatureOf } from "./common/shape_ops_fixture.ts";
import { transpose } from "./transpose.ts";

Deno.test("transpose.validate() gives V1_1, V1_2 for float16", () => {
  const perm = operand("TENSOR_INT32", [2], { value: [1, 0] });
  const f32 = operand("TENSOR_FLOAT32", [2, 3]);
  strictEqual(transpose.validate(signatureOf("TRANSPOSE", [f32, perm], [f32])), "V1_1");
  const f16 = operand("TENSOR_FLOAT16", [2, 3]);
  strictEqual(transpose.validate(signatureOf("TRANSPOSE", [f16, perm], [f16])), "V1_2");
});

Deno.test("transpose.validate() names wrong arity, types and ranks", () => {
  const perm = operand("TENSOR_INT32", [2]);
  const f32 = operand("TENSOR_FLOAT32", [2, 3]);
  throws(() => transpose.validate(signatureOf("TRANSPOSE", [f32], [f32])), /expected 2 inputs/);
  const bool = operand("TENSOR_BOOL8", [2, 3]);
  throws(
    () => transpose.validate(signatureOf("TRANSPOSE", [bool, perm], [bool])),
    /unsupported type TENSOR_BOOL8/,
  );
  const rank2Perm = operand("TENSOR_INT32", [2, 1]);
  throws(
    () => transpose.validate(signatureOf("TRANSPOSE", [f32, rank2Perm], [f32])),
    /permutation \(input 1\) .* has rank 2, expected 1/,
  );
  const f16 = operand("TENSOR_FLOAT16", [2, 3]);
  throws(
    () => transpose.validate(signatureOf("TRANSPOSE", [f32, perm], [f16])),
    /output 0 .* has type TENSOR_FLOAT16, expected TENSOR_FLOAT32/,
  );
});

Deno.test("transpose.prepare() permutes dims, reverses them without a permutation", () => {
  const input = known("TENSOR_FLOAT32", [2, 3, 4]);
  deepStrictEqual(
    transpose.prepare([input, known("TENSOR_INT32", [3], [1, 2, 0])], []),
    [[3, 4, 2]],
  );
  deepStrictEqual(transpose.prepare([input, known("TENSOR_INT32", [3], null)], []), [[4, 3, 2]]);
  throws(
    () => transpose.prepare([input, known("TENSOR_INT32", [3], [0, 0, 1])], []),
    /not a permutation/,
  );
});
