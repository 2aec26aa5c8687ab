import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { floatValues, generateProposals, hardNms, iouAxisAligned, storeValues } from "./bbox.ts";

Deno.test("iouAxisAligned() is intersection over union of [x1, y1, x2, y2] boxes", () => {
  const boxes = Float32Array.of(0, 0, 2, 2, 1, 0, 3, 2, 5, 5, 6, 6);
  strictEqual(iouAxisAligned(boxes, 0, 4), Math.fround(2 / 6));
  strictEqual(iouAxisAligned(boxes, 0, 8), 0);
});

Deno.test("hardNms() keeps the best box and drops those overlapping it", () => {
  const boxes = Float32Array.of(0, 0, 2, 2, 0, 0, 2, 2.1, 5, 5, 6, 6);
  const select = [0, 1, 2];
  const end = hardNms(select, { start: 0, end: 3 }, {
    scores: Float32Array.of(0.5, 0.9, 0.1),
    boxes,
    boxOffset: (i) => 4 * i,
    iouThreshold: 0.5,
    maxDetections: -1,
  });
  deepStrictEqual(select.slice(0, end), [1, 2]);
});

Deno.test("generateProposals() drops boxes at or under the minimum size", () => {
  const result = generateProposals({
    scores: Float32Array.of(0.9, 0.8),
    deltas: new Float32Array(8),
    anchors: Float32Array.of(0, 0, 4, 4, 0, 0, 1, 1),
    imageInfo: Float32Array.of(10, 10),
  }, {
    batches: 1,
    height: 1,
    width: 1,
    anchors: 2,
    heightStride: 1,
    widthStride: 1,
    preNmsTopN: -1,
    postNmsTopN: -1,
    iouThreshold: 0.5,
    minSize: 1,
  });
  if (typeof result === "string") throw new Error(result);
  deepStrictEqual([...result.scores], [Math.fround(0.9)]);
  deepStrictEqual([...result.rois], [0, 0, 4, 4]);
  deepStrictEqual([...result.batches], [0]);
});

Deno.test("floatValues() and storeValues() round-trip quant16 boxes", () => {
  const quant = { scale: 0.125, zeroPoint: 0 };
  const values = floatValues(Uint16Array.of(0, 8, 65535), quant.scale, quant.zeroPoint);
  deepStrictEqual([...values], [0, 1, 8191.875]);
  const out = new Uint16Array(3);
  storeValues(Float32Array.of(-1, 1.0625, 1e9), out, quant);
  deepStrictEqual([...out], [0, 9, 65535]);
});
