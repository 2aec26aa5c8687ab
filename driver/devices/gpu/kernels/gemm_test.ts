/**
 * The implicit GEMM's tile choice and limits, FULLY_CONNECTED on it (inputs of rank 2 and 4,
 * the few-row tile and the tall ones), and float16 weights: taken for a relaxed model on an
 * adapter with shader-f16 only, within float16 tolerance of the reference, and a model that
 * is not relaxed keeps its float32 bits.
 */
import { deepStrictEqual, ok } from "node:assert/strict";
import {
  assertClose,
  assertSameBits,
  checkAgainstReference,
  constant,
  eachGpu,
  ints,
  outputShape,
  reference,
  runtime,
  type TestInput,
  weights,
} from "../test_helpers.ts";
import { prepareGpuSubgraph, usesF16Weights } from "../subgraph.ts";
import type { GpuContext } from "../context.ts";
import { chooseGemmTile, GEMM_TILES, tileInvocations, tileWorkgroupBytes } from "./gemm.ts";

Deno.test("every GEMM tile keeps within WebGPU's default workgroup limits", () => {
  for (const tile of GEMM_TILES) {
    ok(tileInvocations(tile) <= 256, `${JSON.stringify(tile)} invocations`);
    ok(tileWorkgroupBytes(tile) <= 16384, `${JSON.stringify(tile)} workgroup bytes`);
    ok(tile.bm % tile.tm === 0 && tile.bn % 4 === 0, `${JSON.stringify(tile)} register tile`);
  }
});

Deno.test("chooseGemmTile() fits narrow layers, wide layers and dense layers of few rows", () => {
  const bn = (rows: number, columns: number) => chooseGemmTile(rows, columns).bn;
  // MobileNetV2's 112x112 and 56x56 layers.
  deepStrictEqual([bn(12544, 16), bn(3136, 24), bn(3136, 32), bn(784, 64)], [16, 32, 32, 64]);
  deepStrictEqual([bn(784, 96), bn(196, 7)], [32, 16]);
  // A classifier's 1280 -> 1000 at batch 1 and 16 takes the few-row tile, at 64 a tall one.
  deepStrictEqual(chooseGemmTile(1, 1000), GEMM_TILES[3]);
  deepStrictEqual(chooseGemmTile(16, 1000), GEMM_TILES[3]);
  ok(chooseGemmTile(64, 1000).tm === 4);
});

Deno.test("FULLY_CONNECTED with constant weights on the gpu GEMM equals the reference", async () => {
  const cases: [number[], number][] = [
    [[1, 1280], 1000],
    [[16, 96], 300],
    [[70, 33], 20],
    [[2, 3, 4, 10], 12],
    [[5, 1, 1, 64], 64],
  ];
  let seed = 6000;
  for (const [input, units] of cases) {
    const depth = input[input.length - 1];
    const inputs: TestInput[] = [
      runtime(input, seed++),
      weights([units, depth], depth, seed++),
      constant([units], seed++, 0.5),
      ...ints(seed % 4),
    ];
    await checkAgainstReference("FULLY_CONNECTED", inputs, `[${input}] x ${units}`);
    await checkAgainstReference("FULLY_CONNECTED", inputs, `relaxed [${input}] x ${units}`, {
      relaxed: true,
      tolerance: 1e-2,
    });
  }
});

Deno.test("usesF16Weights() only for a relaxed model on an adapter with shader-f16", () => {
  deepStrictEqual(
    [
      usesF16Weights(true, { shaderF16: true }),
      usesF16Weights(true, { shaderF16: false }),
      usesF16Weights(false, { shaderF16: true }),
      usesF16Weights(undefined, { shaderF16: true }),
    ],
    [true, false, false, false],
  );
});

/** A CONV_2D's output on `gpu`, prepared as a relaxed model's or not. */
async function convOutput(gpu: GpuContext, inputs: TestInput[], relaxed: boolean) {
  const operands = [
    ...inputs.map((i) => i.operand),
    { ...inputs[0].operand, shape: outputShape("CONV_2D", inputs) },
  ];
  const out = inputs.length;
  const steps = [{ type: "CONV_2D" as const, inputs: inputs.map((_, i) => i), outputs: [out] }];
  const subgraph = await prepareGpuSubgraph(gpu, steps, {
    operands,
    needed: new Set([out]),
    relaxed,
  });
  try {
    return (await subgraph.run(new Map([[0, inputs[0].data]]))).get(out)!;
  } finally {
    subgraph.destroy();
  }
}

eachGpu(
  "a relaxed CONV_2D rounds its weights to float16 where the adapter has shader-f16",
  async (gpu) => {
    // Weights with low bits float16 drops; an input of ones sums them as they are stored.
    const inputs: TestInput[] = [
      runtime([1, 6, 6, 8], 1),
      weights([16, 3, 3, 8], 72, 2),
      constant([16], 3, 0.5),
      ...ints(1, 1, 1, 0),
    ];
    inputs[0].data.fill(1);
    const want = reference("CONV_2D", inputs);
    const exact = await convOutput(gpu, inputs, false);
    const relaxed = await convOutput(gpu, inputs, true);
    assertClose(exact, want, "not relaxed");
    assertClose(relaxed, want, "relaxed", 1e-2);
    if (gpu.adapter.shaderF16) {
      ok(relaxed.some((v, i) => v !== exact[i]), "relaxed weights are float16");
    } else {
      assertSameBits(relaxed, exact, "relaxed without shader-f16");
    }
  },
);
