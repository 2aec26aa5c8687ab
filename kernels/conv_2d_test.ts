import { deepStrictEqual } from "node:assert/strict";
import { conv2dFloat, conv2dQuantized } from "./conv_2d.ts";
import { type Conv2dGeometry, quantizedOutputStage } from "./conv_common.ts";
import { activationRangeFloat, activationRangeQuantized } from "./fixed_point.ts";

function geometry(overrides: Partial<Conv2dGeometry>): Conv2dGeometry {
  return {
    batches: 1,
    inHeight: 1,
    inWidth: 1,
    inDepth: 1,
    filterHeight: 1,
    filterWidth: 1,
    outHeight: 1,
    outWidth: 1,
    outDepth: 1,
    strideHeight: 1,
    strideWidth: 1,
    dilationHeight: 1,
    dilationWidth: 1,
    padTop: 0,
    padLeft: 0,
    ...overrides,
  };
}

Deno.test("conv2dFloat() skips taps that fall in the padding", () => {
  // 2x2 input, 2x2 filter, SAME padding (one row/column after the input).
  const g = geometry({
    inHeight: 2,
    inWidth: 2,
    filterHeight: 2,
    filterWidth: 2,
    outHeight: 2,
    outWidth: 2,
  });
  const out = new Float32Array(4);
  conv2dFloat(g, [1, 2, 3, 4], [1, 2, 3, 4], [0.5], activationRangeFloat(0), out);
  deepStrictEqual(Array.from(out), [30.5, 14.5, 11.5, 4.5]);
});

Deno.test("conv2dFloat() clamps to the fused RELU6 range", () => {
  const g = geometry({
    inHeight: 2,
    inWidth: 2,
    filterHeight: 2,
    filterWidth: 2,
    outHeight: 2,
    outWidth: 2,
  });
  const out = new Float32Array(4);
  conv2dFloat(g, [1, 2, 3, 4], [1, 2, 3, 4], [0.5], activationRangeFloat(3), out);
  deepStrictEqual(Array.from(out), [6, 6, 6, 4.5]);
});

Deno.test("conv2dFloat() spreads filter taps by the dilation factor", () => {
  const g = geometry({
    inHeight: 3,
    inWidth: 3,
    filterHeight: 2,
    filterWidth: 2,
    dilationHeight: 2,
    dilationWidth: 2,
  });
  const out = new Float32Array(1);
  conv2dFloat(
    g,
    [1, 2, 3, 4, 5, 6, 7, 8, 9],
    [1, 10, 100, 1000],
    [0],
    activationRangeFloat(0),
    out,
  );
  deepStrictEqual(Array.from(out), [1 + 30 + 700 + 9000]);
});

Deno.test("conv2dFloat() sums over input channels for each output channel", () => {
  const g = geometry({ inDepth: 2, outDepth: 2 });
  const out = new Float32Array(2);
  // Filter [2 outputs][1][1][2 inputs].
  conv2dFloat(g, [3, 5], [1, 1, 2, -1], [0, 10], activationRangeFloat(0), out);
  deepStrictEqual(Array.from(out), [8, 11]);
});

Deno.test("conv2dQuantized() applies an output multiplier greater than one", () => {
  // real multiplier = 1 * 1 / 0.5 = 2; input zero point 1, filter zero point 0.
  const stage = quantizedOutputStage(1, 1, 1, [1], 0, 0.5, 0, activationRangeQuantized(0, 0.5, 0));
  const out = new Uint8Array(1);
  conv2dQuantized(geometry({}), [4], [2], [1], stage, out);
  deepStrictEqual(Array.from(out), [14]);
});

Deno.test("conv2dQuantized() saturates to the uint8 range", () => {
  const stage = quantizedOutputStage(1, 0.5, 0, [0.5], 0, 1, 0, activationRangeQuantized(0, 1, 0));
  const out = new Uint8Array(1);
  // 255 * 255 * 0.25 = 16256.25 -> clamped to 255.
  conv2dQuantized(geometry({}), [255], [255], [0], stage, out);
  deepStrictEqual(Array.from(out), [255]);
});

Deno.test("conv2dQuantized() uses one multiplier per channel for per-channel filters", () => {
  const stage = quantizedOutputStage(
    2,
    0.5,
    0,
    [0.5, 1],
    0,
    1,
    10,
    activationRangeQuantized(0, 1, 10),
  );
  const out = new Uint8Array(2);
  // acc0 = 4 * 2 = 8 -> 8 * 0.25 = 2; acc1 = 4 * -3 = -12 -> -12 * 0.5 = -6; + zero point 10.
  conv2dQuantized(geometry({ outDepth: 2 }), [4], new Int8Array([2, -3]), [0, 0], stage, out);
  deepStrictEqual(Array.from(out), [12, 4]);
});
