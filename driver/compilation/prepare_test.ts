import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { Executable } from "../execution/executable.ts";
import { buildModel } from "../model/model.ts";
import { ModelSchema } from "../model/model_schema.ts";
import { prepareModel } from "./prepare.ts";

/** An INT32 scalar operand of the model JSON. */
const i32 = (v: number) => ({
  type: "INT32",
  dimensions: [],
  lifetime: "CONSTANT_COPY",
  value: [v],
});

/** 1x6x6x3 input, 3x3x3→16 conv (SAME) with a CONSTANT_REFERENCE filter and bias. */
function convModel() {
  const filter = Array.from(
    { length: 16 * 3 * 3 * 3 },
    (_, i) => Math.fround(((i * 7) % 11 - 5) / 16),
  );
  const bias = Array.from({ length: 16 * 3 }, (_, i) => Math.fround(i / 32)).slice(0, 16);
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

Deno.test("the arena gives a RESHAPE, SQUEEZE or EXPAND_DIMS of a temporary the same bytes, and the results stay those of separate tensors", () => {
  const tensor = (dimensions: number[], lifetime = "TEMPORARY_VARIABLE") => ({
    type: "TENSOR_FLOAT32",
    dimensions,
    lifetime,
  });
  const model = ModelSchema.parse({
    operands: [
      tensor([2, 6], "MODEL_INPUT"), // 0
      tensor([2, 6]), // 1: relu(x)
      { type: "TENSOR_INT32", dimensions: [3], lifetime: "CONSTANT_COPY", value: [3, 4, 1] },
      tensor([3, 4, 1]), // 3: reshape(1)
      { type: "TENSOR_INT32", dimensions: [1], lifetime: "CONSTANT_COPY", value: [2] },
      tensor([3, 4]), // 5: squeeze(3)
      i32(0),
      tensor([1, 3, 4]), // 7: expand_dims(5)
      tensor([1, 3, 4], "MODEL_OUTPUT"), // 8: exp(7)
      tensor([2, 6], "MODEL_OUTPUT"), // 9: neg(1), read after the reshapes
    ],
    operations: [
      { type: "RELU", inputs: [0], outputs: [1] },
      { type: "RESHAPE", inputs: [1, 2], outputs: [3] },
      { type: "SQUEEZE", inputs: [3, 4], outputs: [5] },
      { type: "EXPAND_DIMS", inputs: [5, 6], outputs: [7] },
      { type: "EXP", inputs: [7], outputs: [8] },
      { type: "NEG", inputs: [1], outputs: [9] },
    ],
    inputIndexes: [0],
    outputIndexes: [8, 9],
  });
  const prepared = prepareModel(buildModel(model), options);
  const offsets = prepared.arena!.offsets;
  deepStrictEqual([3, 5, 7].map((i) => offsets[i]), [1, 1, 1].map((i) => offsets[i]));
  for (const other of [8, 9]) {
    ok(offsets[other] !== offsets[1], `operand ${other} has its own bytes`);
  }
  const input = Float32Array.from({ length: 12 }, (_, i) => i - 5.5);
  const [exp, neg] = new Executable(prepared).run([{ data: input, shape: [2, 6] }]);
  deepStrictEqual(exp.shape, [1, 3, 4]);
  deepStrictEqual([...exp.data], [...input].map((v) => Math.fround(Math.exp(Math.max(v, 0)))));
  deepStrictEqual([...neg.data], [...input].map((v) => -Math.max(v, 0)));
});
