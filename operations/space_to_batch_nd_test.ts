import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import { batchToSpaceNd } from "./batch_to_space_nd.ts";
import { known, operand, signatureOf } from "./common/shape_ops_fixture.ts";
import { spaceToBatchNd } from "./space_to_batch_nd.ts";

const block = operand("TENSOR_INT32", [2], { value: [2, 2] });
const pads = operand("TENSOR_INT32", [2, 2], { value: [0, 0, 0, 0] });
const layout = operand("BOOL", [], { value: [1] });

Deno.test("spaceToBatchNd.validate() gives V1_1, V1_2 for the layout flag or zero point", () => {
  const f32 = operand("TENSOR_FLOAT32", [1, 4, 4, 1]);
  const sig = (t: typeof f32, extra: typeof layout[] = []) =>
    signatureOf("SPACE_TO_BATCH_ND", [t, block, pads, ...extra], [t]);
  strictEqual(spaceToBatchNd.validate(sig(f32)), "V1_1");
  strictEqual(spaceToBatchNd.validate(sig(f32, [layout])), "V1_2");
  const q = operand("TENSOR_QUANT8_ASYMM", [1, 4, 4, 1], { zeroPoint: 128 });
  strictEqual(spaceToBatchNd.validate(sig(q)), "V1_2");
  throws(() => spaceToBatchNd.validate(sig(operand("TENSOR_FLOAT32", [4, 4, 1]))), /rank 3/);
  throws(
    () => spaceToBatchNd.validate(signatureOf("SPACE_TO_BATCH_ND", [f32, block], [f32])),
    /expected 3 or 4 inputs, got 2/,
  );
  throws(
    () => spaceToBatchNd.validate(sig(f32, [operand("INT32", [])])),
    /input 3 .* has type INT32, expected BOOL/,
  );
});

Deno.test("spaceToBatchNd.prepare() pads and moves blocks into batches", () => {
  const vector = known("TENSOR_INT32", [2], [2, 2]);
  const paddings = known("TENSOR_INT32", [2, 2], [1, 1, 0, 2]);
  deepStrictEqual(
    spaceToBatchNd.prepare([known("TENSOR_FLOAT32", [1, 2, 4, 3]), vector, paddings], []),
    [[4, 2, 3, 3]],
  );
  deepStrictEqual(
    spaceToBatchNd.prepare([
      known("TENSOR_FLOAT32", [1, 3, 2, 4]),
      vector,
      paddings,
      known("BOOL", [], [1]),
    ], []),
    [[4, 3, 2, 3]],
  );
  throws(
    () =>
      spaceToBatchNd.prepare([
        known("TENSOR_FLOAT32", [1, 3, 3, 1]),
        vector,
        known("TENSOR_INT32", [2, 2], [0, 0, 0, 0]),
      ], []),
    /not multiples of the block/,
  );
});

Deno.test("batchToSpaceNd validates and divides the batches by the block", () => {
  const f32 = operand("TENSOR_FLOAT32", [4, 2, 2, 1]);
  strictEqual(
    batchToSpaceNd.validate(signatureOf("BATCH_TO_SPACE_ND", [f32, block], [f32])),
    "V1_1",
  );
  strictEqual(
    batchToSpaceNd.validate(signatureOf("BATCH_TO_SPACE_ND", [f32, block, layout], [f32])),
    "V1_2",
  );
  throws(
    () => batchToSpaceNd.validate(signatureOf("BATCH_TO_SPACE_ND", [f32], [f32])),
    /expected 2 or 3 inputs, got 1/,
  );
  const vector = known("TENSOR_INT32", [2], [2, 2]);
  deepStrictEqual(
    batchToSpaceNd.prepare([known("TENSOR_FLOAT32", [8, 1, 2, 3]), vector], []),
    [[2, 2, 4, 3]],
  );
  throws(
    () => batchToSpaceNd.prepare([known("TENSOR_FLOAT32", [2, 1, 1, 1]), vector], []),
    /not a multiple/,
  );
});
