/**
 * The WGSL CONV_2D and DEPTHWISE_CONV_2D kernels against the reference kernels on seeded
 * data: output channels and columns at tile-1, tile, tile+1 and 2 x tile of the register
 * tile (4 x 4), every workgroup tile of the implicit GEMM, odd shapes, batches, strides
 * 1-3, SAME/VALID and explicit padding, dilation (the HAL 1.2 form with the NHWC flag),
 * float16 weights of a relaxed model, depth multipliers (the depthwise kernel's vec4 path
 * and its one-element path) and every fused activation.
 */
import { deepStrictEqual } from "node:assert/strict";
import { PADDING_SAME, PADDING_VALID } from "../../../../nnapi/types.ts";
import {
  checkAgainstReference,
  constant,
  ints,
  runtime,
  scalar,
  type TestInput,
  weights,
} from "../test_helpers.ts";
import { depthwiseIsVectorized } from "./depthwise.ts";

interface Case {
  input: [number, number, number, number];
  filter: [number, number];
  outDepth: number;
  stride: [number, number];
  /** A SAME/VALID code, or explicit [left, right, top, bottom]. */
  padding: number | [number, number, number, number];
  activation: number;
  dilation?: [number, number];
}

function describe(c: Case): string {
  return JSON.stringify(c);
}

/** The inputs of a call: the HAL 1.0 forms, or HAL 1.2's NHWC flag + dilation. */
function convInputs(c: Case, depthwise: boolean, seed: number): TestInput[] {
  const [, , , inDepth] = c.input;
  const [fh, fw] = c.filter;
  const fanIn = fh * fw * (depthwise ? 1 : inDepth);
  const filterShape = depthwise ? [1, fh, fw, c.outDepth] : [c.outDepth, fh, fw, inDepth];
  const padding = typeof c.padding === "number" ? ints(c.padding) : ints(...c.padding);
  const multiplier = depthwise ? ints(c.outDepth / inDepth) : [];
  const tail = c.dilation ? [scalar("BOOL", 0), ...ints(...c.dilation)] : [];
  return [
    runtime(c.input, seed),
    weights(filterShape, fanIn, seed + 1),
    constant([c.outDepth], seed + 2, 0.5),
    ...padding,
    ...ints(c.stride[0], c.stride[1]),
    ...multiplier,
    ...ints(c.activation),
    ...tail,
  ];
}

const CONV_CASES: Case[] = [];
for (const outDepth of [3, 4, 5, 8, 9]) {
  for (const width of [3, 4, 5, 8, 9]) {
    CONV_CASES.push({
      input: [1, 5, width, 3],
      filter: [3, 3],
      outDepth,
      stride: [1, 1],
      padding: PADDING_SAME,
      activation: (outDepth + width) % 4,
    });
  }
}
CONV_CASES.push(
  {
    input: [2, 7, 9, 5],
    filter: [3, 2],
    outDepth: 7,
    stride: [2, 1],
    padding: PADDING_VALID,
    activation: 0,
  },
  {
    input: [1, 11, 13, 6],
    filter: [5, 3],
    outDepth: 10,
    stride: [3, 2],
    padding: PADDING_SAME,
    activation: 1,
  },
  {
    input: [1, 8, 8, 16],
    filter: [1, 1],
    outDepth: 12,
    stride: [1, 1],
    padding: PADDING_VALID,
    activation: 3,
  },
  {
    input: [1, 9, 7, 4],
    filter: [3, 3],
    outDepth: 6,
    stride: [2, 2],
    padding: [1, 0, 2, 1],
    activation: 2,
  },
  {
    input: [3, 6, 10, 2],
    filter: [2, 4],
    outDepth: 5,
    stride: [1, 2],
    padding: [0, 3, 1, 0],
    activation: 0,
  },
  {
    input: [1, 12, 12, 3],
    filter: [3, 3],
    outDepth: 4,
    stride: [1, 1],
    padding: PADDING_SAME,
    activation: 0,
    dilation: [2, 3],
  },
  {
    input: [1, 10, 11, 5],
    filter: [2, 3],
    outDepth: 9,
    stride: [2, 1],
    padding: [2, 1, 1, 2],
    activation: 1,
    dilation: [3, 2],
  },
  {
    input: [1, 56, 56, 32],
    filter: [3, 3],
    outDepth: 32,
    stride: [1, 1],
    padding: PADDING_SAME,
    activation: 3,
  },
);

/**
 * Shapes that take each implicit-GEMM tile (`chooseGemmTile`): 16 channels (256 x 16), 24,
 * 32 and 96 (128 x 32), 64 (64 x 64), 7 (no whole channel group); with batches of 3,
 * strides of 2, dilation, explicit padding, 1x1 filters both dense and strided, and a
 * reduction depth that is no multiple of the tile's.
 */
