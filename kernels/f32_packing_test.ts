import { deepStrictEqual } from "node:assert/strict";
import {
  packDepthwiseWeights,
  packGemmWeights,
  unpackDepthwiseWeights,
  unpackGemmWeights,
} from "./f32_packing.ts";

function seeded(n: number, seed: number): Float32Array {
  let s = seed;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return (s >>> 8) / 2 ** 24 - 0.5;
  });
}

Deno.test("unpackGemmWeights() inverts packGemmWeights() at tile-1, tile, tile+1 and odd shapes", () => {
  for (const [channels, depth] of [[7, 3], [8, 5], [9, 1], [16, 27], [13, 4]]) {
    const weights = seeded(channels * depth, channels);
    const bias = seeded(channels, depth);
    const packed = packGemmWeights(weights, bias, { channels, depth });
    deepStrictEqual(unpackGemmWeights(packed, { channels, depth }), { weights, bias });
  }
});

Deno.test("unpackDepthwiseWeights() inverts packDepthwiseWeights()", () => {
  for (const [channels, taps] of [[7, 9], [8, 9], [9, 4], [16, 1], [13, 25]]) {
    const weights = seeded(channels * taps, channels);
    const bias = seeded(channels, taps);
    const packed = packDepthwiseWeights(weights, bias, { channels, taps });
    deepStrictEqual(unpackDepthwiseWeights(packed, { channels, taps }), { weights, bias });
  }
});
