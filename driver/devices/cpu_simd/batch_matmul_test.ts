import { ok, strictEqual } from "node:assert/strict";
import { seededFloats } from "../../../kernels/seeded_random.ts";
import type { Tensor } from "../../../nnapi/tensor.ts";
import { batchMatmul } from "../../../operations/batch_matmul.ts";
import { batchMatmulSimd } from "./batch_matmul.ts";

const float32 = (shape: number[], data: Float32Array): Tensor => ({
  type: "TENSOR_FLOAT32",
  shape,
  scale: 0,
  zeroPoint: 0,
  data,
});
const flag = (v: boolean): Tensor => ({
  type: "BOOL",
  shape: [],
  scale: 0,
  zeroPoint: 0,
  data: Uint8Array.of(v ? 1 : 0),
});

Deno.test("BATCH_MATMUL on cpu-simd: the GEMM kernel per slice agrees with the reference, with and without adj_y", () => {
  const cases: [number[], number, number, number, boolean][] = [
    [[2], 3, 5, 7, false],
    [[2, 3], 40, 36, 40, false], // attention's Q.K^T over 40 positions, 2 x 3 heads
    [[1, 4], 19, 19, 36, true],
    [[], 9, 16, 24, false],
  ];
  for (const [lead, m, k, n, adjY] of cases) {
    const batches = lead.reduce((x, y) => x * y, 1);
    const a = float32([...lead, m, k], seededFloats(batches * m * k, 1, 2));
    const b = float32(
      adjY ? [...lead, n, k] : [...lead, k, n],
      seededFloats(batches * k * n, 2, 2),
    );
    const inputs = [a, b, flag(false), flag(adjY)];
    const step = {
      inputs: inputs.map((t, i) => ({ ...t, value: i < 2 ? undefined : t.data })),
      outputs: [float32([...lead, m, n], new Float32Array(0))],
    };
    ok(batchMatmulSimd.supports(step));
    const kernel = batchMatmulSimd.bind(step, []);
    ok(kernel, `bound for [${lead}] ${m}x${k}x${n}`);
    const got = float32([...lead, m, n], new Float32Array(batches * m * n));
    const want = float32([...lead, m, n], new Float32Array(batches * m * n));
    kernel(inputs, [got]);
    batchMatmul.execute(inputs, [want]);
    const worst = Math.max(
      ...Array.from(got.data as Float32Array, (v, i) => Math.abs(v - (want.data![i] as number))),
    );
    ok(worst < 1e-4, `[${lead}] ${m}x${k}x${n} adj_y ${adjY}: differs by ${worst}`);
  }
  // adj_x stays on the reference kernel.
  const a = float32([2, 3], seededFloats(6, 1, 1));
  const step = {
    inputs: [a, a, flag(true), flag(false)].map((t) => ({ ...t, value: t.data })),
    outputs: [float32([3, 3], new Float32Array(0))],
  };
  strictEqual(batchMatmulSimd.bind(step, []), undefined);
});
