/**
 * The WGSL pooling kernels against the reference kernels on seeded data: windows larger
 * than the stride, strides larger than the window, SAME/VALID and explicit padding (windows
 * clipped at every border), batches, odd channel counts, every fused activation, and the
 * HAL 1.2 form with the NHWC flag.
 */
import type { OperationType } from "../../../../nnapi/types.ts";
import { PADDING_SAME, PADDING_VALID } from "../../../../nnapi/types.ts";
import { checkAgainstReference, ints, runtime, scalar } from "../test_helpers.ts";

interface Case {
  input: number[];
  /** A SAME/VALID code, or explicit [left, right, top, bottom]. */
  padding: number | [number, number, number, number];
  stride: [number, number];
  filter: [number, number];
  layoutFlag?: boolean;
}

const CASES: Case[] = [
  { input: [1, 7, 9, 3], padding: PADDING_SAME, stride: [1, 1], filter: [3, 3] },
  { input: [2, 8, 8, 5], padding: PADDING_VALID, stride: [2, 2], filter: [2, 2] },
  { input: [1, 9, 11, 4], padding: PADDING_SAME, stride: [2, 3], filter: [3, 2] },
  { input: [1, 10, 7, 1], padding: [1, 2, 0, 1], stride: [3, 2], filter: [3, 3] },
  { input: [3, 5, 6, 7], padding: [2, 2, 2, 2], stride: [1, 1], filter: [5, 5] },
  { input: [1, 7, 7, 17], padding: PADDING_VALID, stride: [1, 1], filter: [7, 7] },
  { input: [1, 6, 5, 2], padding: PADDING_SAME, stride: [1, 1], filter: [2, 3], layoutFlag: true },
];

const TYPES: OperationType[] = ["AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D"];

Deno.test("AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D on the gpu equal the reference", async () => {
  let seed = 2000;
  for (const type of TYPES) {
    for (const c of CASES) {
      for (const activation of [0, 1, 2, 3]) {
        const padding = typeof c.padding === "number" ? ints(c.padding) : ints(...c.padding);
        const inputs = [
          runtime(c.input, seed++, 8),
          ...padding,
          ...ints(c.stride[0], c.stride[1], c.filter[0], c.filter[1], activation),
          ...(c.layoutFlag ? [scalar("BOOL", 0)] : []),
        ];
        await checkAgainstReference(
          type,
          inputs,
          `${JSON.stringify(c)} activation ${activation}`,
        );
      }
    }
  }
});
