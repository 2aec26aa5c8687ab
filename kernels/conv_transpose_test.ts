import { deepStrictEqual } from "node:assert/strict";
import { transposeConv2dFloat, transposeConv2dQuantized } from "./conv_transpose.ts";

const base = {
  batches: 1,
  inHeight: 1,
  inWidth: 2,
  inDepth: 1,
  outDepth: 1,
  filterHeight: 1,
  filterWidth: 3,
  strideHeight: 1,
  strideWidth: 2,
  padTop: 0,
  padLeft: 0,
};
const noClamp = { min: -Infinity, max: Infinity };

Deno.test("transposeConv2dFloat() scatters each input through the filter at its stride", () => {
  // Width 2 * (2 - 1) + 3 = 5; the two windows overlap at column 2.
  const out = new Float32Array(5);
  transposeConv2dFloat(
    { ...base, outHeight: 1, outWidth: 5 },
    [1, 10],
    [1, 2, 3],
    [0.5],
    noClamp,
    out,
  );
  deepStrictEqual(Array.from(out), [1.5, 2.5, 13.5, 20.5, 30.5]);
});

Deno.test("transposeConv2dFloat() drops taps that the padding cuts off", () => {
  const out = new Float32Array(3);
  const g = { ...base, outHeight: 1, outWidth: 3, padLeft: 1 };
  transposeConv2dFloat(g, [1, 10], [1, 2, 3], [0], { min: 0, max: 25 }, out);
  deepStrictEqual(Array.from(out), [2, 13, 20]);
});

Deno.test("transposeConv2dQuantized() applies offsets, bias and the output stage", () => {
  const out = new Uint8Array(5);
  const stage = {
    inputOffset: -1,
    filterOffset: 0,
    outputOffset: 3,
    multipliers: Int32Array.from([2 ** 30]),
    shifts: Int32Array.from([1]),
    activation: { min: 0, max: 255 },
  };
  // Inputs (2, 11) - 1 = (1, 10), multiplier 0.5 * 2 = 1, bias 1, zero point 3.
  transposeConv2dQuantized(
    { ...base, outHeight: 1, outWidth: 5 },
    [2, 11],
    [1, 2, 3],
    [1],
    stage,
    out,
  );
  deepStrictEqual(Array.from(out), [5, 6, 17, 24, 34]);
});
