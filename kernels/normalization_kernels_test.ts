import { deepStrictEqual, ok } from "node:assert/strict";
import { splitAtAxis } from "./axis_split.ts";
import {
  l2NormalizationFloat32,
  l2NormalizationQuant8,
  localResponseNormalizationFloat32,
} from "./normalization_kernels.ts";

Deno.test("l2NormalizationFloat32() divides by the norm along the axis and keeps zeros finite", () => {
  const out = new Float32Array(6);
  l2NormalizationFloat32(Float32Array.of(3, 0, 4, 0, 0, 0), splitAtAxis([2, 3], 0), out);
  deepStrictEqual([...out], [1, 0, 1, 0, 0, 0]);
  l2NormalizationFloat32(Float32Array.of(3, 4, 0, 0, 0, 0), splitAtAxis([2, 3], 1), out);
  ok(Math.abs(out[0] - 0.6) < 1e-6 && Math.abs(out[1] - 0.8) < 1e-6);
  deepStrictEqual([...out.subarray(3)], [0, 0, 0]);
});

Deno.test("l2NormalizationQuant8() reproduces the V1_2 dim1 quant8 CTS case", () => {
  const out = new Uint8Array(3);
  l2NormalizationQuant8(Uint8Array.of(32, 62, 72), 32, splitAtAxis([3], 0), out);
  deepStrictEqual([...out], [128, 205, 230]);
});

Deno.test("localResponseNormalizationFloat32() reproduces local_response_norm_float_4", () => {
  const input = Float32Array.of(-1.1, 0.6, 0.7, 1.2, -0.7, 0.1);
  const out = new Float32Array(6);
  localResponseNormalizationFloat32(input, splitAtAxis([1, 1, 1, 6], 3), {
    radius: 2,
    bias: 9,
    alpha: 4,
    beta: 0.5,
  }, out);
  const expected = [-0.264925688, 0.125108644, 0.140112132, 0.267261267, -0.161787555, 0.0244266];
  expected.forEach((e, i) => ok(Math.abs(out[i] - e) < 1e-6, `element ${i}: ${out[i]}`));
});

Deno.test("l2NormalizationQuant8() gives the zero point for all-zero vectors (HAL 1.3)", () => {
  // Three vectors along axis 0 of [3, 3]: every element at the zero point 7, so the output is
  // logical zero (128), whatever the fixed-point inverse square root of a zero sum would be.
  const out = new Uint8Array(9);
  l2NormalizationQuant8(new Uint8Array(9).fill(7), 7, splitAtAxis([3, 3], 0), out);
  deepStrictEqual([...out], Array(9).fill(128));
});

Deno.test("l2NormalizationQuant8() normalizes a lone step of one to +-1, not its wrapped sign", () => {
  // Sum of squares 1: x / |x| = +-1, i.e. 128 + 128 (clamped to 255) and 128 - 128. Android 10's
  // fixed point overflowed here and flipped the signs; TFLite's later special case does not.
  const out = new Uint8Array(6);
  l2NormalizationQuant8(
    Uint8Array.of(101, 100, 100, 99, 100, 100),
    100,
    splitAtAxis([2, 3], 1),
    out,
  );
  deepStrictEqual([...out], [255, 128, 128, 0, 128, 128]);
});
