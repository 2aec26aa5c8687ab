import { deepStrictEqual } from "node:assert/strict";
import {
  batchToSpace,
  channelShuffle,
  gather,
  pad,
  spaceToBatch,
  stridedSlice,
  tile,
  transpose,
} from "./shape_transform.ts";

Deno.test("pad() surrounds the input with the pad value", () => {
  const out = new Float32Array(12);
  pad(Float32Array.of(1, 2), [1, 2], [1, 1], 9, out, [3, 4]);
  deepStrictEqual(Array.from(out), [9, 9, 9, 9, 9, 1, 2, 9, 9, 9, 9, 9]);
});

Deno.test("transpose() moves input dim perm[k] to output dim k", () => {
  const out = new Int32Array(6);
  transpose(Int32Array.of(1, 2, 3, 4, 5, 6), [2, 3], [1, 0], out);
  deepStrictEqual(Array.from(out), [1, 4, 2, 5, 3, 6]);
});

Deno.test("stridedSlice() steps forwards and backwards", () => {
  const out = new Uint8Array(2);
  stridedSlice(Uint8Array.of(0, 1, 2, 3, 4), [5], { begin: [4], step: [-3], counts: [2] }, out);
  deepStrictEqual(Array.from(out), [4, 1]);
});

Deno.test("gather() and tile() repeat slices", () => {
  const gathered = new Float32Array(4);
  gather(
    Float32Array.of(1, 2, 3, 4),
    { outer: 1, axis: 2, inner: 2 },
    Int32Array.of(1, 1),
    gathered,
  );
  deepStrictEqual(Array.from(gathered), [3, 4, 3, 4]);
  const tiled = new Float32Array(8);
  tile(Float32Array.of(1, 2), [1, 2], [2, 2], tiled);
  deepStrictEqual(Array.from(tiled), [1, 2, 1, 2, 1, 2, 1, 2]);
});

Deno.test("batchToSpace() inverts spaceToBatch() without padding", () => {
  const input = Float32Array.from({ length: 2 * 4 * 6 * 3 }, (_, i) => i);
  const dims = { batches: 2, height: 4, width: 6, depth: 3 };
  const batched = new Float32Array(input.length);
  spaceToBatch(input, dims, [2, 3], [0, 0, 0, 0], 0, batched);
  const back = new Float32Array(input.length);
  batchToSpace(batched, { batches: 12, height: 2, width: 2, depth: 3 }, [2, 3], back);
  deepStrictEqual(back, input);
});

Deno.test("channelShuffle() interleaves the groups", () => {
  const out = new Float32Array(6);
  channelShuffle(Float32Array.of(0, 1, 2, 3, 4, 5), { outer: 1, axis: 6, inner: 1 }, 2, out);
  deepStrictEqual(Array.from(out), [0, 3, 1, 4, 2, 5]);
});
