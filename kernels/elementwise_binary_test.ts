import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import {
  addFloat32,
  addQuant8,
  addQuant8Params,
  broadcastShape,
  forEachBroadcastRow,
  mulFloat32,
  mulQuant8,
  mulQuant8Params,
} from "./elementwise_binary.ts";

Deno.test("broadcastShape() aligns trailing dimensions and rejects mismatches", () => {
  deepStrictEqual(broadcastShape([2, 1, 3], [4, 1]), [2, 4, 3]);
  deepStrictEqual(broadcastShape([5], [2, 3, 1]), [2, 3, 5]);
  deepStrictEqual(broadcastShape([0, 2], [1, 2]), [0, 2]);
  strictEqual(broadcastShape([2, 3], [3, 2]), null);
});

Deno.test("forEachBroadcastRow() visits equal shapes as one row", () => {
  const rows: number[][] = [];
  forEachBroadcastRow([2, 3], [2, 3], [2, 3], (...args) => rows.push(args));
  deepStrictEqual(rows, [[0, 1, 0, 1, 0, 6]]);
});

Deno.test("addFloat32() broadcasts a row over a matrix and a column over it", () => {
  const out = new Float32Array(6);
  const a = Float32Array.of(1, 2, 3);
  const b = Float32Array.of(10, 20);
  addFloat32(a, [1, 3], b, [2, 1], out, [2, 3], -Infinity, Infinity);
  deepStrictEqual([...out], [11, 12, 13, 21, 22, 23]);
});

Deno.test("mulFloat32() clamps to the fused activation range", () => {
  const out = new Float32Array(4);
  mulFloat32(Float32Array.of(-2, 1, 3, 4), [4], Float32Array.of(2), [1], out, [4], 0, 6);
  deepStrictEqual([...out], [0, 2, 6, 6]);
});

Deno.test("addQuant8() reproduces the add_broadcast_quant8 CTS case", () => {
  const params = addQuant8Params(
    { scale: 2, zeroPoint: 0 },
    { scale: 1, zeroPoint: 0 },
    { scale: 1, zeroPoint: 0 },
  )!;
  const out = new Uint8Array(4);
  addQuant8(
    Uint8Array.of(1, 2),
    [1, 2],
    Uint8Array.of(1, 2, 3, 4),
    [2, 2],
    out,
    [2, 2],
    params,
    0,
    255,
  );
  deepStrictEqual([...out], [3, 6, 5, 8]);
});

Deno.test("addQuant8() matches TFLite bit for bit on mixed zero points", () => {
  // Golden values from TFLite's BroadcastAdd4DSlow arithmetic compiled with g++.
  const params = addQuant8Params(
    { scale: 0.00839062501, zeroPoint: 94 },
    { scale: 0.261999995, zeroPoint: 209 },
    { scale: 0.796999991, zeroPoint: 22 },
  )!;
  const out = new Uint8Array(4);
  addQuant8(
    Uint8Array.of(123, 42, 39, 168),
    [4],
    Uint8Array.of(85, 209, 46, 174),
    [4],
    out,
    [4],
    params,
    0,
    255,
  );
  deepStrictEqual([...out], [0, 21, 0, 11]);
});

Deno.test("mulQuant8() reproduces mul_broadcast_quant8 and refuses multipliers >= 1", () => {
  const params = mulQuant8Params(
    { scale: 1, zeroPoint: 0 },
    { scale: 1, zeroPoint: 0 },
    { scale: 2, zeroPoint: 0 },
  )!;
  const out = new Uint8Array(4);
  mulQuant8(
    Uint8Array.of(2, 4),
    [2],
    Uint8Array.of(1, 2, 4, 8),
    [2, 2],
    out,
    [2, 2],
    params,
    0,
    255,
  );
  deepStrictEqual([...out], [1, 4, 4, 16]);
  ok(
    mulQuant8Params({ scale: 1, zeroPoint: 0 }, { scale: 2, zeroPoint: 0 }, {
      scale: 2,
      zeroPoint: 0,
    }) === null,
  );
});
