import { deepStrictEqual, strictEqual } from "node:assert/strict";
import {
  argMinMax,
  type Fold,
  meanFloat32,
  meanQuant8,
  reduceGeneric,
} from "./reduction_kernels.ts";
import { seededFloats } from "./seeded_random.ts";

Deno.test("reduceGeneric() folds a middle axis in row-major order", () => {
  // shape [2, 3, 2], reduce axis 1: out[b, c] = sum over h.
  const input = Float32Array.from({ length: 12 }, (_, i) => i);
  const out = new Float32Array(4);
  reduceGeneric(input, { shape: [2, 3, 2], reduced: [false, true, false] }, out, {
    init: 0,
    fold: "sum",
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

/** The fold as a function, for the element-by-element walk below. */
const COMBINE: Record<Fold, (acc: number, x: number) => number> = {
  sum: (a, x) => a + x,
  product: (a, x) => a * x,
  min: (a, x) => (x < a ? x : a),
  max: (a, x) => (x > a ? x : a),
  any: (a, x) => (a || x ? 1 : 0),
  all: (a, x) => (a && x ? 1 : 0),
};

/** The reference walk: each input element in row-major order folded into its output. */
function walkReduce(
  input: Float32Array,
  shape: number[],
  reduced: boolean[],
  fold: Fold,
  init: number,
) {
  const outShape = shape.filter((_, d) => !reduced[d]);
  const out = new Float32Array(outShape.reduce((a, b) => a * b, 1)).fill(init);
  const position = shape.map(() => 0);
  for (let i = 0; i < input.length; i++) {
    let o = 0;
    shape.forEach((extent, d) => {
      if (!reduced[d]) o = o * extent + position[d];
    });
    out[o] = COMBINE[fold](out[o], input[i]);
    for (let d = shape.length - 1; d >= 0; d--) {
      if (++position[d] < shape[d]) break;
      position[d] = 0;
    }
  }
  return out;
}

Deno.test("reduceGeneric() folds in the row-major order of the element walk, bit for bit: every fold, contiguous and scattered axes", () => {
  const cases: [number[], boolean[]][] = [
    [[2, 5, 7, 12], [false, true, true, false]], // NHWC global average pool
    [[3, 4, 6], [true, false, false]],
    [[3, 4, 6], [false, false, true]], // a run per output (inner 1)
    [[2, 3, 4, 5], [false, true, true, true]],
    [[2, 3, 4, 5], [true, true, true, true]],
    [[2, 3, 4, 5], [true, false, true, false]], // not contiguous: the index walk
  ];
  const folds: [Fold, number][] = [
    ["sum", 0],
    ["product", 1],
    ["min", 3.4e38],
    ["max", -3.4e38],
    ["any", 0],
    ["all", 1],
  ];
  for (const [shape, reduced] of cases) {
    const count = shape.reduce((a, b) => a * b, 1);
    const input = seededFloats(count, 3, 200);
    // Some zeros, so any/all see both answers.
    for (let i = 0; i < count; i += 7) input[i] = 0;
    for (const [fold, init] of folds) {
      const expected = walkReduce(
        fold === "product" ? input.map((v) => 1 + v / 1000) : input,
        shape,
        reduced,
        fold,
        init,
      );
      const out = new Float32Array(expected.length);
      reduceGeneric(
        fold === "product" ? input.map((v) => 1 + v / 1000) : input,
        { shape, reduced },
        out,
        { init, fold },
      );
      for (let o = 0; o < out.length; o++) {
        strictEqual(Object.is(out[o], expected[o]), true, `${fold} [${shape}] ${reduced} at ${o}`);
      }
    }
  }
});
