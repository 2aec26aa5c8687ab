import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import { known, operand, signatureOf } from "./common/shape_ops_fixture.ts";
import { ValueNotYetKnown } from "./operation.ts";
import { slice } from "./slice.ts";
import { split } from "./split.ts";

Deno.test("slice.validate() gives V1_2, names wrong arity, types and ranks", () => {
  const input = operand("TENSOR_INT32", [2, 3]);
  const vector = operand("TENSOR_INT32", [2]);
  strictEqual(slice.validate(signatureOf("SLICE", [input, vector, vector], [input])), "V1_2");
  throws(() => slice.validate(signatureOf("SLICE", [input, vector], [input])), /expected 3 inputs/);
  const scalar = operand("INT32", []);
  throws(
    () => slice.validate(signatureOf("SLICE", [input, scalar, vector], [input])),
    /input 1 .* has type INT32, expected TENSOR_INT32/,
  );
  const matrix = operand("TENSOR_INT32", [2, 1]);
  throws(
    () => slice.validate(signatureOf("SLICE", [input, vector, matrix], [input])),
    /size \(input 2\) .* has rank 2, expected 1/,
  );
});

Deno.test("slice.prepare() takes size -1 to the end and rejects windows past the end", () => {
  const input = known("TENSOR_FLOAT32", [3, 4]);
  const vector = (v?: number[]) => known("TENSOR_INT32", [2], v);
  deepStrictEqual(slice.prepare([input, vector([1, 1]), vector([-1, 2])], []), [[2, 2]]);
  throws(() => slice.prepare([input, vector([2, 0]), vector([2, 1])], []), /exceed/);
  throws(() => slice.prepare([input, vector(), vector([1, 1])], []), ValueNotYetKnown);
});

Deno.test("split.validate() checks the number of outputs against input 2", () => {
  const input = operand("TENSOR_FLOAT32", [2, 4]);
  const axis = operand("INT32", [], { value: [1] });
  const two = operand("INT32", [], { value: [2] });
  strictEqual(split.validate(signatureOf("SPLIT", [input, axis, two], [input, input])), "V1_2");
  throws(
    () => split.validate(signatureOf("SPLIT", [input, axis, two], [input])),
    /number of splits \(input 2\) is 2 but the operation has 1 outputs/,
  );
  throws(() => split.validate(signatureOf("SPLIT", [input, axis], [input])), /expected 3 inputs/);
  const bool = operand("TENSOR_BOOL8", [2, 4]);
  throws(
    () => split.validate(signatureOf("SPLIT", [bool, axis, two], [bool, bool])),
    /unsupported type TENSOR_BOOL8/,
  );
});

Deno.test("split.prepare() divides the axis, rejects an indivisible one", () => {
  const input = known("TENSOR_FLOAT32", [2, 6]);
  const scalar = (v: number) => known("INT32", [], [v]);
  const out = known("TENSOR_FLOAT32", [0, 0]);
  deepStrictEqual(split.prepare([input, scalar(-1), scalar(3)], [out, out, out]), [
    [2, 2],
    [2, 2],
    [2, 2],
  ]);
  throws(
    () => split.prepare([input, scalar(1), scalar(4)], [out, out, out, out]),
    /not divisible/,
  );
});
