/**
 * The optimization passes on converted models (`converter/passes/`), each checked against
 * onnxruntime-node and by the structure of the model they leave: activations fused into
 * their producer where nothing else sees the value before the activation, and kept where
 * something does; NCHW image operations moved to NHWC with transposes only where the graph
 * needs NCHW, and left in NCHW mode where moving them would not remove transposes.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict";
import type { ModelJson } from "../driver/model/model_schema.ts";
import { type GraphSpec, type NodeSpec, onnxBytes } from "../tools/onnx_graphs.ts";
import { compare, compareBytes, weights } from "./onnx/compare.ts";
import { compareWithOnnxRuntime } from "../tools/onnx_compare.ts";
import { mobilenetV2Onnx } from "../bench/mobilenet_v2_onnx.ts";
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

const count = (model: ModelJson, type: string) =>
  model.operations.filter((o) => o.type === type).length;

/** A small NCHW network touching every layout-aware rewrite, `batch`, `h`, `w` given. */
function smallNetwork(batch: number | string, h: number | string, w: number | string): GraphSpec {
  return {
    inputs: [{ name: "x", dims: [batch, 3, h, w] }],
    outputs: [{ name: "y", dims: [batch, 16] }, { name: "z", dims: [batch, 16, "H", "W"] }],
    nodes: [
      CONV,
      { op: "Relu", inputs: ["c"], outputs: ["r"] },
      {
        op: "Conv",
        inputs: ["r", "w2", "b2"],
        outputs: ["d"],
        attributes: { pads: [1, 1, 1, 1], group: 4 },
      },
      { op: "Add", inputs: ["d", "r"], outputs: ["residual"] },
      // A per-channel constant broadcast as NCHW writes it: [C, 1, 1].
      { op: "Mul", inputs: ["residual", "scale"], outputs: ["scaled"] },
      {
        op: "Concat",
        inputs: ["scaled", "r", "r", "d"],
        outputs: ["cat"],
        attributes: { axis: 1 },
      },
      {
        op: "MaxPool",
        inputs: ["cat"],
        outputs: ["pooled"],
        attributes: { kernel_shape: [2, 2], strides: [2, 2] },
      },
      {
        op: "Resize",
        inputs: ["pooled", "", "scales"],
        outputs: ["z"],
        attributes: {
          mode: "nearest",
          coordinate_transformation_mode: "asymmetric",
          nearest_mode: "floor",
        },
      },
      { op: "GlobalAveragePool", inputs: ["z"], outputs: ["g"] },
      { op: "Flatten", inputs: ["g"], outputs: ["y"] },
    ],
    initializers: [
      weights("w", [4, 3, 3, 3], 1),
      weights("b", [4], 2),
      weights("w2", [4, 1, 3, 3], 3),
      weights("b2", [4], 4),
      weights("scale", [4, 1, 1], 5),
      { name: "scales", dims: [4], values: [1, 1, 2, 2] },
    ],
  };
}

Deno.test("an NCHW network runs in NHWC with one transpose in and one out, equal to onnxruntime", async () => {
  await withTestServer({}, async (server) => {
    const { conversion } = await compare(server, smallNetwork(1, 8, 8), "NHWC network");
    strictEqual(conversion.layout, "NHWC");
    const model = conversion.model;
    // In: the input; out: the returned image z (the pooled vector reads the same in both).
    strictEqual(count(model, "TRANSPOSE"), 2, JSON.stringify(types(model)));
    strictEqual(count(model, "RELU"), 0, "fused");
    for (const operation of model.operations) {
      const flag = operation.inputs.find((i) => model.operands[i].type === "BOOL");
      if (
        flag !== undefined &&
        ["CONV_2D", "MAX_POOL_2D", "RESIZE_NEAREST_NEIGHBOR"].includes(operation.type)
      ) {
        deepStrictEqual(model.operands[flag].value, [0], `${operation.type} in NHWC`);
      }
    }
  });
});

Deno.test("NHWC with extents given at execution (batch, height and width unknown at import)", async () => {
  await withTestServer({}, async (server) => {
    const { conversion } = await compareBytes(
      server,
      onnxBytes(smallNetwork("N", "H0", "W0")),
      { x: [2, 3, 10, 6] },
      "NHWC network, dynamic extents",
    );
    strictEqual(conversion.layout, "NHWC");
  });
});

Deno.test("a reshape across channels and pixels reads NCHW; a lone convolution stays in NCHW mode", async () => {
  await withTestServer({}, async (server) => {
    const flattened = await compare(server, {
      inputs: [{ name: "x", dims: [1, 3, 8, 8] }],
      outputs: [{ name: "y", dims: [1, 8 * 64] }],
      nodes: [
        CONV,
        { op: "Relu", inputs: ["c"], outputs: ["r"] },
        { op: "MaxPool", inputs: ["r"], outputs: ["p"], attributes: { kernel_shape: [1, 1] } },
        { op: "Concat", inputs: ["p", "r"], outputs: ["cat"], attributes: { axis: 1 } },
        { op: "Flatten", inputs: ["cat"], outputs: ["y"] },
      ],
      initializers: [weights("w", [4, 3, 3, 3], 1), weights("b", [4], 2)],
    }, "NHWC, then flattened in NCHW order");
    strictEqual(flattened.conversion.layout, "NHWC");
    strictEqual(count(flattened.conversion.model, "TRANSPOSE"), 2, "in, and before the reshape");

    const direct = await compare(server, {
      inputs: [{ name: "x", dims: [1, 3, 8, 8] }],
      outputs: [{ name: "y", dims: [1, 4 * 64] }],
      nodes: [CONV, { op: "Flatten", inputs: ["c"], outputs: ["y"] }],
      initializers: [weights("w", [4, 3, 3, 3], 1), weights("b", [4], 2)],
    }, "a convolution flattened");
    strictEqual(direct.conversion.layout, "NCHW", "two transposes for one convolution: no gain");
    strictEqual(count(direct.conversion.model, "TRANSPOSE"), 0);
  });
});

