import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { prepareModel } from "../compilation/prepare.ts";
import { Executable } from "../execution/executable.ts";
import { buildModel } from "./model.ts";
import { ModelSchema } from "./model_schema.ts";

const options = { preference: "FAST_SINGLE_ANSWER", priority: "MEDIUM" } as const;

const int32 = (v: number) => ({
  type: "INT32",
  dimensions: [],
  lifetime: "CONSTANT_COPY",
  value: [v],
});
const int32s = (values: number[]) => ({
  type: "TENSOR_INT32",
  dimensions: [values.length],
  lifetime: "CONSTANT_COPY",
  value: values,
});
const temporaryInt32s = (n: number) => ({
  type: "TENSOR_INT32",
  dimensions: [n],
  lifetime: "TEMPORARY_VARIABLE",
});

/**
 * x [?, ?, 4] reshaped to [N, M, 2, 2], the target built at execution from SHAPE(x):
 * [0, 0, 2, 2] + N * [1, 0, 0, 0] + M * [0, 1, 0, 0]; then ADD of 1.
 */
function runtimeReshapeModel(extents = [0, 0, 4]) {
  return buildModel(ModelSchema.parse({
    operands: [
      { type: "TENSOR_FLOAT32", dimensions: extents, lifetime: "MODEL_INPUT" }, // 0
      temporaryInt32s(3), // 1: SHAPE(x)
      int32(0), // 2: axis
      int32s([0]), // 3
      int32s([1]), // 4
      temporaryInt32s(1), // 5: N
      temporaryInt32s(1), // 6: M
      int32s([1, 0, 0, 0]), // 7
      int32s([0, 1, 0, 0]), // 8
      temporaryInt32s(4), // 9: N * e0
      temporaryInt32s(4), // 10: M * e1
      int32s([0, 0, 2, 2]), // 11
      temporaryInt32s(4), // 12
      temporaryInt32s(4), // 13: the target
      { type: "TENSOR_FLOAT32", dimensions: [0, 0, 2, 2], lifetime: "TEMPORARY_VARIABLE" }, // 14
      { type: "TENSOR_FLOAT32", dimensions: [1], lifetime: "CONSTANT_COPY", value: [1] }, // 15
      { type: "TENSOR_FLOAT32", dimensions: [0, 0, 2, 2], lifetime: "MODEL_OUTPUT" }, // 16
    ],
    operations: [
      { type: "SHAPE", inputs: [0], outputs: [1] },
      { type: "GATHER", inputs: [1, 2, 3], outputs: [5] },
      { type: "GATHER", inputs: [1, 2, 4], outputs: [6] },
      { type: "MUL", inputs: [5, 7, 2], outputs: [9] },
      { type: "MUL", inputs: [6, 8, 2], outputs: [10] },
      { type: "ADD", inputs: [9, 10, 2], outputs: [12] },
      { type: "ADD", inputs: [12, 11, 2], outputs: [13] },
      { type: "RESHAPE", inputs: [0, 13], outputs: [14] },
      { type: "ADD", inputs: [14, 15, 2], outputs: [16] },
    ],
    inputIndexes: [0],
    outputIndexes: [16],
  }));
}

Deno.test("a RESHAPE target computed from SHAPE at execution resolves when an executor binds the input shapes", () => {
  const model = runtimeReshapeModel();
  strictEqual(model.staticShapes, false);
  const executable = new Executable(prepareModel(model, options));
  for (const [n, m] of [[2, 3], [1, 5], [2, 3]]) {
    const data = Float32Array.from({ length: n * m * 4 }, (_, i) => i / 4);
    const [out] = executable.run([{ data, shape: [n, m, 4] }]);
    deepStrictEqual(out.shape, [n, m, 2, 2]);
    deepStrictEqual(Array.from(out.data), Array.from(data, (v) => v + 1));
  }
  // Bound per shape (tensors laid out), not run step by step.
  strictEqual(executable.shapeSignatures, 2);
  ok(executable.shapeBindingBytes > 0);
});

Deno.test("registration works out small integer values from constants and shapes: a fully shaped model with SHAPE is static", () => {
  const model = runtimeReshapeModel([2, 3, 4]);
  strictEqual(model.staticShapes, true);
  deepStrictEqual(model.operands[14].dimensions, [2, 3, 2, 2]);
});
