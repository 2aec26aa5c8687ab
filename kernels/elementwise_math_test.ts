import { deepStrictEqual, strictEqual } from "node:assert/strict";
import {
  castElements,
  logicalAndBool8,
  quantizeUint8,
  requantizeUint8,
  rsqrtFloat32,
} from "./elementwise_math.ts";

Deno.test("requantizeUint8() rounds halves away from zero and saturates to [0, 255]", () => {
  strictEqual(
    requantizeUint8(129, { scale: 1.5, zeroPoint: 129 }, { scale: 1, zeroPoint: 128 }),
    128,
  );
  strictEqual(requantizeUint8(131, { scale: 0.25, zeroPoint: 129 }, { scale: 1, zeroPoint: 0 }), 1);
  strictEqual(requantizeUint8(0, { scale: 2, zeroPoint: 100 }, { scale: 1, zeroPoint: 0 }), 0);
  strictEqual(requantizeUint8(255, { scale: 2, zeroPoint: 0 }, { scale: 1, zeroPoint: 0 }), 255);
});

Deno.test("quantizeUint8() maps NaN to 255 as std::max(0, std::min(255, q)) does", () => {
  const out = new Uint8Array(3);
  quantizeUint8(new Float32Array([NaN, 1.5, -1.5]), 1, 1, out);
  deepStrictEqual([...out], [255, 3, 0]);
});

Deno.test("castElements() truncates toward zero into integers", () => {
  const out = new Int32Array(3);
  castElements(new Float32Array([-2.9, 2.9, 0.1]), out, { truncate: true, saturateUint8: false });
  deepStrictEqual([...out], [-2, 2, 0]);
});

Deno.test("logicalAndBool8() broadcasts a row against a column", () => {
  const out = new Uint8Array(4);
  logicalAndBool8(new Uint8Array([1, 0]), [2, 1], new Uint8Array([1, 3]), [2], out, [2, 2]);
  deepStrictEqual([...out], [1, 1, 0, 0]);
});

Deno.test("rsqrtFloat32() gives +inf at 0 and NaN below it", () => {
  const out = new Float32Array(3);
  rsqrtFloat32(new Float32Array([0, -1, 4]), out);
  deepStrictEqual([...out], [Infinity, NaN, 0.5]);
});