const TILE_CASES: Case[] = [
  {
    input: [3, 9, 11, 8],
    filter: [3, 3],
    outDepth: 16,
    stride: [1, 1],
    padding: PADDING_SAME,
    activation: 1,
  },
  {
    input: [1, 20, 18, 12],
    filter: [3, 3],
    outDepth: 24,
    stride: [2, 2],
    padding: PADDING_SAME,
    activation: 3,
  },
  {
    input: [3, 12, 12, 16],
    filter: [1, 1],
    outDepth: 32,
    stride: [1, 1],
    padding: PADDING_VALID,
    activation: 0,
  },
  {
    input: [1, 16, 16, 20],
    filter: [3, 3],
    outDepth: 64,
    stride: [1, 1],
    padding: [1, 1, 1, 1],
    activation: 2,
    dilation: [2, 2],
  },
  {
    input: [3, 17, 17, 8],
    filter: [1, 1],
    outDepth: 96,
    stride: [2, 2],
    padding: PADDING_VALID,
    activation: 0,
  },
  {
    input: [1, 13, 11, 5],
    filter: [3, 3],
    outDepth: 7,
    stride: [2, 2],
    padding: [0, 2, 1, 1],
    activation: 1,
    dilation: [1, 2],
  },
];

Deno.test("CONV_2D on the gpu equals the reference on every implicit-GEMM tile", async () => {
  for (const [i, c] of TILE_CASES.entries()) {
    await checkAgainstReference("CONV_2D", convInputs(c, false, 700 + 10 * i), describe(c));
  }
});

Deno.test("CONV_2D of a relaxed model takes float16 weights within float16 tolerance", async () => {
  for (const [i, c] of TILE_CASES.entries()) {
    const inputs = convInputs(c, false, 800 + 10 * i);
    await checkAgainstReference("CONV_2D", inputs, describe(c), { relaxed: true, tolerance: 1e-2 });
  }
});

Deno.test("CONV_2D on the gpu equals the reference at tile edges, odd shapes and every form", async () => {
  for (const [i, c] of CONV_CASES.entries()) {
    await checkAgainstReference("CONV_2D", convInputs(c, false, 100 + 10 * i), describe(c));
  }
});

const DEPTHWISE_CASES: Case[] = [
  {
    input: [1, 5, 7, 3],
    filter: [3, 3],
    outDepth: 3,
    stride: [1, 1],
    padding: PADDING_SAME,
    activation: 0,
  },
  {
    input: [2, 9, 8, 4],
    filter: [3, 3],
    outDepth: 8,
    stride: [2, 2],
    padding: PADDING_SAME,
    activation: 3,
  },
  {
    input: [1, 7, 7, 5],
    filter: [2, 3],
    outDepth: 15,
    stride: [1, 2],
    padding: PADDING_VALID,
    activation: 1,
  },
  {
    input: [1, 8, 6, 2],
    filter: [3, 2],
    outDepth: 2,
    stride: [3, 1],
    padding: [1, 1, 2, 0],
    activation: 2,
  },
  {
    input: [1, 12, 10, 3],
    filter: [3, 3],
    outDepth: 6,
    stride: [1, 1],
    padding: PADDING_SAME,
    activation: 0,
    dilation: [2, 2],
  },
  {
    input: [1, 28, 28, 32],
    filter: [3, 3],
    outDepth: 32,
    stride: [2, 2],
    padding: PADDING_SAME,
    activation: 3,
  },
  {
    input: [3, 9, 10, 8],
    filter: [3, 3],
    outDepth: 8,
    stride: [1, 2],
    padding: [2, 1, 0, 1],
    activation: 1,
    dilation: [2, 1],
  },
  {
    input: [2, 7, 7, 12],
    filter: [5, 5],
    outDepth: 12,
    stride: [2, 2],
    padding: PADDING_VALID,
    activation: 2,
  },
];

Deno.test("DEPTHWISE_CONV_2D on the gpu equals the reference with depth multipliers and every form", async () => {
  for (const [i, c] of DEPTHWISE_CASES.entries()) {
    await checkAgainstReference(
      "DEPTHWISE_CONV_2D",
      convInputs(c, true, 500 + 10 * i),
      describe(c),
    );
  }
});

Deno.test("DEPTHWISE_CONV_2D on the gpu takes a filter computed at execution", async () => {
  for (const c of [DEPTHWISE_CASES[1], DEPTHWISE_CASES[6]]) {
    const inputs = convInputs(c, true, 900);
    inputs[1] = runtime([1, 3, 3, c.outDepth], 901, 0.6);
    await checkAgainstReference("DEPTHWISE_CONV_2D", inputs, `runtime filter ${describe(c)}`);
  }
});

Deno.test("DEPTHWISE_CONV_2D takes 4 channels per invocation only at multiplier 1 and whole groups", () => {
  const vectorized = DEPTHWISE_CASES.map((c) =>
    depthwiseIsVectorized(c.outDepth, c.outDepth / c.input[3])
  );
  deepStrictEqual(vectorized, [false, false, false, false, false, true, true, true]);
});
