/**
 * Dawn's polls while a readback waits are paced: 50 µs apart for the wait's first
 * millisecond, then at least a millisecond apart (each poll is a Node-API function Deno 2.9 deregisters at
 * a cost that grows with all it tracks). Unpaced, a 100 ms wait on llvmpipe polled thousands
 * of times.
 */
import { ok } from "node:assert/strict";
import { PADDING_SAME } from "../../../nnapi/types.ts";
import { isNative } from "./dawn_polling.ts";
import { prepareGpuSubgraph } from "./subgraph.ts";
import { assertClose, constant, Graph, ints, runtime, testGpu, weights } from "./test_helpers.ts";

Deno.test("while a readback waits on Dawn, its polls come at most 21 in its first millisecond, then one a millisecond", async () => {
  const gpu = await testGpu("dawn");
  // A convolution llvmpipe takes tens of milliseconds over (75 M multiply-adds).
  const graph = new Graph();
  const image = graph.add(runtime([1, 64, 64, 32], 1));
  const conv = graph.op("CONV_2D", [
    image,
    weights([32, 3, 3, 32], 288, 2),
    constant([32], 3, 0.2),
    ...ints(PADDING_SAME, 1, 1, 0),
  ]);
  const subgraph = await prepareGpuSubgraph(gpu, graph.steps, {
    operands: graph.operands,
    needed: new Set([conv]),
  });
  const paced = globalThis.setImmediate;
  let polls = 0;
  globalThis.setImmediate = ((callback: () => void) => {
    if (isNative(callback)) polls++;
    return paced(callback);
  }) as typeof setImmediate;
  try {
    const started = performance.now();
    const result = await subgraph.run(new Map([[image, graph.values[image]]]));
    const ms = performance.now() - started;
    assertClose(result.get(conv)!, graph.values[conv], "conv");
    ok(polls > 0, "no poll was seen");
    ok(polls <= 21 + ms + 2, `${polls} polls in ${ms.toFixed(1)} ms`);
  } finally {
    globalThis.setImmediate = paced;
    subgraph.destroy();
  }
});
