import { deepStrictEqual, strictEqual } from "node:assert/strict";
import {
  argMinMax,
  meanFloat32,
  meanQuant8,
  reducedCount,
  reduceGeneric,
} from "./reduction_kernels.ts";
import { seededFloats } from "./seeded_random.ts";

Deno.test("reduceGeneric() folds a middle axis in row-major order", () => {
  // shape [2, 3, 2], reduce axis 1: out[b, c] = sum over h.
  const input = Float32Array.from({ length: 12 }, (_, i) => i);
  const out = new Float32Array(4);
  reduceGeneric(input, { shape: [2, 3, 2], reduced: [false, true, false] }, out, {
    init: 0,
    combine: (a, x) => a + x,
  });
  deepStrictEqual([...out], [6, 9, 24, 27]);
});

Deno.test("meanFloat32() and meanQuant8() average over several axes", () => {
  const plan = { shape: [2, 2], reduced: [true, true] };
  const f = new Float32Array(1);
  meanFloat32(Float32Array.of(1, 2, 3, 5), plan, f);
  deepStrictEqual([...f], [2.75]);
  const q = new Uint8Array(1);
  meanQuant8(Uint8Array.of(1, 2, 3, 5), plan, q);
  deepStrictEqual([...q], [2]);
});

Deno.test("argMinMax() returns the first extreme along the axis", () => {
  const out = new Int32Array(2);
  argMinMax(Float32Array.of(1, 3, 3, 0, 0, -1), { outer: 2, axis: 3, inner: 1 }, true, out);
  deepStrictEqual([...out], [1, 0]);
});

Deno.test("meanFloat32() over contiguous axes sums in the row-major order of the generic walk, bit for bit", () => {
  const cases: [number[], boolean[]][] = [
    [[2, 5, 7, 12], [false, true, true, false]], // NHWC global average pool
    [[3, 4, 6], [true, false, false]],
    [[3, 4, 6], [false, false, true]],
    [[2, 3, 4, 5], [false, true, true, true]],
  ];
  for (const [shape, reduced] of cases) {
    const input = seededFloats(shape.reduce((a, b) => a * b, 1), 3, 200);
    const plan = { shape, reduced };
    const count = shape.reduce((n, d, i) => reduced[i] ? n : n * d, 1);
    const fast = new Float32Array(count);
    meanFloat32(input, plan, fast);
    const generic = new Float32Array(count);
    reduceGeneric(input, plan, generic, { init: 0, combine: (a, x) => a + x });
    const n = Math.fround(reducedCount(plan));
    for (let o = 0; o < count; o++) {
      strictEqual(Object.is(fast[o], Math.fround(generic[o] / n)), true, `[${shape}] ${o}`);
    }
  }
});