Deno.test("MobileNetV2 converts to NHWC with fused ReLU6 and one transpose, equal to onnxruntime", async () => {
  await withTestServer({}, async (server) => {
    const { conversion } = await compareBytes(
      server,
      mobilenetV2Onnx(1),
      { input: [1, 3, 224, 224] },
      "MobileNetV2",
      { fixed: true },
    );
    strictEqual(conversion.layout, "NHWC");
    strictEqual(count(conversion.model, "TRANSPOSE"), 1, "the input's");
    strictEqual(count(conversion.model, "RELU6"), 0, "every ReLU6 fused");
  });
});

Deno.test("a constant scale and shift after a convolution fold into its weights; one read elsewhere stays", async () => {
  await withTestServer({}, async (server) => {
    const scaleShift = (scale: string, shift: string): NodeSpec[] => [
      { op: "Mul", inputs: ["c", scale], outputs: ["m"] },
      { op: "Add", inputs: [shift, "m"], outputs: ["a"] },
      { op: "Relu", inputs: ["a"], outputs: ["y"] },
    ];
    const spec = (nodes: NodeSpec[], outputs = ["y"]): GraphSpec => {
      const base = convThen(nodes, outputs);
      base.initializers!.push(
        { name: "s", dims: [1], values: [0.75] },
        { name: "t", dims: [], values: [-0.25] },
        { name: "sc", dims: [4, 1, 1], values: [0.5, -1, 2, 1.5] },
        { name: "tc", dims: [1, 4, 1, 1], values: [0.1, 0.2, -0.3, 0.4] },
      );
      return base;
    };
    // One value each (PP-LCNetV3's learnable scale and bias), then one per channel: the
    // convolution alone remains, with the Relu after the shift as its activation.
    for (const [scale, shift] of [["s", "t"], ["sc", "tc"]]) {
      const { conversion } = await compare(server, spec(scaleShift(scale, shift)), `${scale}`);
      deepStrictEqual(types(conversion.model), ["CONV_2D"]);
      strictEqual(activationOf(conversion.model, "CONV_2D"), 1, "RELU moved onto the conv");
    }
    // The scaled value is also a graph output: the scale folds (the convolution now gives
    // that output), the shift after it stays.
    const { conversion } = await compare(
      server,
      spec(scaleShift("s", "t"), ["y", "m"]),
      "scaled value returned",
    );
    deepStrictEqual(types(conversion.model).filter((t) => t === "MUL" || t === "ADD"), ["ADD"]);
  });
});

Deno.test("hard swish written out (Add 3, Clip 0..6, Mul, Div 6) becomes HARD_SWISH, bit for bit", async () => {
  await withTestServer({}, async (server) => {
    const swish = (outputs: string[]): GraphSpec => ({
      inputs: [{ name: "x", dims: [2, 3, 4, 5] }],
      outputs: outputs.map((name) => ({ name, dims: [2, 3, 4, 5] })),
      nodes: [
        { op: "Add", inputs: ["x", "three"], outputs: ["p"] },
        { op: "Clip", inputs: ["p", "lo", "hi"], outputs: ["r"] },
        { op: "Mul", inputs: ["r", "x"], outputs: ["q"] },
        { op: "Div", inputs: ["q", "six"], outputs: ["y"] },
      ],
      initializers: [
        { name: "three", dims: [], values: [3] },
        { name: "six", dims: [], values: [6] },
        { name: "lo", dims: [], values: [0] },
        { name: "hi", dims: [], values: [6] },
      ],
    });
    // onnxruntime unoptimized runs the four operations as written, each rounded to float32;
    // HARD_SWISH rounds the same steps, so the values agree exactly (inputs in [-6, 6)).
    const { conversion, outputs: [y] } = await compareWithOnnxRuntime(
      server.url,
      onnxBytes(swish(["y"])),
      { x: [2, 3, 4, 5] },
      { scale: 12, ortOptimization: "disabled" },
    );
    deepStrictEqual(types(conversion.model), ["HARD_SWISH"]);
    strictEqual(y.maxAbsoluteError, 0);
    // The gate is also returned: the pattern stays as written.
    const kept = await compare(server, swish(["y", "r"]), "hard swish, gate returned");
    strictEqual(types(kept.conversion.model).includes("HARD_SWISH"), false);
  });
});

Deno.test("a ConvTranspose after a convolution runs in NHWC too, its Relu fused", async () => {
  await withTestServer({}, async (server) => {
    const spec = convThen([
      { op: "ConvTranspose", inputs: ["c", "up"], outputs: ["u"], attributes: { strides: [2, 2] } },
      { op: "Relu", inputs: ["u"], outputs: ["y"] },
    ], []);
    spec.outputs = [{ name: "y", dims: [1, 2, 16, 16] }];
    spec.initializers!.push(weights("up", [4, 2, 2, 2], 3));
    const { conversion } = await compare(server, spec, "Conv, ConvTranspose, Relu");
    deepStrictEqual(types(conversion.model), [
      "TRANSPOSE",
      "CONV_2D",
      "TRANSPOSE_CONV_2D",
      "TRANSPOSE",
    ]);
    strictEqual(activationOf(conversion.model, "TRANSPOSE_CONV_2D"), 1, "RELU");
  });
});
