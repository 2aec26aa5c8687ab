import { deepStrictEqual, ok } from "node:assert/strict";
import { resizeBilinear } from "./resize_bilinear.ts";

const row = (width: number) => ({ batches: 1, height: 1, width, depth: 1 });

Deno.test("resizeBilinear() upsamples 2x2 to 3x3 like the CTS resize_bilinear_2 case", () => {
  const out = new Float32Array(18);
  resizeBilinear([3, 4, 6, 10, 9, 10, 12, 16], out, {
    dims: { batches: 1, height: 2, width: 2, depth: 2 },
    outHeight: 3,
    outWidth: 3,
    nchw: false,
    quantized: false,
  });
  const expected = [3, 4, 5, 8, 6, 10, 7, 8, 9, 12, 10, 14, 9, 10, 11, 14, 12, 16];
  expected.forEach((e, i) => ok(Math.abs(out[i] - e) <= 1e-5, `value ${i}: ${out[i]} vs ${e}`));
});

Deno.test("resizeBilinear() computes in float32 (CTS resize_bilinear 5/3 rows)", () => {
  const out = new Float32Array(9);
  resizeBilinear([1, 1, 2, 2], out, {
    dims: { batches: 1, height: 2, width: 2, depth: 1 },
    outHeight: 3,
    outWidth: 3,
    nchw: false,
    quantized: false,
  });
  const third = Math.fround(1 + Math.fround(Math.fround(2 / 3) * 1));
  deepStrictEqual(Array.from(out), [1, 1, 1, third, third, third, 2, 2, 2]);
});

Deno.test("resizeBilinear() truncates quantized results toward zero", () => {
  const out = new Uint8Array(3);
  // x positions 0, 2/3, 4/3 over [0, 10]: 0, 6.67, 10.
  resizeBilinear([0, 10], out, {
    dims: row(2),
    outHeight: 1,
    outWidth: 3,
    nchw: false,
    quantized: true,
  });
  deepStrictEqual(Array.from(out), [0, 6, 10]);
});

Deno.test("resizeBilinear() on NCHW data matches NHWC channel by channel", () => {
  const nhwc = new Float32Array(18);
  const nchw = new Float32Array(18);
  const dims = { batches: 1, height: 2, width: 2, depth: 2 };
  const geometry = { dims, outHeight: 3, outWidth: 3, quantized: false };
  resizeBilinear([3, 4, 6, 10, 9, 10, 12, 16], nhwc, { ...geometry, nchw: false });
  resizeBilinear([3, 6, 9, 12, 4, 10, 10, 16], nchw, { ...geometry, nchw: true });
  const transposed = [0, 1].flatMap((c) => Array.from({ length: 9 }, (_, p) => nhwc[p * 2 + c]));
  deepStrictEqual(Array.from(nchw), transposed);
});

Deno.test("resizeBilinear() with align_corners keeps the corner pixels", () => {
  // 3 -> 5 with scale (3-1)/(5-1) = 0.5: positions 0, 0.5, 1, 1.5, 2.
  const out = new Float32Array(5);
  resizeBilinear([0, 10, 40], out, {
    dims: row(3),
    outHeight: 1,
    outWidth: 5,
    nchw: false,
    quantized: false,
    alignCorners: true,
  });
  deepStrictEqual(Array.from(out), [0, 5, 10, 25, 40]);
});

Deno.test("resizeBilinear() with half_pixel_centers clamps coordinates outside the image", () => {
  // 2 -> 4 with scale 0.5: positions (o + 0.5) * 0.5 - 0.5 = -0.25, 0.25, 0.75, 1.25; the
  // first reads pixel 0 only (weights 1.25 and -0.25 on the same pixel), the last pixel 1.
  const out = new Float32Array(4);
  resizeBilinear([0, 8], out, {
    dims: row(2),
    outHeight: 1,
    outWidth: 4,
    nchw: false,
    quantized: false,
    halfPixelCenters: true,
  });
  deepStrictEqual(Array.from(out), [0, 2, 6, 8]);
  // One output pixel of two inputs samples the middle: position 0.5.
  const middle = new Float32Array(1);
  resizeBilinear([0, 8], middle, {
    dims: row(2),
    outHeight: 1,
    outWidth: 1,
    nchw: false,
    quantized: false,
    halfPixelCenters: true,
  });
  deepStrictEqual(Array.from(middle), [4]);
});
