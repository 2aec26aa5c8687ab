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

Deno.test("concatenate() copies long rows as blocks and short ones element by element, the same either way", () => {
  // [2, 3, 40] ++ [2, 1, 40] along axis 1: rows of 120 and 40 elements, copied as blocks.
  const parts = [
    { data: Float32Array.from({ length: 240 }, (_, i) => i), shape: [2, 3, 40] },
    { data: Float32Array.from({ length: 80 }, (_, i) => 1000 + i), shape: [2, 1, 40] },
  ];
  const out = new Float32Array(320);
  concatenate(parts, 1, out);
  const expected: number[] = [];
  for (let b = 0; b < 2; b++) {
    expected.push(...parts[0].data.subarray(b * 120, b * 120 + 120));
    expected.push(...parts[1].data.subarray(b * 40, b * 40 + 40));
  }
  deepStrictEqual([...out], expected);
  // Float16 parts into a float32 output: element by element (set would also convert, but the
  // kinds differ, so the loop runs).
  const half = { data: Float16Array.from({ length: 80 }, (_, i) => i / 4), shape: [2, 1, 40] };
  const mixed = new Float32Array(160);
  concatenate([half, half], 1, mixed);
  deepStrictEqual([...mixed.subarray(0, 40)], [...half.data.subarray(0, 40)]);
});
