import { deepStrictEqual, ok } from "node:assert/strict";
import { resizeBilinear } from "./resize_bilinear.ts";

Deno.test("resizeBilinear() upsamples 2x2 to 3x3 like the CTS resize_bilinear_2 case", () => {
  const out = new Float32Array(18);
  resizeBilinear(
    [3, 4, 6, 10, 9, 10, 12, 16],
    { batches: 1, height: 2, width: 2, depth: 2 },
    3,
    3,
    false,
    false,
    out,
  );
  const expected = [3, 4, 5, 8, 6, 10, 7, 8, 9, 12, 10, 14, 9, 10, 11, 14, 12, 16];
  expected.forEach((e, i) => ok(Math.abs(out[i] - e) <= 1e-5, `value ${i}: ${out[i]} vs ${e}`));
});

Deno.test("resizeBilinear() computes in float32 (CTS resize_bilinear 5/3 rows)", () => {
  const out = new Float32Array(9);
  resizeBilinear(
    [1, 1, 2, 2],
    { batches: 1, height: 2, width: 2, depth: 1 },
    3,
    3,
    false,
    false,
    out,
  );
  const third = Math.fround(1 + Math.fround(Math.fround(2 / 3) * 1));
  deepStrictEqual(Array.from(out), [1, 1, 1, third, third, third, 2, 2, 2]);
});

Deno.test("resizeBilinear() truncates quantized results toward zero", () => {
  const out = new Uint8Array(3);
  // x positions 0, 2/3, 4/3 over [0, 10]: 0, 6.67, 10.
  resizeBilinear([0, 10], { batches: 1, height: 1, width: 2, depth: 1 }, 1, 3, false, true, out);
  deepStrictEqual(Array.from(out), [0, 6, 10]);
});

Deno.test("resizeBilinear() on NCHW data matches NHWC channel by channel", () => {
  const nhwc = new Float32Array(18);
  const nchw = new Float32Array(18);
  const dims = { batches: 1, height: 2, width: 2, depth: 2 };
  resizeBilinear([3, 4, 6, 10, 9, 10, 12, 16], dims, 3, 3, false, false, nhwc);
  resizeBilinear([3, 6, 9, 12, 4, 10, 10, 16], dims, 3, 3, true, false, nchw);
  const transposed = [0, 1].flatMap((c) => Array.from({ length: 9 }, (_, p) => nhwc[p * 2 + c]));
  deepStrictEqual(Array.from(nchw), transposed);
});
