import { strictEqual } from "node:assert/strict";
import type { OperationType } from "../../nnapi/types.ts";
import { buildModel } from "../model/model.ts";
import { ModelSchema } from "../model/model_schema.ts";
import { prepareModel } from "./prepare.ts";
import { estimateWork } from "./work_estimate.ts";

/** An operand of a one-operation test model: tensors without a value are model inputs. */
interface Spec {
  type: string;
  dimensions: number[];
  value?: number[];
  lifetime?: "NO_VALUE";
}

const f32 = (...dimensions: number[]): Spec => ({ type: "TENSOR_FLOAT32", dimensions });
const i32s = (...dimensions: number[]): Spec => ({ type: "TENSOR_INT32", dimensions });
const constant = (...dimensions: number[]): Spec => ({
  ...f32(...dimensions),
  value: Array(dimensions.reduce((a, b) => a * b, 1)).fill(0),
});
const omitted = (): Spec => ({ ...f32(), lifetime: "NO_VALUE" });
const int = (v: number): Spec => ({ type: "INT32", dimensions: [], value: [v] });
const float = (v: number): Spec => ({ type: "FLOAT32", dimensions: [], value: [v] });
const bool = (v: boolean): Spec => ({ type: "BOOL", dimensions: [], value: [v ? 1 : 0] });

/** The estimated work of a plan of operations applied in turn (each output feeds nothing). */
function work(...operations: { type: OperationType; inputs: Spec[]; outputs: Spec[] }[]) {
  const operands: Record<string, unknown>[] = [];
  const add = (spec: Spec, lifetime: string) => {
    operands.push({
      ...spec,
      lifetime: spec.lifetime ?? (spec.value ? "CONSTANT_COPY" : lifetime),
    });
    return operands.length - 1;
  };
  const ops = operations.map(({ type, inputs, outputs }) => ({
    type,
    inputs: inputs.map((s) => add(s, "MODEL_INPUT")),
    outputs: outputs.map((s) => add(s, "MODEL_OUTPUT")),
  }));
  const json = ModelSchema.parse({
    operands,
    operations: ops,
    inputIndexes: operands.flatMap((o, i) => o.lifetime === "MODEL_INPUT" ? [i] : []),
    outputIndexes: operands.flatMap((o, i) => o.lifetime === "MODEL_OUTPUT" ? [i] : []),
  });
  const plan = prepareModel(buildModel(json), {
    preference: "FAST_SINGLE_ANSWER",
    priority: "MEDIUM",
  });
  return estimateWork(plan);
}

const SAME = 1;
const VALID = 2;

Deno.test("estimateWork() counts every tap of a pooling window, clipped to the input", () => {
  // The black-box case: a 180x180 window over a 180x180 image, SAME padding, stride 1.
  const n = 180;
  strictEqual(
    work({
      type: "MAX_POOL_2D",
      inputs: [f32(1, n, n, 1), int(SAME), int(1), int(1), int(n), int(n), int(0)],
      outputs: [f32(1, n, n, 1)],
    }),
    n * n * n * n,
  );
  strictEqual(
    work({
      type: "AVERAGE_POOL_2D",
      inputs: [f32(1, 10, 10, 2), int(VALID), int(1), int(1), int(3), int(3), int(0)],
      outputs: [f32(1, 8, 8, 2)],
    }),
    8 * 8 * 2 * 9,
  );
  // Explicit padding form: pads, strides 2, a 2x2 window.
  strictEqual(
    work({
      type: "L2_POOL_2D",
      inputs: [f32(1, 6, 6, 1), ...[0, 0, 0, 0, 2, 2, 2, 2, 0].map(int)],
      outputs: [f32(1, 3, 3, 1)],
    }),
    3 * 3 * 4,
  );
});

Deno.test("estimateWork() counts multiply-adds of convolutions and matrix products", () => {
  const conv = (extra: Spec[]) =>
    work({
      type: "CONV_2D",
      inputs: [
        f32(1, 8, 8, 3),
        f32(4, 3, 3, 3),
        f32(4),
        int(SAME),
        int(1),
        int(1),
        int(0),
        ...extra,
      ],
      outputs: [f32(1, 8, 8, 4)],
    });
  strictEqual(conv([]), 8 * 8 * 4 * 27);
  // Dilation spreads the taps; it does not add any.
  strictEqual(conv([bool(false), int(2), int(2)]), 8 * 8 * 4 * 27);
  strictEqual(
    work({
      type: "DEPTHWISE_CONV_2D",
      inputs: [
        f32(1, 8, 8, 2),
        f32(1, 3, 3, 4),
        f32(4),
        int(SAME),
        int(1),
        int(1),
        int(2),
        int(0),
      ],
      outputs: [f32(1, 8, 8, 4)],
    }),
    8 * 8 * 4 * 9,
  );
  strictEqual(
    work({
      type: "FULLY_CONNECTED",
      inputs: [f32(2, 16), f32(8, 16), f32(8), int(0)],
      outputs: [f32(2, 8)],
    }),
    2 * 8 * 16,
  );
});

