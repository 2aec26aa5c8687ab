import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import { known, operand, signatureOf } from "./common/shape_ops_fixture.ts";
import { expandDims } from "./expand_dims.ts";
import { squeeze } from "./squeeze.ts";

Deno.test("squeeze.validate() gives V1_1, V1_2 for float16, names faults", () => {
  const dims = operand("TENSOR_INT32", [1], { value: [0] });
  const f32 = operand("TENSOR_FLOAT32", [1, 2]);
  strictEqual(squeeze.validate(signatureOf("SQUEEZE", [f32, dims], [f32])), "V1_1");
  const f16 = operand("TENSOR_FLOAT16", [1, 2]);
  strictEqual(squeeze.validate(signatureOf("SQUEEZE", [f16, dims], [f16])), "V1_2");
  throws(() => squeeze.validate(signatureOf("SQUEEZE", [f32], [f32])), /expected 2 inputs/);
  const rank5 = operand("TENSOR_FLOAT32", [1, 1, 1, 1, 2]);
  throws(() => squeeze.validate(signatureOf("SQUEEZE", [rank5, dims], [rank5])), /rank 5/);
  const i32 = operand("TENSOR_INT32", [1, 2]);
  throws(() => squeeze.validate(signatureOf("SQUEEZE", [i32, dims], [i32])), /unsupported type/);
});

Deno.test("squeeze.prepare() drops the named or all size-1 dims", () => {
  const input = known("TENSOR_FLOAT32", [1, 3, 1, 2]);
  deepStrictEqual(squeeze.prepare([input, known("TENSOR_INT32", [1], [-2])], []), [[1, 3, 2]]);
  deepStrictEqual(squeeze.prepare([input, known("TENSOR_INT32", [1], null)], []), [[3, 2]]);
  deepStrictEqual(squeeze.prepare([input, known("TENSOR_INT32", [0], [])], []), [[3, 2]]);
  throws(() => squeeze.prepare([input, known("TENSOR_INT32", [1], [1])], []), /size 3/);
});

Deno.test("expandDims validates its rank and inserts a dimension", () => {
  const axis = operand("INT32", [], { value: [0] });
  const input = operand("TENSOR_INT32", [2, 3]);
  const output = operand("TENSOR_INT32", [1, 2, 3]);
  strictEqual(expandDims.validate(signatureOf("EXPAND_DIMS", [input, axis], [output])), "V1_2");
  throws(
    () => expandDims.validate(signatureOf("EXPAND_DIMS", [input, axis], [input])),
    /output 0 .* has rank 2, expected the input's rank \+ 1/,
  );
  throws(
    () => expandDims.validate(signatureOf("EXPAND_DIMS", [input, input], [output])),
    /input 1 .* has type TENSOR_INT32, expected INT32/,
  );
  const shape = known("TENSOR_FLOAT32", [2, 3]);
  deepStrictEqual(expandDims.prepare([shape, known("INT32", [], [-1])], []), [[2, 3, 1]]);
  throws(() => expandDims.prepare([shape, known("INT32", [], [3])], []), /out of range/);
});
