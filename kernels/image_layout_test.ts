import { deepStrictEqual } from "node:assert/strict";
import { imageIndex, nchwToNhwc, nhwcToNchw } from "./image_layout.ts";

Deno.test("nchwToNhwc() moves channels last and nhwcToNchw() moves them back", () => {
  // 2 batches, 3 channels, 2x2 planes: element (b, c, y, x) holds 1000b + 100c + 10y + x.
  const dims = { batches: 2, height: 2, width: 2, depth: 3 };
  const nchw = new Float32Array(24);
  const nhwc = new Float32Array(24);
  const atNchw = imageIndex(dims, true);
  const atNhwc = imageIndex(dims, false);
  for (let b = 0; b < 2; b++) {
    for (let c = 0; c < 3; c++) {
      for (let y = 0; y < 2; y++) {
        for (let x = 0; x < 2; x++) nchw[atNchw(b, y, x, c)] = 1000 * b + 100 * c + 10 * y + x;
      }
    }
  }
  nchwToNhwc(nchw, nhwc, 2, 3, 2, 2);
  deepStrictEqual([nhwc[atNhwc(1, 1, 0, 2)], nhwc[atNhwc(0, 0, 1, 1)]], [1210, 101]);
  const back = new Float32Array(24);
  nhwcToNchw(nhwc, back, 2, 3, 2, 2);
  deepStrictEqual([...back], [...nchw]);
});