Deno.test("estimateWork() counts the recurrent cells' matrix products per batch", () => {
  // RNN: batch 2, input 8, 4 units.
  strictEqual(
    work({
      type: "RNN",
      inputs: [f32(2, 8), f32(4, 8), f32(4, 4), f32(4), f32(2, 4), int(1)],
      outputs: [f32(2, 4), f32(2, 4)],
    }),
    2 * (4 * 8 + 4 * 4) + 2 * 8,
  );
  // LSTM: batch 2, input 3, 4 cells, no peephole, no projection (output size 4): four
  // input and four recurrent weight matrices.
  const lstmInputs = [
    f32(2, 3),
    constant(4, 3),
    f32(4, 3),
    f32(4, 3),
    f32(4, 3),
    constant(4, 4),
    f32(4, 4),
    f32(4, 4),
    f32(4, 4),
    omitted(),
    omitted(),
    omitted(),
    constant(4),
    f32(4),
    f32(4),
    f32(4),
    omitted(),
    omitted(),
    f32(2, 4),
    f32(2, 4),
    int(1),
    float(0),
    float(0),
  ];
  strictEqual(
    work({
      type: "LSTM",
      inputs: lstmInputs,
      outputs: [f32(2, 16), f32(2, 4), f32(2, 4), f32(2, 4)],
    }),
    2 * (4 * 4 * 3 + 4 * 4 * 4) + 2 * 16 + 3 * 2 * 4,
  );
  // SVDF: batch 2, input 3, 4 filters of memory 10, rank 1; a constant bias (a bias that
  // may be omitted at execution leaves the shapes to execution).
  strictEqual(
    work({
      type: "SVDF",
      inputs: [f32(2, 3), f32(4, 3), f32(4, 10), constant(4), f32(2, 40), int(1), int(0)],
      outputs: [f32(2, 40), f32(2, 4)],
    }),
    2 * (4 * 3 + 4 * 10) + 2 * 40 + 2 * 4,
  );
});

Deno.test("estimateWork() bounds normalization windows, lookups, resizing and hashing", () => {
  const lrn = (radius: number) =>
    work({
      type: "LOCAL_RESPONSE_NORMALIZATION",
      inputs: [f32(1, 4, 4, 16), int(radius), float(1), float(1), float(0.5)],
      outputs: [f32(1, 4, 4, 16)],
    });
  strictEqual(lrn(2), 4 * 4 * 16 * 5);
  strictEqual(lrn(100), 4 * 4 * 16 * 16);
  strictEqual(
    work({
      type: "EMBEDDING_LOOKUP",
      inputs: [i32s(3), f32(10, 4)],
      outputs: [f32(3, 4)],
    }),
    3 + 3 * 4,
  );
  strictEqual(
    work({
      type: "RESIZE_BILINEAR",
      inputs: [f32(1, 4, 4, 1), int(8), int(8)],
      outputs: [f32(1, 8, 8, 1)],
    }),
    4 * 8 * 8,
  );
  // 4 x 8 seeds, each hashing 10 items of 12 bytes.
  strictEqual(
    work({
      type: "LSH_PROJECTION",
      inputs: [f32(4, 8), f32(10, 3), f32(10), int(2)],
      outputs: [i32s(32)],
    }),
    32 * (256 * 10 + 16 * 120),
  );
});

Deno.test("estimateWork() counts elements for the rest and sums the operations", () => {
  strictEqual(
    work({ type: "ADD", inputs: [f32(64), f32(64), int(0)], outputs: [f32(64)] }),
    64 + 64 + 1 + 64,
  );
  strictEqual(
    work(
      {
        type: "FULLY_CONNECTED",
        inputs: [f32(2, 16), f32(8, 16), f32(8), int(0)],
        outputs: [f32(2, 8)],
      },
      { type: "RELU", inputs: [f32(2, 8)], outputs: [f32(2, 8)] },
    ),
    2 * 8 * 16 + 16 + 16,
  );
});

Deno.test("estimateWork() gives no estimate for a plan whose shapes are known only at execution", () => {
  strictEqual(
    work({ type: "ADD", inputs: [f32(0), f32(0), int(0)], outputs: [f32(0)] }),
    undefined,
  );
});
