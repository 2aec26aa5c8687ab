/**
 * Fusion in gpu subgraphs: which steps `planUnits` fuses (element-wise chains of one shape,
 * a RELU folded into the convolution or dense layer before it) and which it must not (an
 * intermediate needed outside or read by another step, a shape change, a fused activation
 * already there), and that fused runs give the bits of the same steps run one by one,
 * special values (NaN, infinities, -0) included.
 */
import { deepStrictEqual } from "node:assert/strict";
import type { OperationType } from "../../../nnapi/types.ts";
import { PADDING_SAME } from "../../../nnapi/types.ts";
import { type GpuUnit, planUnits } from "./fusion.ts";
import { prepareGpuSubgraph } from "./subgraph.ts";
import {
  assertClose,
  assertSameBits,
  constant,
  eachGpu,
  Graph,
  ints,
  runtime,
  weights,
} from "./test_helpers.ts";
import type { GpuContext } from "./context.ts";

/** x -> RELU -> ADD a broadcast bias -> MUL by another input -> TANH -> LOGISTIC. */
function chain(): { graph: Graph; x: number; y: number; sum: number; out: number } {
  const graph = new Graph();
  const x = graph.add(runtime([2, 5, 7], 1, 8));
  (graph.values[x] as Float32Array).set([NaN, Infinity, -Infinity, -0, 0, 1e30, -1e30]);
  const y = graph.add(runtime([2, 5, 7], 2, 4));
  const relu = graph.op("RELU", [x]);
  const sum = graph.op("ADD", [relu, constant([7], 3, 6), ...ints(0)]);
  const product = graph.op("MUL", [y, sum, ...ints(2)]);
  const tanh = graph.op("TANH", [product]);
  const out = graph.op("LOGISTIC", [tanh]);
  return { graph, x, y, sum, out };
}

/** The kinds of units and their step counts, as a short list. */
function shapeOf(units: GpuUnit[]): string[] {
  return units.map((u) => u.kind === "chain" ? `chain ${u.steps.length}` : u.kind);
}

Deno.test("planUnits() fuses an element-wise chain of one shape, broadcast operands included", () => {
  const { graph, out } = chain();
  deepStrictEqual(shapeOf(planUnits(graph.steps, graph.operands, new Set([out]))), ["chain 5"]);
});

Deno.test("planUnits() splits a chain at an intermediate needed outside or read twice", () => {
  const { graph, sum, out } = chain();
  const split = planUnits(graph.steps, graph.operands, new Set([sum, out]));
  deepStrictEqual(shapeOf(split), ["chain 2", "chain 3"]);
  const shared = new Graph();
  const x = shared.add(runtime([3, 4], 1));
  const relu = shared.op("RELU", [x]);
  const sumOf = shared.op("ADD", [relu, x, ...ints(0)]);
  const last = shared.op("MUL", [sumOf, relu, ...ints(0)]);
  deepStrictEqual(shapeOf(planUnits(shared.steps, shared.operands, new Set([last]))), [
    "step",
    "chain 2",
  ]);
});

Deno.test("planUnits() does not chain across a change of shape", () => {
  const graph = new Graph();
  const x = graph.add(runtime([4], 1));
  const relu = graph.op("RELU", [x]);
  const out = graph.op("ADD", [relu, runtime([3, 4], 2), ...ints(0)]);
  deepStrictEqual(shapeOf(planUnits(graph.steps, graph.operands, new Set([out]))), [
    "step",
    "step",
  ]);
});

/** A CONV_2D of fused activation `activation` followed by `relu`, on an input with a NaN. */
function convThen(relu: OperationType, activation: number) {
  const graph = new Graph();
  const x = graph.add(runtime([2, 6, 5, 3], 4));
  (graph.values[x] as Float32Array)[7] = NaN;
  const conv = graph.op("CONV_2D", [
    x,
    weights([6, 3, 3, 3], 27, 5),
    constant([6], 6, 0.4),
    ...ints(PADDING_SAME, 1, 1, activation),
  ]);
  const out = graph.op(relu, [conv]);
  return { graph, x, conv, out };
}

Deno.test("planUnits() folds a RELU into a layer of activation NONE whose output only it reads", () => {
  for (const relu of ["RELU", "RELU1", "RELU6"] as const) {
    const { graph, out } = convThen(relu, 0);
    deepStrictEqual(shapeOf(planUnits(graph.steps, graph.operands, new Set([out]))), ["folded"]);
  }
  const fused = convThen("RELU6", 1);
  deepStrictEqual(shapeOf(planUnits(fused.graph.steps, fused.graph.operands, new Set())), [
    "step",
    "step",
  ]);
  const needed = convThen("RELU", 0);
  const units = planUnits(needed.graph.steps, needed.graph.operands, new Set([needed.conv]));
  deepStrictEqual(shapeOf(units), ["step", "step"]);
  const logistic = convThen("LOGISTIC", 0);
  deepStrictEqual(shapeOf(planUnits(logistic.graph.steps, logistic.graph.operands, new Set())), [
    "step",
    "step",
  ]);
});

/** The outputs of `graph`'s steps on `gpu`, with `needed` downloaded. */
async function run(gpu: GpuContext, graph: Graph, inputs: number[], needed: number[]) {
  const subgraph = await prepareGpuSubgraph(gpu, graph.steps, {
    operands: graph.operands,
    needed: new Set(needed),
  });
  try {
    return await subgraph.run(new Map(inputs.map((i) => [i, graph.values[i]])));
  } finally {
    subgraph.destroy();
  }
}

/** Every operand the steps produce, so that nothing fuses. */
function everyOutput(graph: Graph): number[] {
  return graph.steps.flatMap((step) => step.outputs);
}

eachGpu("a fused element-wise chain gives the bits of its steps run one by one", async (gpu) => {
  const { graph, x, y, out } = chain();
  const fused = (await run(gpu, graph, [x, y], [out])).get(out)!;
  const unfused = (await run(gpu, graph, [x, y], everyOutput(graph))).get(out)!;
  assertSameBits(fused, unfused, "chain");
  assertClose(fused, graph.values[out], "chain against the reference");
});

eachGpu(
  "a RELU folded into CONV_2D, DEPTHWISE_CONV_2D or FULLY_CONNECTED keeps its bits, NaN included",
  async (gpu) => {
    for (const relu of ["RELU", "RELU1", "RELU6"] as const) {
      const { graph, x, out } = convThen(relu, 0);
      const depthwise = graph.op("DEPTHWISE_CONV_2D", [
        out,
        weights([1, 3, 3, 12], 9, 7),
        constant([12], 8, 0.4),
        ...ints(PADDING_SAME, 1, 1, 2, 0),
      ]);
      const dwRelu = graph.op(relu, [depthwise]);
      const dense = graph.op("FULLY_CONNECTED", [
        dwRelu,
        weights([5, 12], 12, 9),
        constant([5], 10, 0.4),
        ...ints(0),
      ]);
      const last = graph.op(relu, [dense]);
      const units = planUnits(graph.steps, graph.operands, new Set([last]));
      deepStrictEqual(shapeOf(units), ["folded", "folded", "folded"]);
      const fused = (await run(gpu, graph, [x], [last])).get(last)!;
      const unfused = (await run(gpu, graph, [x], everyOutput(graph))).get(last)!;
      assertSameBits(fused, unfused, `${relu} folded`);
      assertClose(fused, graph.values[last], `${relu} folded against the reference`);
    }
  },
);
