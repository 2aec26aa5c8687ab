/**
 * Referenced subgraphs (IF branches, WHILE bodies) run on the host devices the main graph
 * uses: each step on the first host device that supports it, its weights packed there, and
 * bound per set of input shapes from the second run of that set (a first run goes step by
 * step on the reference kernels, so values that grow each iteration never pay for a binding).
 */
import { deepStrictEqual, ok } from "node:assert/strict";
import { prepareModel } from "../compilation/prepare.ts";
import { buildModel } from "../model/model.ts";
import { ModelSchema } from "../model/model_schema.ts";
import { Executable } from "./executable.ts";
import { float32Tensor, int32Scalar } from "../../tools/model_json.ts";

const options = { preference: "FAST_SINGLE_ANSWER", priority: "MEDIUM" } as const;

const W = Array.from({ length: 3 * 4 }, (_, i) => Math.fround(((i * 5) % 7 - 3) / 4));
const B = [0.5, -0.25, 1];

/** out = cond ? relu(FC(x, W, B)) : FC(x, W, B) * 2, x [N, 4] with N given at execution. */
function branchingModel() {
  const [float, int] = [float32Tensor, int32Scalar];
  const branch = (fused: number, scale?: number) => ({
    operands: [
      float([0, 4], "MODEL_INPUT"),
      float([3, 4], "CONSTANT_COPY", W),
      float([3], "CONSTANT_COPY", B),
      int(fused),
      float([0, 3], scale ? "TEMPORARY_VARIABLE" : "MODEL_OUTPUT"),
      ...(scale
        ? [float([1], "CONSTANT_COPY", [scale]), int(0), float([0, 3], "MODEL_OUTPUT")]
        : []),
    ],
    operations: [
      { type: "FULLY_CONNECTED", inputs: [0, 1, 2, 3], outputs: [4] },
      ...(scale ? [{ type: "MUL", inputs: [4, 5, 6], outputs: [7] }] : []),
    ],
    inputIndexes: [0],
    outputIndexes: [scale ? 7 : 4],
  });
  const subgraph = (k: number) => ({
    type: "SUBGRAPH",
    dimensions: [],
    lifetime: "SUBGRAPH",
    subgraph: k,
  });
  return buildModel(ModelSchema.parse({
    operands: [
      { type: "TENSOR_BOOL8", dimensions: [1], lifetime: "MODEL_INPUT" },
      subgraph(0),
      subgraph(1),
      float([0, 4], "MODEL_INPUT"),
      float([0, 3], "MODEL_OUTPUT"),
    ],
    operations: [{ type: "IF", inputs: [0, 1, 2, 3], outputs: [4] }],
    inputIndexes: [0, 3],
    outputIndexes: [4],
    referenced: [branch(1), branch(0, 2)],
  }));
}

/** The expected output, worked out here. */
function expected(cond: boolean, x: number[], n: number): number[] {
  const out: number[] = [];
  for (let r = 0; r < n; r++) {
    for (let o = 0; o < 3; o++) {
      let sum = B[o];
      for (let i = 0; i < 4; i++) sum += x[r * 4 + i] * W[o * 4 + i];
      out.push(cond ? Math.max(sum, 0) : sum * 2);
    }
  }
  return out;
}

Deno.test("IF branches run on cpu-simd, bound from the second run of a set of shapes, and agree with the reference", () => {
  const prepared = prepareModel(branchingModel(), options);
  for (const graph of prepared.referenced!) {
    const fc = graph.steps.find((step) => step.type === "FULLY_CONNECTED")!;
    deepStrictEqual(fc.device, "cpu-simd");
    ok(fc.packed && fc.packed.length > 0, "its weights are packed at preparation");
  }
  const executable = new Executable(prepared);
  for (const n of [2, 2, 2, 5, 5, 5]) {
    const x = Array.from({ length: n * 4 }, (_, i) => Math.fround(((i * 3) % 9 - 4) / 3));
    for (const cond of [true, false]) {
      const [out] = executable.run([
        { shape: [1], data: new Uint8Array([cond ? 1 : 0]) },
        { shape: [n, 4], data: Float32Array.from(x) },
      ]);
      deepStrictEqual(out.shape, [n, 3]);
      const want = expected(cond, x, n);
      Array.from(out.data as Float32Array).forEach((v, i) =>
        ok(Math.abs(v - want[i]) < 1e-5, `n=${n} cond=${cond} [${i}]: ${v} vs ${want[i]}`)
      );
    }
  }
  executable.release();
});
