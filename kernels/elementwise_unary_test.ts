import { deepStrictEqual, strictEqual } from "node:assert/strict";
import {
  dequantize,
  dequantizePerChannel,
  float32Scratch,
  floorFloat32,
  storeFloat32,
  toFloat32,
} from "./elementwise_unary.ts";

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

Deno.test("float16 staging widens inputs and rounds results back to float16", () => {
  const half = Float16Array.of(1.5, -2);
  const wide = toFloat32(half);
  deepStrictEqual([...wide], [1.5, -2]);
  const out = new Float16Array(1);
  const scratch = float32Scratch(out);
  scratch[0] = 1.0001;
  storeFloat32(out, scratch);
  strictEqual(out[0], 1);
  const f32 = new Float32Array(1);
  strictEqual(float32Scratch(f32), f32);
});
