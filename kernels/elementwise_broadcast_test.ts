import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { addQuant8 } from "./elementwise_binary.ts";
import {
  addInt32,
  compareBroadcast,
  dequantizeFloat32,
  floorDivInt32,
  minMaxBroadcast,
  preluQuant8,
  preluQuant8Params,
  requantizeTable,
  subFloat32,
  subQuant8Params,
} from "./elementwise_broadcast.ts";

Deno.test("subFloat32() broadcasts a column and clamps to the activation range", () => {
  const out = new Float32Array(4);
  subFloat32(
    Float32Array.of(1, 2, 3, 4),
    [2, 2],
    Float32Array.of(1, 5),
    [2, 1],
    out,
    [2, 2],
    -1,
    1,
  );
  deepStrictEqual([...out], [0, 1, -1, -1]);
});

Deno.test("subQuant8Params() makes quantized ADD subtract, within one step of the real result", () => {
  const q1 = { scale: 0.25, zeroPoint: 100 };
  const q2 = { scale: 0.5, zeroPoint: 120 };
  const qo = { scale: 0.5, zeroPoint: 128 };
  const params = subQuant8Params(q1, q2, qo)!;
  ok(params.input2Multiplier < 0);
  const a = new Uint8Array(256).map((_, i) => i);
  const b = new Uint8Array(256).map((_, i) => 255 - i);
  const out = new Uint8Array(256);
  addQuant8(a, [256], b, [256], out, [256], params, 0, 255);
  for (let i = 0; i < 256; i++) {
    const real = (a[i] - 100) * 0.25 - (b[i] - 120) * 0.5;
    const expected = Math.min(255, Math.max(0, Math.round(real / 0.5 + 128)));
    ok(Math.abs(out[i] - expected) <= 1, `byte ${i}: ${out[i]} vs ${expected}`);
  }
});

Deno.test("requantizeTable() rescales, rounds half away from zero and saturates", () => {
  const table = requantizeTable({ scale: 0.5, zeroPoint: 10 }, { scale: 1, zeroPoint: 0 });
  strictEqual(table[10], 0);
  strictEqual(table[11], 1); // 0.5 rounds up
  strictEqual(table[0], 0); // -5 saturates
  strictEqual(table[255], 123);
});

Deno.test("minMaxBroadcast() keeps the first operand on ties, as std::min/std::max do", () => {
  const out = new Float32Array(2);
  minMaxBroadcast(Float32Array.of(0, 3), [2], Float32Array.of(-0), [1], out, [2], true);
  ok(Object.is(out[0], 0));
  strictEqual(out[1], -0);
});

Deno.test("preluQuant8() passes non-negative inputs and scales negative ones by alpha", () => {
  const input = { scale: 0.5, zeroPoint: 128 };
  const alpha = { scale: 0.125, zeroPoint: 0 };
  const output = { scale: 0.5, zeroPoint: 128 };
  const out = new Uint8Array(3);
  preluQuant8(
    Uint8Array.of(130, 120, 0),
    [3],
    Uint8Array.of(2),
    [1],
    out,
    [3],
    preluQuant8Params(input, alpha, output),
  );
  // 1 -> 1; -4 * 0.25 = -1; -64 * 0.25 = -16.
  deepStrictEqual([...out], [130, 126, 96]);
});

Deno.test("compareBroadcast() compares dequantized quant8 values across scales", () => {
  const a = dequantizeFloat32(Uint8Array.of(2, 3, 4), { scale: 1, zeroPoint: 0 });
  const b = dequantizeFloat32(Uint8Array.of(6), { scale: 0.5, zeroPoint: 0 });
  const out = new Uint8Array(3);
  compareBroadcast(a, [3], b, [1], out, [3], "le");
  deepStrictEqual([...out], [1, 1, 0]);
});

Deno.test("floorDivInt32() rounds toward negative infinity, exactly at the int32 extremes", () => {
  deepStrictEqual(
    [[7, 2], [-7, 2], [7, -2], [-7, -2], [2 ** 31 - 1, 2], [-(2 ** 31), 3], [1, 0], [
      -(2 ** 31),
      -1,
    ]]
      .map(([a, b]) => floorDivInt32(a, b)),
    [3, -4, -4, 3, 2 ** 30 - 1, -715827883, 0, -(2 ** 31)],
  );
});

Deno.test("addInt32() broadcasts a row and wraps around", () => {
  const out = new Int32Array(4);
  addInt32(Int32Array.of(1, 2, 3, 2 ** 31 - 1), [2, 2], Int32Array.of(10, 1), [2], out, [2, 2]);
  deepStrictEqual([...out], [11, 3, 13, -(2 ** 31)]);
});
