import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import { known, operand, signatureOf } from "./common/shape_ops_fixture.ts";
import { stridedSlice } from "./strided_slice.ts";

function declared(type: "TENSOR_FLOAT32" | "TENSOR_FLOAT16", rank = 2) {
  const vector = operand("TENSOR_INT32", [rank]);
  const mask = operand("INT32", [], { value: [0] });
  const tensor = operand(type, new Array<number>(rank).fill(2));
  return signatureOf(
    "STRIDED_SLICE",
    [tensor, vector, vector, vector, mask, mask, mask],
    [tensor],
  );
}

function inputs(shape: number[], begin: number[], end: number[], strides: number[], masks = [
  0,
  0,
  0,
]) {
  const vector = (v: number[]) => known("TENSOR_INT32", [v.length], v);
  return [
    known("TENSOR_FLOAT32", shape),
    vector(begin),
    vector(end),
    vector(strides),
    ...masks.map((m) => known("INT32", [], [m])),
  ];
}

Deno.test("stridedSlice.validate() gives V1_1, V1_2 for float16, names faults", () => {
  strictEqual(stridedSlice.validate(declared("TENSOR_FLOAT32")), "V1_1");
  strictEqual(stridedSlice.validate(declared("TENSOR_FLOAT16")), "V1_2");
  const six = declared("TENSOR_FLOAT32");
  throws(
    () => stridedSlice.validate({ ...six, inputs: six.inputs.slice(0, 6) }),
    /expected 7 inputs, got 6/,
  );
  throws(() => stridedSlice.validate(declared("TENSOR_FLOAT32", 5)), /rank 5, expected at most 4/);
  const wrong = declared("TENSOR_FLOAT32");
  throws(
    () =>
      stridedSlice.validate({
        ...wrong,
        inputs: wrong.inputs.map((o, i) => i === 4 ? { ...o, type: "FLOAT32" } : o),
      }),
    /input 4 .* has type FLOAT32, expected INT32/,
  );
});

Deno.test("stridedSlice.prepare() applies strides, masks and shrinking", () => {
  deepStrictEqual(stridedSlice.prepare(inputs([4], [1], [-1], [2]), []), [[1]]);
  deepStrictEqual(stridedSlice.prepare(inputs([4], [-1], [-5], [-1]), []), [[4]]);
  deepStrictEqual(stridedSlice.prepare(inputs([2, 3], [1, 0], [2, 3], [1, 1], [0, 0, 1]), []), [[
    3,
  ]]);
  deepStrictEqual(stridedSlice.prepare(inputs([2, 3], [1, 1], [2, 2], [1, 1], [1, 2, 0]), []), [[
    2,
    2,
  ]]);
  throws(() => stridedSlice.prepare(inputs([4], [0], [4], [0]), []), /strides .* entry 0 is 0/);
});
