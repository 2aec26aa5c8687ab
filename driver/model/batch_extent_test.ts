import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import { DriverError } from "../../nnapi/errors.ts";
import { batchFixedAtOne, openBatchExtent } from "./batch_extent.ts";
import { buildModel } from "./model.ts";
import { ModelSchema } from "./model_schema.ts";
import { float32Tensor as f32, int32Scalar as int32 } from "../../tools/model_json.ts";

const int32s = (value: number[]) => ({
  type: "TENSOR_INT32",
  dimensions: [value.length],
  lifetime: "CONSTANT_COPY",
  value,
});

/** out = relu(x W^T + b) + y, x [1, 4], y [1, 3]: every first extent 1. */
function dense() {
  return buildModel(ModelSchema.parse({
    operands: [
      f32([1, 4], "MODEL_INPUT"), // 0
      f32([3, 4], "CONSTANT_COPY", Array.from({ length: 12 }, (_, i) => i / 10)), // 1
      f32([3], "CONSTANT_COPY", [0.1, 0.2, 0.3]), // 2
      int32(1), // 3: RELU
      f32([1, 3], "TEMPORARY_VARIABLE"), // 4
      f32([1, 3], "MODEL_INPUT"), // 5
      int32(0), // 6
      f32([1, 3], "MODEL_OUTPUT"), // 7
    ],
    operations: [
      { type: "FULLY_CONNECTED", inputs: [0, 1, 2, 3], outputs: [4] },
      { type: "ADD", inputs: [4, 5, 6], outputs: [7] },
    ],
    inputIndexes: [0, 5],
    outputIndexes: [7],
  }));
}

function refusal(model: ReturnType<typeof buildModel>, message: RegExp): void {
  throws(() => openBatchExtent(model), (error: unknown) => {
    strictEqual((error as DriverError).status, "INVALID_ARGUMENT");
    deepStrictEqual((error as DriverError).details.path, ["batching"]);
    return message.test((error as Error).message);
  });
}

Deno.test("the batch extent opens on what carries it: inputs, temporaries and outputs; constants stay", () => {
  const model = dense();
  strictEqual(
    batchFixedAtOne({
      inputs: model.inputIndexes.map((i) => model.operands[i]),
      outputs: model.outputIndexes.map((i) => model.operands[i]),
    }),
    true,
  );
  const opened = openBatchExtent(model);
  deepStrictEqual(opened.operands.map((o) => o.dimensions), [
    [0, 4],
    [3, 4],
    [3],
    [],
    [0, 3],
    [0, 3],
    [],
    [0, 3],
  ]);
  strictEqual(opened.staticShapes, false);
  // The model itself is left as it was.
  deepStrictEqual(model.operands[0].dimensions, [1, 4]);
});

Deno.test("an output that keeps one row whatever the batch is refused", () => {
  // out = MEAN(x, axis 0, keep dims): [1, 4] with one row and with two.
  const model = buildModel(ModelSchema.parse({
    operands: [
      f32([1, 4], "MODEL_INPUT"),
      int32s([0]),
      int32(1),
      f32([1, 4], "MODEL_OUTPUT"),
    ],
    operations: [{ type: "MEAN", inputs: [0, 1, 2], outputs: [3] }],
    inputIndexes: [0],
    outputIndexes: [3],
  }));
  refusal(model, /outputs that carry the batch: output 0 is \[1,4\] whatever the rows/);
});

Deno.test("a graph that cannot run with two rows is refused with the operation's fault", () => {
  // x [1, 2] concatenated with a constant [1, 2] along axis 1: two rows do not fit one.
  const model = buildModel(ModelSchema.parse({
    operands: [
      f32([1, 2], "MODEL_INPUT"),
      f32([1, 2], "CONSTANT_COPY", [1, 2]),
      int32(1),
      f32([1, 4], "MODEL_OUTPUT"),
    ],
    operations: [{ type: "CONCATENATION", inputs: [0, 1, 2], outputs: [3] }],
    inputIndexes: [0],
    outputIndexes: [3],
  }));
  refusal(model, /a graph that runs with two rows; with two: operation 0 \(CONCATENATION\)/);
});
