import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { splitAtAxis } from "./axis_split.ts";
import { softmaxFloat32, softmaxQuant8, softmaxQuant8Params } from "./softmax_kernels.ts";

Deno.test("softmaxFloat32() normalizes along a middle axis", () => {
  const input = Float32Array.of(1, 2, 3, 4, 5, 6);
  const out = new Float32Array(6);
  softmaxFloat32(input, splitAtAxis([1, 2, 3], 1), 1, out);
  for (let i = 0; i < 3; i++) {
    ok(Math.abs(out[i] + out[i + 3] - 1) < 1e-6);
    ok(Math.abs(out[i] - 1 / (1 + Math.E ** 3)) < 1e-6);
  }
});

Deno.test("softmaxQuant8() reproduces the softmax_quant8_2 CTS case", () => {
  const input = Uint8Array.of(1, 2, 3, 4, 5, 255, 254, 253, 252, 251);
  const out = new Uint8Array(10);
  softmaxQuant8(input, splitAtAxis([2, 5], 1), softmaxQuant8Params(1, 0.5)!, out);
  deepStrictEqual([...out], [15, 24, 40, 67, 110, 110, 67, 40, 24, 15]);
});

Deno.test("softmaxQuant8() matches TFLite bit for bit", () => {
  // Golden row from TFLite's uint8 Softmax arithmetic compiled with g++.
  const out = new Uint8Array(6);
  const params = softmaxQuant8Params(0.550000012, 0.007125)!;
  softmaxQuant8(Uint8Array.of(173, 164, 114, 219, 187, 30), splitAtAxis([6], 0), params, out);
  deepStrictEqual([...out], [46, 44, 36, 55, 48, 26]);
});

Deno.test("softmaxQuant8Params() refuses beta * scale too small for a multiplier above 1", () => {
  strictEqual(softmaxQuant8Params(2 ** -26, 1), null);
});
