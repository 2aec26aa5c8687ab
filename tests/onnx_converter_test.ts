/**
 * The ONNX converter against onnxruntime-node: small graphs built here (one per op type and
 * attribute form), converted, registered, compiled and executed through a real server, and
 * compared with onnxruntime on the same seeded inputs (1e-4 absolute or 1e-3 relative).
 */
import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import { convertOnnx, groupNotes } from "../converter/onnx/convert.ts";
import { DriverError } from "../nnapi/errors.ts";
import { withTestServer } from "./server_fixture.ts";
import { type GraphSpec, type NodeSpec, onnxBytes } from "../tools/onnx_graphs.ts";
import { chain, compare, compareBytes, weights } from "./onnx/compare.ts";

Deno.test("Conv in its three NNAPI forms, with padding modes and BatchNormalization folded", async () => {
  await withTestServer({}, async (server) => {
    await compare(
      server,
      chain([1, 3, 8, 8], [1, 4, 8, 8], [
        { op: "Conv", inputs: ["x", "w", "b"], outputs: ["c"], attributes: { pads: [1, 1, 1, 1] } },
        { op: "Relu", inputs: ["c"], outputs: ["y"] },
      ], [weights("w", [4, 3, 3, 3], 2), weights("b", [4], 3)]),
      "conv 3x3 pad 1 + relu",
    );
    const { conversion: folded } = await compare(
      server,
      chain([1, 3, 9, 9], [1, 4, 5, 5], [
        {
          op: "Conv",
          inputs: ["x", "w"],
          outputs: ["c"],
          attributes: { strides: [2, 2], auto_pad: "SAME_UPPER" },
        },
        {
          op: "BatchNormalization",
          inputs: ["c", "gamma", "beta", "mean", "var"],
          outputs: ["y"],
          attributes: { epsilon: { float: 1e-3 } },
        },
      ], [
        weights("w", [4, 3, 3, 3], 4),
        weights("gamma", [4], 5),
        weights("beta", [4], 6),
        weights("mean", [4], 7),
        { name: "var", dims: [4], values: [0.5, 1, 1.5, 2] },
      ]),
      "conv stride 2 SAME_UPPER + batchnorm",
    );
    ok(
      folded.notes.some((n) => /^BatchNormalization folded into the Conv before it: '/.test(n)),
      folded.notes.join(),
    );
    strictEqual(folded.model.operations.length, 1, "the batch norm is folded away");
    await compare(
      server,
      chain([1, 4, 10, 10], [1, 8, 6, 6], [{
        op: "Conv",
        inputs: ["x", "w", "b"],
        outputs: ["y"],
        attributes: { group: 4, dilations: [2, 2], pads: [0, 0, 0, 0] },
      }], [weights("w", [8, 1, 3, 3], 8), weights("b", [8], 9)]),
      "depthwise, multiplier 2, dilation 2",
    );
    await compare(
      server,
      chain([1, 4, 6, 6], [1, 6, 6, 6], [{
        op: "Conv",
        inputs: ["x", "w"],
        outputs: ["y"],
        attributes: { group: 2, pads: [1, 1, 1, 1] },
      }], [weights("w", [6, 2, 3, 3], 10)]),
      "grouped conv",
    );
  });
});

Deno.test("pooling: MaxPool with ceil_mode, AveragePool with and without padding counted, global pools", async () => {
  await withTestServer({}, async (server) => {
    await compare(
      server,
      chain([1, 2, 7, 7], [1, 2, 4, 4], [{
        op: "MaxPool",
        inputs: ["x"],
        outputs: ["y"],
        attributes: { kernel_shape: [3, 3], strides: [2, 2], pads: [1, 1, 0, 0], ceil_mode: 1 },
      }]),
      "maxpool ceil",
    );
    await compare(
      server,
      chain([1, 2, 5, 6], [1, 2, 5, 6], [{
        op: "MaxPool",
        inputs: ["x"],
        outputs: ["y"],
        attributes: { kernel_shape: [3, 2], pads: [2, 0, 0, 1] },
      }]),
      "maxpool asymmetric pads",
    );
    for (const countIncludePad of [0, 1]) {
      await compare(
        server,
        chain([1, 2, 6, 6], [1, 2, 3, 3], [{
          op: "AveragePool",
          inputs: ["x"],
          outputs: ["y"],
          attributes: {
            kernel_shape: [3, 3],
            strides: [2, 2],
            pads: [1, 1, 1, 1],
            count_include_pad: countIncludePad,
          },
        }]),
        `avgpool count_include_pad ${countIncludePad}`,
      );
    }
    await compare(
      server,
      chain([2, 3, 5, 4], [2, 3, 1, 1], [{
        op: "GlobalAveragePool",
        inputs: ["x"],
        outputs: ["y"],
      }]),
      "global average pool",
    );
    await compare(
      server,
      chain([2, 3, 5, 4], [2, 3, 1, 1], [{ op: "GlobalMaxPool", inputs: ["x"], outputs: ["y"] }]),
      "global max pool",
    );
  });
});

Deno.test("Gemm and MatMul with constant weights become FULLY_CONNECTED", async () => {
  await withTestServer({}, async (server) => {
    await compare(
      server,
      chain([2, 6], [2, 5], [{
        op: "Gemm",
        inputs: ["x", "w", "c"],
        outputs: ["y"],
        attributes: { transB: 1, alpha: { float: 0.5 }, beta: { float: 2 } },
      }], [weights("w", [5, 6], 11), weights("c", [5], 12)]),
      "gemm transB alpha beta",
    );
    await compare(
      server,
      chain([3, 6], [3, 4], [{ op: "Gemm", inputs: ["x", "w"], outputs: ["y"] }], [
        weights("w", [6, 4], 13),
      ]),
      "gemm without C",
    );
    await compare(
      server,
      chain([2, 3, 6], [2, 3, 4], [{ op: "MatMul", inputs: ["x", "w"], outputs: ["y"] }], [
        weights("w", [6, 4], 14),
      ]),
      "batched matmul",
    );
  });
});

Deno.test("elementwise arithmetic with broadcasting and every activation", async () => {
  await withTestServer({}, async (server) => {
    const dims = [1, 3, 4, 4];
    const binary = ["Add", "Sub", "Mul", "Div"];
    for (const op of binary) {
      await compare(
        server,
        chain(dims, dims, [{ op, inputs: ["x", "k"], outputs: ["y"] }], [
          { name: "k", dims: [3, 1, 1], values: [0.5, -2, 3] },
        ]),
        op,
      );
    }
    const unary: [string, NodeSpec["attributes"]?][] = [
      ["Relu"],
      ["Sigmoid"],
      ["Tanh"],
      ["Exp"],
      ["Abs"],
      ["Neg"],
      ["Sin"],
      ["Floor"],
      ["LeakyRelu", { alpha: { float: 0.2 } }],
      ["Elu", { alpha: { float: 0.7 } }],
      ["HardSigmoid", { alpha: { float: 0.3 }, beta: { float: 0.4 } }],
      ["HardSwish"],
    ];
    for (const [op, attributes] of unary) {
      await compare(
        server,
        chain(dims, dims, [{ op, inputs: ["x"], outputs: ["y"], attributes }], [], 14),
        op,
      );
    }
    for (const [lo, hi] of [[0, 6], [-1, 1], [-0.5, 0.7]]) {
      await compare(
        server,
        chain(dims, dims, [{ op: "Clip", inputs: ["x", "lo", "hi"], outputs: ["y"] }], [
          { name: "lo", dims: [], values: [lo] },
          { name: "hi", dims: [], values: [hi] },
        ]),
        `Clip(${lo}, ${hi})`,
      );
    }
    await compare(
      server,
      chain(
        dims,
        dims,
        [{
          op: "Clip",
          inputs: ["x"],
          outputs: ["y"],
          attributes: { min: { float: 0 }, max: { float: 6 } },
        }],
        [],
        7,
      ),
      "Clip opset 7",
    );
    await compare(
      server,
      chain(dims, dims, [{ op: "PRelu", inputs: ["x", "slope"], outputs: ["y"] }], [
        { name: "slope", dims: [3, 1, 1], values: [0.1, 0.2, 0.3] },
      ]),
      "PRelu",
    );
  });
});

Deno.test("shape operators, softmax, and a Shape-driven Reshape folded at conversion", async () => {
  await withTestServer({}, async (server) => {
    await compare(
      server,
      chain(
        [2, 3, 2, 2],
        [2, 12],
        [
          { op: "Flatten", inputs: ["x"], outputs: ["f"] },
          { op: "Softmax", inputs: ["f"], outputs: ["y"], attributes: { axis: 1 } },
        ],
        [],
        11,
      ),
      "flatten + softmax opset 11",
    );
    await compare(
      server,
      chain(
        [2, 3, 2, 2],
        [2, 3, 2, 2],
        [
          { op: "Softmax", inputs: ["x"], outputs: ["y"], attributes: { axis: 1 } },
        ],
        [],
        11,
      ),
      "softmax opset 11 over trailing axes",
    );
    await compare(
      server,
      chain([2, 3, 2, 2], [2, 3, 2, 2], [
        { op: "LogSoftmax", inputs: ["x"], outputs: ["y"], attributes: { axis: 1 } },
      ]),
      "log softmax opset 13 axis 1",
    );
    const { conversion: folded } = await compare(
      server,
      chain([2, 3, 4, 5], [2, 60], [
        { op: "Shape", inputs: ["x"], outputs: ["s"] },
        { op: "Gather", inputs: ["s", "zero"], outputs: ["n"], attributes: { axis: 0 } },
        { op: "Unsqueeze", inputs: ["n", "axes"], outputs: ["n1"] },
        { op: "Concat", inputs: ["n1", "minus1"], outputs: ["shape"], attributes: { axis: 0 } },
        { op: "Reshape", inputs: ["x", "shape"], outputs: ["y"] },
      ], [
        { name: "zero", dims: [], values: [0], int64: true },
        { name: "axes", dims: [1], values: [0], int64: true },
        { name: "minus1", dims: [1], values: [-1], int64: true },
      ]),
      "shape-driven reshape",
    );
    deepStrictEqual(folded.model.operations.map((o) => o.type), ["RESHAPE"]);
    await compare(
      server,
      chain([2, 3, 4], [4, 2, 3], [
        { op: "Transpose", inputs: ["x"], outputs: ["y"], attributes: { perm: [2, 0, 1] } },
      ]),
      "transpose",
    );
    await compare(
      server,
      chain([2, 6, 4], [2, 2, 2], [{
        op: "Slice",
        inputs: ["x", "starts", "ends", "axes", "steps"],
        outputs: ["y"],
      }], [
        { name: "starts", dims: [2], values: [5, 1], int64: true },
        { name: "ends", dims: [2], values: [1, 1000], int64: true },
        { name: "axes", dims: [2], values: [1, -1], int64: true },
        { name: "steps", dims: [2], values: [-2, 2], int64: true },
      ]),
      "slice with negative step and a clamped end",
    );
    await compare(
      server,
      {
        inputs: [{ name: "a", dims: [2, 3] }, { name: "b", dims: [2, 1, 3] }],
        outputs: [{ name: "y", dims: [2, 2, 3] }],
        nodes: [
          { op: "Unsqueeze", inputs: ["a", "one"], outputs: ["a1"] },
          { op: "Concat", inputs: ["a1", "b"], outputs: ["c"], attributes: { axis: 1 } },
          { op: "Identity", inputs: ["c"], outputs: ["y"] },
        ],
        initializers: [{ name: "one", dims: [1], values: [1], int64: true }],
      },
      "unsqueeze + concat + identity",
    );
  });
});

function refusal(spec: GraphSpec | Uint8Array, pattern: RegExp) {
  throws(
    () => convertOnnx(spec instanceof Uint8Array ? spec : onnxBytes(spec)),
    (error: unknown) =>
      error instanceof DriverError && error.status === "INVALID_ARGUMENT" &&
      pattern.test(error.message),
  );
}

Deno.test("every refusal names its cause", () => {
  refusal(
    chain([1, 4], [1, 4], [{ op: "Celu", inputs: ["x"], outputs: ["y"], name: "odd" }]),
    /node 'odd' \(Celu\): op type Celu is not supported/,
  );
  refusal(new Uint8Array([0x0a, 0xff, 0xff, 0xff]), /not a valid ONNX protobuf|holds no graph/);
  refusal(new TextEncoder().encode('{"operands": []}'), /not a valid ONNX protobuf|holds no graph/);
  const good = onnxBytes(chain([1, 4], [1, 4], [{ op: "Relu", inputs: ["x"], outputs: ["y"] }]));
  refusal(good.subarray(0, good.length - 7), /not a valid ONNX protobuf|no graph|not produced/);
  refusal(new Uint8Array(), /the body is empty/);
  refusal(
    chain([1, 4], [1, 4], [{ op: "Relu", inputs: ["x"], outputs: ["y"] }], [], 5),
    /opset 5 is outside/,
  );
  refusal(
    chain([1, 2, 4, 4], [1, 2, 4, 4], [{
      op: "Conv",
      inputs: ["x", "x"],
      outputs: ["y"],
      name: "c",
    }]),
    /node 'c' \(Conv\): Conv's weights \('x'\) must be a constant/,
  );
  refusal(
    chain([1, 4], [1, 4], [{ op: "Relu", inputs: ["nowhere"], outputs: ["y"], name: "r" }]),
    /node 'r' \(Relu\): input 'nowhere' is not produced/,
  );
});

Deno.test("Shape of a dynamic extent drives a Reshape; computing with it runs at execution", async () => {
  const batchFlatten = (target: NodeSpec[]): GraphSpec => ({
    inputs: [{ name: "x", dims: ["N", 3, 4] }],
    outputs: [{ name: "y", dims: ["N", 12] }],
    nodes: [
      ...target,
      { op: "Reshape", inputs: ["x", "target"], outputs: ["r"] },
      { op: "Relu", inputs: ["r"], outputs: ["y"] },
    ],
    initializers: [
      { name: "zero", dims: [1], values: [0], int64: true },
      { name: "rest", dims: [1], values: [-1], int64: true },
      { name: "twelve", dims: [1], values: [12], int64: true },
    ],
    opset: 15,
  });
  // Shape(x)[0:1] ++ [-1]: the batch symbol cancels against x's own batch extent.
  const exported = batchFlatten([
    { op: "Shape", inputs: ["x"], outputs: ["s"] },
    { op: "Gather", inputs: ["s", "zero"], outputs: ["n"], attributes: { axis: 0 } },
    { op: "Concat", inputs: ["n", "rest"], outputs: ["target"], attributes: { axis: 0 } },
  ]);
  // Shape(x)[0:1] ++ [12]: the one unknown extent becomes RESHAPE's -1.
  const explicit = batchFlatten([
    { op: "Shape", inputs: ["x"], outputs: ["s"], attributes: { end: 1 } },
    { op: "Concat", inputs: ["s", "twelve"], outputs: ["target"], attributes: { axis: 0 } },
  ]);
  // [0, -1]: ONNX's copy of the input extent, then the rest inferred.
  const copied = batchFlatten([
    { op: "Concat", inputs: ["zero", "rest"], outputs: ["target"], attributes: { axis: 0 } },
  ]);
  await withTestServer({}, async (server) => {
    for (const [what, spec] of [["exported", exported], ["explicit", explicit], ["copy", copied]]) {
      for (const n of [1, 3]) {
        const { conversion } = await compareBytes(
          server,
          onnxBytes(spec as GraphSpec),
          { x: [n, 3, 4] },
          `${what} batch ${n}`,
        );
        deepStrictEqual(conversion.outputs[0].dimensions, [0, 12], `${what}: a dynamic batch`);
        const reshapes = conversion.model.operations.filter((o) => o.type === "RESHAPE");
        strictEqual(reshapes.length, 1, `${what}: one RESHAPE`);
      }
    }
  });
  // A comparison on a dynamic extent cannot fold: it is computed at execution (SHAPE).
  const computed = onnxBytes({
    inputs: [{ name: "x", dims: ["N", 3] }],
    outputs: [{ name: "y", dims: ["N", 3] }],
    nodes: [
      { op: "Shape", inputs: ["x"], outputs: ["s"] },
      { op: "Gather", inputs: ["s", "zero"], outputs: ["n"], attributes: { axis: 0 } },
      { op: "Equal", inputs: ["n", "one"], outputs: ["is_one"] },
      { op: "Cast", inputs: ["is_one"], outputs: ["f"], attributes: { to: 1 } },
      { op: "Mul", inputs: ["x", "f"], outputs: ["y"] },
    ],
    initializers: [
      { name: "zero", dims: [1], values: [0], int64: true },
      { name: "one", dims: [1], values: [1], int64: true },
    ],
  });
  await withTestServer({}, async (server) => {
    for (const n of [1, 2]) {
      const { conversion } = await compareBytes(server, computed, { x: [n, 3] }, `batch ${n}`);
      ok(conversion.model.operations.some((o) => o.type === "SHAPE"));
    }
  });
});

Deno.test("an ONNX scalar input has shape [1] in the model, the import says so, and executions may give it dimensions []; a scalar output is answered with dimensions []", async () => {
  const spec: GraphSpec = {
    inputs: [{ name: "x", dims: [2, 3] }, { name: "gain", dims: [] }],
    outputs: [{ name: "y", dims: [2, 3] }],
    nodes: [{ op: "Mul", inputs: ["x", "gain"], outputs: ["y"] }],
  };
  await withTestServer({}, async (server) => {
    const { conversion } = await compare(server, spec, "scalar input");
    deepStrictEqual(conversion.inputs[1].dimensions, [1]);
    deepStrictEqual(conversion.inputs[1].shape, []);
    ok(
      conversion.notes.includes(
        "input 'gain' is a scalar in the ONNX model and has shape [1] here",
      ),
    );
    // Executions may give the scalar `dimensions: []`, as onnxruntime takes it, by position
    // or by name; a [1]-shaped input of a model registered as NNAPI JSON keeps its rule.
    const imported = await fetch(`${server.url}/v1/models`, {
      method: "POST",
      headers: { "content-type": "application/onnx" },
      body: new Uint8Array(onnxBytes(spec)),
    });
    const model = await imported.json();
    const compiled = await server.request("POST", "/v1/compilations", { model: model.id });
    const x = { data: [1, 2, 3, 4, 5, 6], dimensions: [2, 3] };
    const gain = { data: [2], dimensions: [] };
    for (const inputs of [[x, gain], { x, gain }]) {
      const result = await server.request(
        "POST",
        `/v1/compilations/${compiled.body.id}/executions`,
        { inputs },
      );
      strictEqual(result.status, 200, JSON.stringify(result.body));
      deepStrictEqual((result.body.outputs as { data: number[] }[])[0].data, [2, 4, 6, 8, 10, 12]);
    }
    // A scalar output is answered as one: dimensions [], as onnxruntime gives it.
    const sum: GraphSpec = {
      inputs: [{ name: "x", dims: [2, 3] }],
      outputs: [{ name: "total", dims: [] }],
      nodes: [{ op: "ReduceSum", inputs: ["x"], outputs: ["total"], attributes: { keepdims: 0 } }],
    };
    const summed = await (await fetch(`${server.url}/v1/models`, {
      method: "POST",
      headers: { "content-type": "application/onnx" },
      body: new Uint8Array(onnxBytes(sum)),
    })).json();
    deepStrictEqual(summed.outputs[0].dimensions, [1]);
    const summing = await server.request("POST", "/v1/compilations", { model: summed.id });
    const total = await server.request(
      "POST",
      `/v1/compilations/${summing.body.id}/executions`,
      { inputs: [x] },
    );
    strictEqual(total.status, 200, JSON.stringify(total.body));
    deepStrictEqual(total.body.outputs, [{ name: "total", dimensions: [], data: [21] }]);
    deepStrictEqual(total.body.outputShapes, [{ dimensions: [], isSufficient: true }]);
  });
});

Deno.test("Slice along extents known only at execution: negative indices, INT64 edges, steps", async () => {
  const INT64_MAX = Number.MAX_SAFE_INTEGER; // onnxBytes writes int64; exporters use 2^63 - 1
  const cases: [string, number[], number[], number[], number[]][] = [
    ["from 1 to the end", [1], [INT64_MAX], [2], [1]],
    ["the last 3", [-3], [INT64_MAX], [2], [1]],
    ["all but the first and last", [1], [-1], [2], [1]],
    ["reversed", [-1], [-INT64_MAX], [2], [-1]],
    ["every other, two axes", [0, 1], [INT64_MAX, -1], [0, 2], [1, 2]],
  ];
  await withTestServer({}, async (server) => {
    for (const [what, starts, ends, axes, steps] of cases) {
      const bytes = onnxBytes({
        inputs: [{ name: "x", dims: ["N", 3, "L"] }],
        outputs: [{ name: "y", dims: ["N", 3, "M"] }],
        nodes: [{ op: "Slice", inputs: ["x", "starts", "ends", "axes", "steps"], outputs: ["y"] }],
        initializers: [
          { name: "starts", dims: [starts.length], values: starts, int64: true },
          { name: "ends", dims: [ends.length], values: ends, int64: true },
          { name: "axes", dims: [axes.length], values: axes, int64: true },
          { name: "steps", dims: [steps.length], values: steps, int64: true },
        ],
      });
      for (const shape of [[1, 3, 7], [2, 3, 10]]) {
        await compareBytes(server, bytes, { x: shape }, `Slice ${what} of [${shape}]`);
      }
    }
  });
});

Deno.test("notes about many nodes of one kind come as one line naming the first few", () => {
  const folds = Array.from(
    { length: 35 },
    (_, k) => `BatchNormalization folded into the Conv before it: 'bn${k}'`,
  );
  deepStrictEqual(
    groupNotes([
      "input 'x' is a scalar in the ONNX model and has shape [1] here",
      ...folds,
      "ArgMax returns int32 indices (int64 in ONNX): 'best'",
    ]),
    [
      "input 'x' is a scalar in the ONNX model and has shape [1] here",
      "BatchNormalization folded into the Conv before it (35 nodes: 'bn0', 'bn1', 'bn2' and 32 more)",
      "ArgMax returns int32 indices (int64 in ONNX): 'best'",
    ],
  );
});
