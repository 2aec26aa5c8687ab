import { deepStrictEqual } from "node:assert/strict";
import type { ImageDims } from "./image_layout.ts";
import { depthToSpace, spaceToDepth } from "./shape_depth_space.ts";

/** NHWC -> NCHW transposition of an image. */
function toNchw(data: ArrayLike<number>, d: ImageDims): number[] {
  const out: number[] = [];
  for (let b = 0; b < d.batches; b++) {
    for (let c = 0; c < d.depth; c++) {
      for (let y = 0; y < d.height; y++) {
        for (let x = 0; x < d.width; x++) {
          out.push(data[((b * d.height + y) * d.width + x) * d.depth + c]);
        }
      }
    }
  }
  return out;
}

// CTS depth_to_space_float_3 / space_to_depth_float_3: [1,2,2,8] <-> [1,4,4,2].
const DEEP = [
  10,
  20,
  11,
  21,
  14,
  24,
  15,
  25,
  12,
  22,
  13,
  23,
  16,
  26,
  17,
  27,
  18,
  28,
  19,
  29,
  112,
  212,
  113,
  213,
  110,
  210,
  111,
  211,
  114,
  214,
  115,
  215,
];
const WIDE = [
  10,
  20,
  11,
  21,
  12,
  22,
  13,
  23,
  14,
  24,
  15,
  25,
  16,
  26,
  17,
  27,
  18,
  28,
  19,
  29,
  110,
  210,
  111,
  211,
  112,
  212,
  113,
  213,
  114,
  214,
  115,
  215,
];
const DEEP_DIMS = { batches: 1, height: 2, width: 2, depth: 8 };
const WIDE_DIMS = { batches: 1, height: 4, width: 4, depth: 2 };

Deno.test("depthToSpace() moves depth blocks into space (CTS depth_to_space_float_3)", () => {
  const out = new Float32Array(32);
  depthToSpace(DEEP, DEEP_DIMS, 2, false, out);
  deepStrictEqual(Array.from(out), WIDE);
});

Deno.test("spaceToDepth() moves space blocks into depth (CTS space_to_depth_float_3)", () => {
  const out = new Float32Array(32);
  spaceToDepth(WIDE, WIDE_DIMS, 2, false, out);
  deepStrictEqual(Array.from(out), DEEP);
});

Deno.test("depthToSpace() and spaceToDepth() on NCHW data equal the transposed NHWC results", () => {
  const d2s = new Uint8Array(32);
  depthToSpace(toNchw(DEEP, DEEP_DIMS), DEEP_DIMS, 2, true, d2s);
  deepStrictEqual(Array.from(d2s), toNchw(WIDE, WIDE_DIMS));
  const s2d = new Uint8Array(32);
  spaceToDepth(toNchw(WIDE, WIDE_DIMS), WIDE_DIMS, 2, true, s2d);
  deepStrictEqual(Array.from(s2d), toNchw(DEEP, DEEP_DIMS));
});

Deno.test("spaceToDepth() inverts depthToSpace() for block size 3 and two batches", () => {
  const dims = { batches: 2, height: 2, width: 1, depth: 18 };
  const input = Array.from({ length: 72 }, (_, i) => i);
  const wide = new Int32Array(72);
  depthToSpace(input, dims, 3, false, wide);
  const back = new Int32Array(72);
  spaceToDepth(wide, { batches: 2, height: 6, width: 3, depth: 2 }, 3, false, back);
  deepStrictEqual(Array.from(back), input);
});
