import { deepStrictEqual } from "node:assert/strict";
import { dequantize, dequantizePerChannel, floorFloat32 } from "./elementwise_unary.ts";

Deno.test("floorFloat32() rounds toward negative infinity", () => {
  const out = new Float32Array(4);
  floorFloat32(Float32Array.of(-1.5, -0.5, 0.5, 2), out);
  deepStrictEqual([...out], [-2, -1, 0, 2]);
});

Deno.test("dequantize() subtracts the zero point and scales", () => {
  const out = new Float32Array(3);
  dequantize(Uint8Array.of(0, 128, 255), 0.5, 128, out);
  deepStrictEqual([...out], [-64, 0, 63.5]);
});

Deno.test("dequantizePerChannel() uses the scale of each element's channel", () => {
  const out = new Float32Array(6);
  dequantizePerChannel(Int8Array.of(1, 2, 3, -1, -2, -3), [2, 3], 1, [1, 2, 4], out);
  deepStrictEqual([...out], [1, 4, 12, -1, -4, -12]);
});
