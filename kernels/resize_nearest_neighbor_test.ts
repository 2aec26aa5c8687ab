import { deepStrictEqual } from "node:assert/strict";
import { resizeNearestNeighbor } from "./resize_nearest_neighbor.ts";

Deno.test("resizeNearestNeighbor() upsamples 2x2 to 3x3 taking floor(y * 2/3) rows", () => {
  const out = new Float32Array(9);
  resizeNearestNeighbor(
    [1, 2, 3, 4],
    { batches: 1, height: 2, width: 2, depth: 1 },
    3,
    3,
    false,
    out,
  );
  deepStrictEqual(Array.from(out), [1, 1, 2, 1, 1, 2, 3, 3, 4]);
});

Deno.test("resizeNearestNeighbor() reads and writes NCHW planes", () => {
  const out = new Uint8Array(8);
  // Two channels of one row [a, b] widened to 4 columns.
  resizeNearestNeighbor(
    [1, 2, 5, 6],
    { batches: 1, height: 1, width: 2, depth: 2 },
    1,
    4,
    true,
    out,
  );
  deepStrictEqual(Array.from(out), [1, 1, 2, 2, 5, 5, 6, 6]);
});

Deno.test("resizeNearestNeighbor() downsamples by skipping source pixels", () => {
  const out = new Int32Array(2);
  resizeNearestNeighbor(
    [1, 2, 3, 4, 5],
    { batches: 1, height: 1, width: 5, depth: 1 },
    1,
    2,
    false,
    out,
  );
  // scale 2.5: columns 0 and floor(2.5) = 2.
  deepStrictEqual(Array.from(out), [1, 3]);
});
