import { deepStrictEqual } from "node:assert/strict";
import { forEachAxisVector, splitAtAxis } from "./axis_split.ts";

Deno.test("splitAtAxis() splits a shape into outer, axis and inner sizes", () => {
  deepStrictEqual(splitAtAxis([2, 3, 4, 5], 1), { outer: 2, axis: 3, inner: 20 });
  deepStrictEqual(splitAtAxis([7], 0), { outer: 1, axis: 7, inner: 1 });
});

Deno.test("forEachAxisVector() visits every vector along the axis, inner elements apart", () => {
  const visits: number[][] = [];
  forEachAxisVector(splitAtAxis([2, 3, 2], 1), (start, end, step) => {
    visits.push([start, end, step]);
  });
  deepStrictEqual(visits, [[0, 6, 2], [1, 7, 2], [6, 12, 2], [7, 13, 2]]);
});
