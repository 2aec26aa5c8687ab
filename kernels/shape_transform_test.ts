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

Deno.test("transpose() of every permutation of ranks 1-4 (whichever dimension the walk puts innermost) moves each element where the permutation says", () => {
  const permutations = (n: number): number[][] =>
    n === 0
      ? [[]]
      : permutations(n - 1).flatMap((p) =>
        Array.from({ length: n }, (_, at) => [...p.slice(0, at), n - 1, ...p.slice(at)])
      );
  for (const shape of [[7], [3, 5], [2, 7, 3], [2, 3, 224, 5], [1, 3, 4, 6]]) {
    const count = shape.reduce((a, b) => a * b, 1);
    const input = Int32Array.from({ length: count }, (_, i) => i);
    for (const perm of permutations(shape.length)) {
      const out = new Int32Array(count);
      transpose(input, shape, perm, out);
      const outShape = perm.map((p) => shape[p]);
      // Output element k's coordinates, mapped back to the input's.
      for (let k = 0; k < count; k++) {
        const at = new Array<number>(shape.length);
        for (let d = outShape.length - 1, rest = k; d >= 0; d--) {
          at[perm[d]] = rest % outShape[d];
          rest = Math.floor(rest / outShape[d]);
        }
        const from = at.reduce((index, c, d) => index * shape[d] + c, 0);
        if (out[k] !== from) throw new Error(`[${shape}] perm [${perm}] at ${k}: ${out[k]}`);
      }
    }
  }
});
