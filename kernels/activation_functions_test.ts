import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import {
  clampFloat32,
  clampQuant8,
  FLOAT32_MAX,
  logisticQuant8Table,
  lookupQuant8,
  sigmoidQuant8Params,
  tanhQuant8Table,
} from "./activation_functions.ts";

Deno.test("clampFloat32() follows std::min/max: NaN maps to the lower bound, inf to FLT_MAX", () => {
  const out = new Float32Array(4);
  clampFloat32(Float32Array.of(NaN, Infinity, -3, 2), out, 0, FLOAT32_MAX);
  deepStrictEqual([...out], [0, FLOAT32_MAX, 0, 2]);
});

Deno.test("clampQuant8() limits bytes to the range", () => {
  const out = new Uint8Array(3);
  clampQuant8(Uint8Array.of(10, 128, 250), out, 126, 130);
  deepStrictEqual([...out], [126, 128, 130]);
});

Deno.test("logisticQuant8Table() reproduces the logistic_quant8_1 CTS case", () => {
  const table = logisticQuant8Table(sigmoidQuant8Params(0.5, 0)!);
  const out = new Uint8Array(4);
  lookupQuant8(Uint8Array.of(0, 1, 2, 127), table, out);
  deepStrictEqual([...out], [128, 159, 187, 255]);
});

Deno.test("tanhQuant8Table() is odd around the zero points and saturates", () => {
  const table = tanhQuant8Table(sigmoidQuant8Params(0.1, 128)!);
  strictEqual(table[128], 128);
  strictEqual(table[0], 0);
  strictEqual(table[255], 255);
  for (let d = 1; d < 100; d++) ok(Math.abs(table[128 + d] - 128 - (128 - table[128 - d])) <= 1);
});

Deno.test("sigmoidQuant8Params() refuses input scales at or below 2^-27", () => {
  strictEqual(sigmoidQuant8Params(2 ** -27, 0), null);
  ok(sigmoidQuant8Params(2 ** -26, 0) !== null);
});
