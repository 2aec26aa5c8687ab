/**
 * Element-wise chains are fused at preparation and run as one pass with the bits of the
 * steps run one by one; a chain stops where an intermediate is a model output or has a
 * second reader.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { chainPassCount } from "../../kernels/f32_elementwise_chain.ts";
import { seededFloats } from "../../kernels/seeded_random.ts";
import { Executable } from "../execution/executable.ts";
import { buildModel } from "../model/model.ts";
import { ModelSchema } from "../model/model_schema.ts";
import { prepareModel } from "./prepare.ts";

const OPTIONS = { preference: "FAST_SINGLE_ANSWER", priority: "MEDIUM" } as const;
const SHAPE = [1, 8, 8, 12];

const tensor = (dimensions: number[], lifetime: string, value?: Float32Array) => ({
  type: "TENSOR_FLOAT32",
  dimensions,
  lifetime,
  ...(value ? { value: [...value] } : {}),
});
const scalar = (v: number) => ({
  type: "INT32",
  dimensions: [],
  lifetime: "CONSTANT_COPY",
  value: [v],
});

/**
 * `out = y - hard_swish(relu6((x + bias) * scale))`; `secondOutput` makes `(x + bias) *
 * scale` a model output too, `squared` makes the product `t1 * t1` (a second reader of t1).
 */
function chainModel(options: { secondOutput?: boolean; squared?: boolean } = {}) {
  return buildModel(ModelSchema.parse({
    operands: [
      tensor(SHAPE, "MODEL_INPUT"), // 0: x
      tensor([12], "CONSTANT_COPY", seededFloats(12, 1, 4)), // 1: bias (a row)
      scalar(0), // 2
      tensor(SHAPE, "TEMPORARY_VARIABLE"), // 3: t1
      tensor([1], "CONSTANT_COPY", Float32Array.of(1.7)), // 4: scale
      scalar(3), // 5: relu6
      tensor(SHAPE, options.secondOutput ? "MODEL_OUTPUT" : "TEMPORARY_VARIABLE"), // 6: t2
      tensor(SHAPE, "TEMPORARY_VARIABLE"), // 7: t3
      tensor(SHAPE, "MODEL_INPUT"), // 8: y
      tensor(SHAPE, "MODEL_OUTPUT"), // 9: out
    ],
    operations: [
      { type: "ADD", inputs: [0, 1, 2], outputs: [3] },
      { type: "MUL", inputs: [3, options.squared ? 3 : 4, 5], outputs: [6] },
      { type: "HARD_SWISH", inputs: [6], outputs: [7] },
      { type: "SUB", inputs: [8, 7, 2], outputs: [9] },
    ],
    inputIndexes: [0, 8],
    outputIndexes: options.secondOutput ? [6, 9] : [9],
  }));
}

const INPUTS = [
  { data: seededFloats(768, 2, 8), shape: SHAPE },
  { data: seededFloats(768, 3, 8), shape: SHAPE },
];

/** Runs `model` as planned and on the reference kernels alone; their outputs must be equal. */
function runBoth(model: ReturnType<typeof chainModel>) {
  const prepared = prepareModel(model, OPTIONS);
  ok(prepared.steps.every((s) => s.device === "cpu-simd"), "cpu-simd runs every step");
  const reference = prepareModel(model, OPTIONS, prepared.steps.map(() => "cpu-reference"));
  strictEqual(reference.steps.some((s) => s.chain), false, "the reference device fuses nothing");
  const before = chainPassCount();
  const got = new Executable(prepared).run(INPUTS).map((t) => t.data);
  const chains = prepared.steps.filter((s) => s.chain).length;
  strictEqual(chainPassCount() - before, chains, "each fused chain ran as one pass");
  const want = new Executable(reference).run(INPUTS).map((t) => t.data);
  deepStrictEqual(got, want, "the fused plan's outputs equal the reference's bit for bit");
  return prepared.steps.map((s) => s.chain);
}

Deno.test("an element-wise chain is fused at preparation and runs with the bits of its steps", () => {
  deepStrictEqual(runBoth(chainModel()), [4, undefined, undefined, undefined]);
});

Deno.test("a chain stops at an intermediate that is a model output or read twice", () => {
  deepStrictEqual(runBoth(chainModel({ secondOutput: true })), [2, undefined, 2, undefined]);
  deepStrictEqual(runBoth(chainModel({ squared: true })), [undefined, 3, undefined, undefined]);
});

/**
 * A squeeze-excitation tail: `out = r + x * logistic(s)`, the gate a computed row that dies
 * before the output is first written, so the arena gives the gate the output's offset.
 */
function gateModel() {
  return buildModel(ModelSchema.parse({
    operands: [
      tensor(SHAPE, "MODEL_INPUT"), // 0: x
      tensor([1, 1, 1, 12], "MODEL_INPUT"), // 1: s
      tensor([1, 1, 1, 12], "TEMPORARY_VARIABLE"), // 2: gate
      scalar(0), // 3
      tensor(SHAPE, "TEMPORARY_VARIABLE"), // 4: x * gate
      tensor(SHAPE, "MODEL_INPUT"), // 5: r
      tensor(SHAPE, "MODEL_OUTPUT"), // 6: out
    ],
    operations: [
      { type: "LOGISTIC", inputs: [1], outputs: [2] },
      { type: "MUL", inputs: [0, 2, 3], outputs: [4] },
      { type: "ADD", inputs: [5, 4, 3], outputs: [6] },
    ],
    inputIndexes: [0, 1, 5],
    outputIndexes: [6],
  }));
}

Deno.test("a chain whose broadcast row shares the output's bytes is not fused", () => {
  const model = gateModel();
  const placement = ["cpu-reference", "cpu-simd", "cpu-simd"];
  const prepared = prepareModel(model, OPTIONS, placement);
  strictEqual(
    prepared.arena!.offsets[2],
    prepared.arena!.offsets[6],
    "the gate has the output's offset",
  );
  const inputs = [
    { data: seededFloats(768, 2, 8), shape: SHAPE },
    { data: seededFloats(12, 4, 8), shape: [1, 1, 1, 12] },
    { data: seededFloats(768, 3, 8), shape: SHAPE },
  ];
  const reference = prepareModel(model, OPTIONS, placement.map(() => "cpu-reference"));
  deepStrictEqual(
    new Executable(prepared).run(inputs).map((t) => t.data),
    new Executable(reference).run(inputs).map((t) => t.data),
    "the planned outputs equal the reference's",
  );
  deepStrictEqual(prepared.steps.map((s) => s.chain), [undefined, undefined, undefined]);
});
