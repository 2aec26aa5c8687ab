/**
 * The optimization passes on converted models (`converter/passes/`), each checked against
 * onnxruntime-node and by the structure of the model they leave: activations fused into
 * their producer where nothing else sees the value before the activation, and kept where
 * something does.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict";
import type { ModelJson } from "../driver/model_schema.ts";
import type { GraphSpec, NodeSpec } from "../tools/onnx_graphs.ts";
import { compare, weights } from "./onnx/compare.ts";
import { activationInput } from "../converter/passes/fuse_activations.ts";
import { ModelGraph } from "../converter/passes/model_graph.ts";
import { withTestServer } from "./server_fixture.ts";

const CONV: NodeSpec = {
  op: "Conv",
  inputs: ["x", "w", "b"],
  outputs: ["c"],
  attributes: { pads: [1, 1, 1, 1] },
};

/** A 1x3x8x8 -> 1x4x8x8 convolution followed by `nodes`, with extra graph outputs. */
function convThen(nodes: NodeSpec[], outputs: string[]): GraphSpec {
  return {
    inputs: [{ name: "x", dims: [1, 3, 8, 8] }],
    outputs: outputs.map((name) => ({ name, dims: [1, 4, 8, 8] })),
    nodes: [CONV, ...nodes],
    initializers: [
      weights("w", [4, 3, 3, 3], 1),
      weights("b", [4], 2),
      { name: "lo", dims: [], values: [0] },
      { name: "hi", dims: [], values: [6] },
    ],
  };
}

const types = (model: ModelJson) => model.operations.map((o) => o.type);

/** The fused activation code of the model's first operation of `type`. */
function activationOf(model: ModelJson, type: string): number | undefined {
  const graph = new ModelGraph(model);
  const operation = model.operations.find((o) => o.type === type)!;
  return graph.constantValues(operation.inputs[activationInput(graph, operation)!])?.[0];
}

Deno.test("Relu and Clip(0, 6) after a convolution become its fused activation", async () => {
  await withTestServer({}, async (server) => {
    const relu = await compare(
      server,
      convThen([{ op: "Relu", inputs: ["c"], outputs: ["y"] }], ["y"]),
      "Conv+Relu",
    );
    deepStrictEqual(types(relu.conversion.model), ["CONV_2D"]);
    strictEqual(activationOf(relu.conversion.model, "CONV_2D"), 1, "RELU");
    const relu6 = await compare(
      server,
      convThen([{ op: "Clip", inputs: ["c", "lo", "hi"], outputs: ["y"] }], ["y"]),
      "Conv+Clip(0,6)",
    );
    deepStrictEqual(types(relu6.conversion.model), ["CONV_2D"]);
    strictEqual(activationOf(relu6.conversion.model, "CONV_2D"), 3, "RELU6");
  });
});

Deno.test("an Add's Relu is fused; a value read elsewhere or returned keeps its activation apart", async () => {
  await withTestServer({}, async (server) => {
    const doubled = await compare(
      server,
      convThen([
        { op: "Add", inputs: ["c", "c"], outputs: ["s"] },
        { op: "Relu", inputs: ["s"], outputs: ["y"] },
      ], ["y"]),
      "Conv, Add, Relu",
    );
    deepStrictEqual(types(doubled.conversion.model), ["CONV_2D", "ADD"]);
    strictEqual(activationOf(doubled.conversion.model, "ADD"), 1, "the Add's RELU");
    strictEqual(activationOf(doubled.conversion.model, "CONV_2D"), 0, "two readers: none");

    const returned = await compare(
      server,
      convThen([{ op: "Relu", inputs: ["c"], outputs: ["y"] }], ["y", "c"]),
      "Conv+Relu, the convolution also returned",
    );
    deepStrictEqual(types(returned.conversion.model), ["CONV_2D", "RELU"]);
    strictEqual(activationOf(returned.conversion.model, "CONV_2D"), 0);
  });
});
