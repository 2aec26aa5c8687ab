import { deepStrictEqual } from "node:assert/strict";
import { splitAtAxis } from "./axis_split.ts";

Deno.test("splitAtAxis() splits a shape into outer, axis and inner sizes", () => {
  deepStrictEqual(splitAtAxis([2, 3, 4, 5], 1), { outer: 2, axis: 3, inner: 20 });
  deepStrictEqual(splitAtAxis([7], 0), { outer: 1, axis: 7, inner: 1 });
});
