import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { realmHeap } from "../../kernels/wasm_heap.ts";
import type { StepTiming } from "../compilation/plan.ts";
import { prepareModel } from "../compilation/prepare.ts";
import { buildModel } from "../model/model.ts";
import { ModelSchema } from "../model/model_schema.ts";
import { Executable } from "./executable.ts";
import { MAX_SHAPE_BINDINGS } from "./shape_bindings.ts";

const options = { preference: "FAST_SINGLE_ANSWER", priority: "MEDIUM" } as const;

const i32 = (v: number) => ({
  type: "INT32",
  dimensions: [],
  lifetime: "CONSTANT_COPY",
  value: [v],
});

/**
 * A [N, H, W, 3] input (every extent known only at execution), a 3x3x3→8 convolution
 * (SAME), then ADD of a [N, H, W, 1] second input, broadcast over the channels: cpu-simd's
 * element-wise kernel takes that form only where the second input is one value (N=H=W=1).
 */
function dynamicModel() {
  const filter = Array.from({ length: 8 * 27 }, (_, i) => Math.fround(((i * 7) % 11 - 5) / 16));
  return buildModel(ModelSchema.parse({
    operands: [
      { type: "TENSOR_FLOAT32", dimensions: [0, 0, 0, 3], lifetime: "MODEL_INPUT" },
      {
        type: "TENSOR_FLOAT32",
        dimensions: [8, 3, 3, 3],
        lifetime: "CONSTANT_REFERENCE",
        value: filter,
      },
      {
        type: "TENSOR_FLOAT32",
        dimensions: [8],
        lifetime: "CONSTANT_REFERENCE",
        value: Array(8).fill(0.25),
      },
      i32(1),
      i32(1),
      i32(1),
      i32(0),
      { type: "TENSOR_FLOAT32", dimensions: [0, 0, 0, 8], lifetime: "TEMPORARY_VARIABLE" },
      { type: "TENSOR_FLOAT32", dimensions: [0, 0, 0, 1], lifetime: "MODEL_INPUT" },
      i32(0),
      { type: "TENSOR_FLOAT32", dimensions: [0, 0, 0, 8], lifetime: "MODEL_OUTPUT" },
    ],
    operations: [
      { type: "CONV_2D", inputs: [0, 1, 2, 3, 4, 5, 6], outputs: [7] },
      { type: "ADD", inputs: [7, 8, 9], outputs: [10] },
    ],
    inputIndexes: [0, 8],
    outputIndexes: [10],
  }));
}

/** Seeded inputs of batch n and size h x w. */
function inputs(n: number, h: number, w: number) {
  const image = Float32Array.from({ length: n * h * w * 3 }, (_, i) => Math.sin(i));
  const plane = Float32Array.from({ length: n * h * w }, (_, i) => Math.cos(i));
  return [{ data: image, shape: [n, h, w, 3] }, { data: plane, shape: [n, h, w, 1] }];
}

Deno.test("extents known only at execution: cpu-simd binds per shape and agrees with the reference", () => {
  const model = dynamicModel();
  const prepared = prepareModel(model, options);
  deepStrictEqual(prepared.steps.map((s) => s.device), ["cpu-simd", "cpu-simd"]);
  strictEqual(prepared.arena, undefined);
  const simd = new Executable(prepared);
  const reference = new Executable(
    prepareModel(model, options, ["cpu-reference", "cpu-reference"]),
  );
  for (const [n, h, w] of [[1, 5, 7], [2, 4, 4], [1, 5, 7], [1, 1, 1]]) {
    const timing: StepTiming[] = [];
    const [got] = simd.run(inputs(n, h, w), { timing });
    const [want] = reference.run(inputs(n, h, w));
    deepStrictEqual(got.shape, [n, h, w, 8]);
    const worst = Math.max(
      ...Array.from(got.data as Float32Array, (v, i) => Math.abs(v - want.data[i] as number)),
    );
    ok(worst < 1e-5, `${n}x${h}x${w}: differs by ${worst}`);
    // The convolution runs on cpu-simd's kernel; the broadcast ADD only where its second
    // input is one value, and the step says when it fell back.
    strictEqual(timing[0].device, "cpu-simd");
    const add = timing[timing.length - 1];
    if (n * h * w === 1) deepStrictEqual([add.device, add.fallback], ["cpu-simd", undefined]);
    else {
      deepStrictEqual(
        [add.device, add.fallback],
        ["cpu-reference", "cpu-simd has no kernel for these shapes"],
        `${n}x${h}x${w}`,
      );
    }
  }
  strictEqual(simd.shapeSignatures, 3);
});

Deno.test("per-shape bindings are bounded: many distinct shapes keep at most MAX_SHAPE_BINDINGS, and their arenas go back to the heap", () => {
  const executable = new Executable(prepareModel(dynamicModel(), options));
  const heap = realmHeap();
  const run = (side: number) => executable.run(inputs(1, side, side));
  for (let side = 2; side < 2 + MAX_SHAPE_BINDINGS; side++) run(side);
  strictEqual(executable.shapeSignatures, MAX_SHAPE_BINDINGS);
  const bytes = executable.shapeBindingBytes;
  const allocated = heap.allocatedBytes;
  // Three times as many shapes again, each a little larger than the last.
  for (let side = 2 + MAX_SHAPE_BINDINGS; side < 2 + 4 * MAX_SHAPE_BINDINGS; side++) run(side);
  strictEqual(executable.shapeSignatures, MAX_SHAPE_BINDINGS);
  // What the newest shapes hold, not what every shape seen held (about 1.7 times as much).
  const sides = Array.from(
    { length: MAX_SHAPE_BINDINGS },
    (_, k) => 1 + 4 * MAX_SHAPE_BINDINGS - k,
  );
  const expected = sides.reduce((sum, side) => sum + side * side * 8 * 4 * 2, 0);
  ok(executable.shapeBindingBytes <= expected + MAX_SHAPE_BINDINGS * 256, "arena bytes");
  ok(executable.shapeBindingBytes > bytes);
  ok(
    heap.allocatedBytes - allocated < 1.25 * expected,
    `the heap grew by ${heap.allocatedBytes - allocated} bytes for ${expected} bytes of arenas`,
  );
  executable.release();
  strictEqual(executable.shapeSignatures, 0);
});
