import { deepStrictEqual, ok } from "node:assert/strict";
import { activationRangeFloat, activationRangeQuantized } from "./fixed_point.ts";
import {
  averagePoolFloat,
  averagePoolQuantized,
  l2PoolFloat,
  maxPool,
  type Pool2dGeometry,
} from "./pool_2d.ts";

function geometry(overrides: Partial<Pool2dGeometry>): Pool2dGeometry {
  return {
    batches: 1,
    inHeight: 2,
    inWidth: 2,
    depth: 1,
    outHeight: 1,
    outWidth: 1,
    filterHeight: 2,
    filterWidth: 2,
    strideHeight: 1,
    strideWidth: 1,
    padTop: 0,
    padLeft: 0,
    ...overrides,
  };
}

Deno.test("averagePoolFloat() divides by the number of taps inside the input only", () => {
  // 2x2 windows with SAME padding: the last row/column windows are clipped.
  const g = geometry({ outHeight: 2, outWidth: 2 });
  const out = new Float32Array(4);
  averagePoolFloat(g, [1, 2, 3, 4], activationRangeFloat(0), out);
  deepStrictEqual(Array.from(out), [2.5, 3, 3.5, 4]);
});

Deno.test("averagePoolQuantized() rounds the integer mean half up", () => {
  const out = new Uint8Array(3);
  const g = geometry({ inHeight: 1, inWidth: 2, filterHeight: 1, depth: 3 });
  // Channel means: (1+2)/2 = 1.5 -> 2, (1+1)/2 = 1, (2+5)/2 = 3.5 -> 4.
  averagePoolQuantized(g, [1, 1, 2, 2, 1, 5], activationRangeQuantized(0, 1, 0), out);
  deepStrictEqual(Array.from(out), [2, 1, 4]);
});

Deno.test("averagePoolQuantized() does not overflow large windows", () => {
  const g = geometry({ inHeight: 30, inWidth: 30, filterHeight: 30, filterWidth: 30 });
  const out = new Uint8Array(1);
  averagePoolQuantized(g, new Uint8Array(900).fill(255), activationRangeQuantized(0, 1, 0), out);
  deepStrictEqual(Array.from(out), [255]);
});

Deno.test("maxPool() takes the window maximum, then clamps to the activation", () => {
  const out = new Float32Array(2);
  const g = geometry({ depth: 2 });
  maxPool(g, [-5, 1, -3, 9, -4, 2, -7, 3], activationRangeFloat(2), out);
  deepStrictEqual(Array.from(out), [-1, 1]);
});

Deno.test("l2PoolFloat() is the root mean square of the window", () => {
  const out = new Float32Array(1);
  l2PoolFloat(geometry({}), [1, 3, 5, 7], activationRangeFloat(0), out);
  ok(Math.abs(out[0] - Math.sqrt(21)) < 1e-6);
});
