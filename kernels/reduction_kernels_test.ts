import { deepStrictEqual } from "node:assert/strict";
import { argMinMax, meanFloat32, meanQuant8, reduceGeneric } from "./reduction_kernels.ts";

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
