import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { concatenate, requantizeUint8 } from "./shape_concatenation.ts";

Deno.test("concatenate() joins along the last axis row by row (CTS concat_quant8_1)", () => {
  const out = new Uint8Array(12);
  concatenate(
    [
      { data: [1, 2, 3, 4, 5, 6], shape: [2, 3] },
      { data: [7, 8, 9, 10, 11, 12], shape: [2, 3] },
    ],
    1,
    out,
  );
  deepStrictEqual(Array.from(out), [1, 2, 3, 7, 8, 9, 4, 5, 6, 10, 11, 12]);
});

Deno.test("concatenate() joins along the first axis by appending whole tensors", () => {
  const out = new Float32Array(9);
  concatenate(
    [
      { data: [1, 2, 3], shape: [1, 3] },
      { data: [4, 5, 6, 7, 8, 9], shape: [2, 3] },
    ],
    0,
    out,
  );
  deepStrictEqual(Array.from(out), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
});

Deno.test("concatenate() applies each part's conversion", () => {
  const out = new Int32Array(4);
  concatenate(
    [
      { data: [1, 2], shape: [2] },
      { data: [3, 4], shape: [2] },
    ],
    0,
    out,
    [undefined, (v) => v * 10],
  );
  deepStrictEqual(Array.from(out), [1, 2, 30, 40]);
});

Deno.test("requantizeUint8() copies equal quantizations and rescales others with rounding", () => {
  strictEqual(requantizeUint8(0.5, 3, 0.5, 3), undefined);
  const map = requantizeUint8(0.084, 127, 0.1, 127)!;
  // (q - 127) * 0.84 + 127, rounded half away from zero, clamped.
  deepStrictEqual([0, 127, 128, 255].map(map), [20, 127, 128, 235]);
  const widen = requantizeUint8(1, 0, 0.25, 10)!;
  deepStrictEqual([0, 1, 60, 61].map(widen), [10, 14, 250, 254]);
  strictEqual(widen(62), 255);
});
