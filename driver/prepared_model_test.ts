import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { Executable } from "./executable.ts";
import { buildModel } from "./model.ts";
import { ModelSchema } from "./model_schema.ts";
import { prepareModel } from "./prepared_model.ts";

/** 1x6x6x3 input, 3x3x3→16 conv (SAME) with a CONSTANT_REFERENCE filter and bias. */
function convModel() {
  const filter = Array.from(
    { length: 16 * 3 * 3 * 3 },
    (_, i) => Math.fround(((i * 7) % 11 - 5) / 16),
  );
  const bias = Array.from({ length: 16 * 3 }, (_, i) => Math.fround(i / 32)).slice(0, 16);
  const i32 = (v: number) => ({
    type: "INT32",
    dimensions: [],
    lifetime: "CONSTANT_COPY",
    value: [v],
  });
  return ModelSchema.parse({
    operands: [
      { type: "TENSOR_FLOAT32", dimensions: [1, 6, 6, 3], lifetime: "MODEL_INPUT" },
      {
        type: "TENSOR_FLOAT32",
        dimensions: [16, 3, 3, 3],
        lifetime: "CONSTANT_REFERENCE",
        value: filter,
      },
      { type: "TENSOR_FLOAT32", dimensions: [16], lifetime: "CONSTANT_REFERENCE", value: bias },
      i32(1),
      i32(1),
      i32(1),
      i32(0),
      { type: "TENSOR_FLOAT32", dimensions: [1, 6, 6, 16], lifetime: "MODEL_OUTPUT" },
    ],
    operations: [{ type: "CONV_2D", inputs: [0, 1, 2, 3, 4, 5, 6], outputs: [7] }],
    inputIndexes: [0],
    outputIndexes: [7],
  });
}

const options = { preference: "FAST_SINGLE_ANSWER", priority: "MEDIUM" } as const;

Deno.test("prepareModel() keeps weights that packing replaces only in packed form", () => {
  const prepared = prepareModel(buildModel(convModel()), options);
  strictEqual(prepared.operands[1].constant, undefined);
  strictEqual(prepared.operands[1].packedIn, 0);
  strictEqual(prepared.operands[2].packedIn, 0);
  const packedBytes = prepared.steps[0].packed![0].length * 4;
  ok(prepared.weights.byteLength < packedBytes + 128, "the data cache holds no raw copy");
});

Deno.test("an executable without the packed kernel rebuilds the raw weights and agrees", () => {
  const prepared = prepareModel(buildModel(convModel()), options);
  const input = Float32Array.from({ length: 108 }, (_, i) => Math.sin(i));
  const packed = new Executable(prepared).run([{ data: input, shape: [1, 6, 6, 3] }]);
  const reference = new Executable({ ...prepared, arena: undefined })
    .run([{ data: input, shape: [1, 6, 6, 3] }]);
  deepStrictEqual(reference[0].shape, [1, 6, 6, 16]);
  const a = packed[0].data as Float32Array;
  const b = reference[0].data as Float32Array;
  ok(a.every((v, i) => Math.abs(v - b[i]) <= 1e-5 + 1e-5 * Math.abs(b[i])), "same outputs");
});
