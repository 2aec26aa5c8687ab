import { deepStrictEqual } from "node:assert/strict";
import { quantizedOutputStage } from "./conv_common.ts";
import {
  depthwiseConv2dFloat,
  depthwiseConv2dQuantized,
  type DepthwiseGeometry,
} from "./conv_depthwise.ts";
import { activationRangeFloat, activationRangeQuantized } from "./fixed_point.ts";

function geometry(overrides: Partial<DepthwiseGeometry>): DepthwiseGeometry {
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
    depthMultiplier: 1,
    ...overrides,
  };
}

Deno.test("depthwiseConv2dFloat() filters each channel separately", () => {
  // 1x2 input with 2 channels, 1x2 filter, VALID.
  const g = geometry({ inWidth: 2, inDepth: 2, filterWidth: 2, outDepth: 2 });
  const out = new Float32Array(2);
  depthwiseConv2dFloat(g, [1, 10, 2, 20], [1, 2, 3, 4], [0.5, 0], activationRangeFloat(0), out);
  deepStrictEqual(Array.from(out), [1 * 1 + 2 * 3 + 0.5, 10 * 2 + 20 * 4]);
});

Deno.test("depthwiseConv2dFloat() expands each input channel by the depth multiplier", () => {
  const g = geometry({ inDepth: 2, outDepth: 4, depthMultiplier: 2 });
  const out = new Float32Array(4);
  depthwiseConv2dFloat(g, [3, 5], [1, 2, 3, 4], [0, 0, 0, 1], activationRangeFloat(0), out);
  deepStrictEqual(Array.from(out), [3, 6, 15, 21]);
});

Deno.test("depthwiseConv2dQuantized() offsets input and filter by their zero points", () => {
  const stage = quantizedOutputStage(
    1,
    0.5,
    2,
    [0.5],
    3,
    1,
    100,
    activationRangeQuantized(1, 1, 100),
  );
  const out = new Uint8Array(1);
  // (10 - 2) * (7 - 3) = 32, + bias 4 = 36, * 0.25 = 9, + 100.
  depthwiseConv2dQuantized(geometry({}), [10], [7], [4], stage, out);
  deepStrictEqual(Array.from(out), [109]);
});
