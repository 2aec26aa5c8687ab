import { deepStrictEqual } from "node:assert/strict";
import { conv2dFloat } from "./conv_2d.ts";
import { groupedConv2dFloat, groupedConv2dQuantized } from "./conv_grouped.ts";
import { seededFloats } from "./seeded_random.ts";

const geometry = {
  batches: 1,
  inHeight: 3,
  inWidth: 3,
  inDepth: 4,
  outHeight: 2,
  outWidth: 2,
  outDepth: 4,
  filterHeight: 2,
  filterWidth: 2,
  strideHeight: 1,
  strideWidth: 1,
  padTop: 0,
  padLeft: 0,
  dilationHeight: 1,
  dilationWidth: 1,
};
const noClamp = { min: -Infinity, max: Infinity };

Deno.test("groupedConv2dFloat() with one group equals conv2dFloat()", () => {
  const input = seededFloats(36, 7, 1);
  const filter = seededFloats(64, 8, 1);
  const bias = Float32Array.from([1, 2, 3, 4]);
  const grouped = new Float32Array(16);
  const plain = new Float32Array(16);
  groupedConv2dFloat({ ...geometry, groups: 1 }, input, filter, bias, noClamp, grouped);
  conv2dFloat(geometry, input, filter, bias, noClamp, plain);
  deepStrictEqual(grouped, plain);
});

Deno.test("groupedConv2dFloat() convolves each output group with its input channels only", () => {
  // 1x1 filter, 2 groups of 2 channels: outputs 0,1 see channels 0,1; outputs 2,3 see 2,3.
  const g = { ...geometry, inHeight: 1, inWidth: 1, outHeight: 1, outWidth: 1 };
  const one = { ...g, filterHeight: 1, filterWidth: 1, groups: 2 };
  const out = new Float32Array(4);
  groupedConv2dFloat(one, [1, 2, 3, 4], [1, 0, 0, 1, 1, 1, 1, -1], [0, 0, 0, 0], noClamp, out);
  deepStrictEqual(Array.from(out), [1, 2, 7, -1]);
});

Deno.test("groupedConv2dQuantized() applies offsets, bias and the output stage", () => {
  const one = {
    ...geometry,
    inHeight: 1,
    inWidth: 1,
    outHeight: 1,
    outWidth: 1,
    inDepth: 2,
    outDepth: 2,
    filterHeight: 1,
    filterWidth: 1,
    groups: 2,
  };
  const out = new Uint8Array(2);
  // Multiplier 0.5 (Q31 2^30, shift 0) and output zero point 10.
  const stage = {
    inputOffset: -1,
    filterOffset: 0,
    outputOffset: 10,
    multipliers: Int32Array.from([2 ** 30, 2 ** 30]),
    shifts: Int32Array.from([0, 0]),
    activation: { min: 0, max: 255 },
  };
  groupedConv2dQuantized(one, [5, 9], [2, 3], [4, 0], stage, out);
  // ((5-1)*2 + 4) * 0.5 + 10 = 16; (9-1)*3 * 0.5 + 10 = 22.
  deepStrictEqual(Array.from(out), [16, 22]);
});
