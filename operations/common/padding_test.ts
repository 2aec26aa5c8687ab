import { PADDING_SAME, PADDING_VALID } from "../../nnapi/types.ts";
import { OperationError } from "../operation.ts";
import { computeOutSize, explicitPadding, outputSize2d } from "./padding.ts";
import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";

Deno.test("explicitPadding() puts the smaller half of SAME padding first", () => {
  // in 5, stride 2, filter 4: out 3, needs (3-1)*2+4 = 8 -> 3 extra: 1 before, 2 after.
  deepStrictEqual(explicitPadding(5, 2, 4, PADDING_SAME), { head: 1, tail: 2 });
  deepStrictEqual(explicitPadding(3, 1, 3, PADDING_SAME), { head: 1, tail: 1 });
});

Deno.test("explicitPadding() pads nothing for VALID or when the filter fits", () => {
  deepStrictEqual(explicitPadding(5, 2, 4, PADDING_VALID), { head: 0, tail: 0 });
  deepStrictEqual(explicitPadding(4, 2, 2, PADDING_SAME), { head: 0, tail: 0 });
});

Deno.test("explicitPadding() pads for the dilated filter extent", () => {
  // filter 3 with dilation 2 spans 5 taps.
  deepStrictEqual(explicitPadding(4, 1, 3, PADDING_SAME, 2), { head: 2, tail: 2 });
});

Deno.test("computeOutSize() follows NNAPI's integer formula", () => {
  strictEqual(computeOutSize(5, 3, 2, 1, 1), 3);
  strictEqual(computeOutSize(5, 3, 2, 0, 0), 2);
  strictEqual(computeOutSize(7, 3, 1, 0, 0, 3), 1);
});

Deno.test("outputSize2d() rejects a window larger than the padded input", () => {
  throws(
    () => outputSize2d(2, 2, 4, 4, 1, 1, { left: 0, right: 0, top: 0, bottom: 0 }),
    OperationError,
  );
});
