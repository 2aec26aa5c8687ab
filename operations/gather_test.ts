import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import { known, operand, signatureOf } from "./common/shape_ops_fixture.ts";
import { gather } from "./gather.ts";
import { ValueNotYetKnown } from "./operation.ts";
import { tile } from "./tile.ts";

Deno.test("gather.validate() gives V1_2, names wrong arity, types and ranks", () => {
  const input = operand("TENSOR_QUANT8_ASYMM", [2, 3]);
  const axis = operand("INT32", [], { value: [0] });
  const indices = operand("TENSOR_INT32", [2]);
  strictEqual(gather.validate(signatureOf("GATHER", [input, axis, indices], [input])), "V1_2");
  throws(() => gather.validate(signatureOf("GATHER", [input, axis], [input])), /expected 3 inputs/);
  throws(
    () => gather.validate(signatureOf("GATHER", [input, axis, axis], [input])),
    /input 2 .* has type INT32, expected TENSOR_INT32/,
  );
  const moved = operand("TENSOR_QUANT8_ASYMM", [2, 3], { zeroPoint: 1 });
  throws(
    () => gather.validate(signatureOf("GATHER", [input, axis, indices], [moved])),
    /zero point 1, expected the input's/,
  );
});

Deno.test("gather.prepare() puts the indices' dims in place of the axis", () => {
  const input = known("TENSOR_FLOAT32", [2, 3, 4]);
  const indices = known("TENSOR_INT32", [5, 1]);
  deepStrictEqual(gather.prepare([input, known("INT32", [], [1]), indices], []), [[2, 5, 1, 4]]);
  deepStrictEqual(gather.prepare([input, known("INT32", [], [-1]), indices], []), [[2, 3, 5, 1]]);
  throws(() => gather.prepare([input, known("INT32", [], [3]), indices], []), /out of range/);
  throws(
    () => gather.prepare([input, known("INT32", [], [0]), known("TENSOR_INT32", [1], [2])], []),
    /outside \[0, 2\)/,
  );
});

Deno.test("tile validates its multiples and multiplies the dims", () => {
  const input = operand("TENSOR_FLOAT32", [2, 3]);
  const multiples = operand("TENSOR_INT32", [2]);
  strictEqual(tile.validate(signatureOf("TILE", [input, multiples], [input])), "V1_2");
  throws(() => tile.validate(signatureOf("TILE", [input], [input])), /expected 2 inputs/);
  throws(
    () => tile.validate(signatureOf("TILE", [input, operand("TENSOR_FLOAT32", [2])], [input])),
    /input 1 .* has type TENSOR_FLOAT32, expected TENSOR_INT32/,
  );
  const shape = known("TENSOR_FLOAT32", [2, 3]);
  deepStrictEqual(tile.prepare([shape, known("TENSOR_INT32", [2], [2, 1])], []), [[4, 3]]);
  throws(() => tile.prepare([shape, known("TENSOR_INT32", [2])], []), ValueNotYetKnown);
  throws(() => tile.prepare([shape, known("TENSOR_INT32", [3], [1, 1, 1])], []), /expected 2/);
});
