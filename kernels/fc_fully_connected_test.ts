import { deepStrictEqual } from "node:assert/strict";
import { quantizedOutputStage } from "./conv_common.ts";
import { fullyConnectedFloat, fullyConnectedQuantized } from "./fc_fully_connected.ts";
import { activationRangeFloat, activationRangeQuantized } from "./fixed_point.ts";

Deno.test("fullyConnectedFloat() computes one dot product per batch row and unit", () => {
  const out = new Float32Array(4);
  fullyConnectedFloat(
    { batches: 2, inputSize: 3, units: 2 },
    [1, 2, 3, 4, 5, 6],
    [1, 0, -1, 1, 1, 1],
    [0.5, -1],
    activationRangeFloat(0),
    out,
  );
  deepStrictEqual(Array.from(out), [-1.5, 5, -1.5, 14]);
});

Deno.test("fullyConnectedFloat() applies the fused RELU1 range", () => {
  const out = new Float32Array(2);
  fullyConnectedFloat(
    { batches: 1, inputSize: 1, units: 2 },
    [2],
    [1, -1],
    [0, 0],
    activationRangeFloat(2),
    out,
  );
  deepStrictEqual(Array.from(out), [1, -1]);
});

Deno.test("fullyConnectedQuantized() rounds the rescaled accumulator to nearest", () => {
  // multiplier 0.25: acc 2*3 + 0 = 6 -> 1.5 rounds away from zero to 2; zero point 5.
  const stage = quantizedOutputStage(1, 0.5, 0, [0.5], 0, 1, 5, activationRangeQuantized(0, 1, 5));
  const out = new Uint8Array(1);
  fullyConnectedQuantized({ batches: 1, inputSize: 1, units: 1 }, [2], [3], [0], stage, out);
  deepStrictEqual(Array.from(out), [7]);
});
