import { deepStrictEqual } from "node:assert/strict";
import { resizeNearestNeighbor } from "./resize_nearest_neighbor.ts";

const row = (width: number, depth = 1) => ({ batches: 1, height: 1, width, depth });

Deno.test("resizeNearestNeighbor() upsamples 2x2 to 3x3 taking floor(y * 2/3) rows", () => {
  const out = new Float32Array(9);
  resizeNearestNeighbor([1, 2, 3, 4], out, {
    dims: { batches: 1, height: 2, width: 2, depth: 1 },
    outHeight: 3,
    outWidth: 3,
    nchw: false,
  });
  deepStrictEqual(Array.from(out), [1, 1, 2, 1, 1, 2, 3, 3, 4]);
});

Deno.test("resizeNearestNeighbor() reads and writes NCHW planes", () => {
  const out = new Uint8Array(8);
  // Two channels of one row [a, b] widened to 4 columns.
  resizeNearestNeighbor([1, 2, 5, 6], out, {
    dims: row(2, 2),
    outHeight: 1,
    outWidth: 4,
    nchw: true,
  });
  deepStrictEqual(Array.from(out), [1, 1, 2, 2, 5, 5, 6, 6]);
});

Deno.test("resizeNearestNeighbor() downsamples by skipping source pixels", () => {
  const out = new Int32Array(2);
  resizeNearestNeighbor([1, 2, 3, 4, 5], out, {
    dims: row(5),
    outHeight: 1,
    outWidth: 2,
    nchw: false,
  });
  // scale 2.5: columns 0 and floor(2.5) = 2.
  deepStrictEqual(Array.from(out), [1, 3]);
});

Deno.test("resizeNearestNeighbor() with align_corners rounds o * (in-1)/(out-1)", () => {
  // 3 -> 5: scale 0.5, positions 0, 0.5, 1, 1.5, 2 round half away from zero to 0, 1, 1, 2, 2.
  const out = new Int32Array(5);
  resizeNearestNeighbor([10, 20, 30], out, {
    dims: row(3),
    outHeight: 1,
    outWidth: 5,
    nchw: false,
    alignCorners: true,
  });
  deepStrictEqual(Array.from(out), [10, 20, 20, 30, 30]);
});

Deno.test("resizeNearestNeighbor() with half_pixel_centers floors (o + 0.5) * in/out", () => {
  // 3 -> 5: scale 0.6, positions 0.3, 0.9, 1.5, 2.1, 2.7 floor to 0, 0, 1, 2, 2.
  const out = new Int32Array(5);
  resizeNearestNeighbor([10, 20, 30], out, {
    dims: row(3),
    outHeight: 1,
    outWidth: 5,
    nchw: false,
    halfPixelCenters: true,
  });
  deepStrictEqual(Array.from(out), [10, 10, 20, 30, 30]);
  // 4 -> 2: scale 2, positions 1 and 3 (the legacy mapping reads 0 and 2).
  const down = new Int32Array(2);
  resizeNearestNeighbor([1, 2, 3, 4], down, {
    dims: row(4),
    outHeight: 1,
    outWidth: 2,
    nchw: false,
    halfPixelCenters: true,
  });
  deepStrictEqual(Array.from(down), [2, 4]);
});
