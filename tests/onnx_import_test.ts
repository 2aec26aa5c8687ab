/**
 * `POST /v1/models` with `Content-Type: application/onnx`: the converted model's info names
 * its ONNX inputs and outputs; it compiles and executes like any model; every refusal is a
 * 400 naming its cause.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { NnClient } from "../client/mod.ts";
import { addModel, type TestServer, withTestServer } from "./server_fixture.ts";
import { ifNode, INT64, onnxBytes } from "../tools/onnx_graphs.ts";
import { chain, weights } from "./onnx/compare.ts";

async function upload(server: TestServer, bytes: Uint8Array, query = "") {
  const response = await fetch(`${server.url}/v1/models${query}`, {
    method: "POST",
    headers: { "content-type": "application/onnx" },
    body: new Uint8Array(bytes),
  });
  return { status: response.status, body: await response.json() };
}

const CLASSIFIER = onnxBytes({
  inputs: [{ name: "image", dims: ["batch", 3, 4, 4] }],
  outputs: [{ name: "probabilities", dims: ["batch", 2] }],
  nodes: [
    { op: "Conv", inputs: ["image", "w"], outputs: ["c"], attributes: { pads: [1, 1, 1, 1] } },
    { op: "Relu", inputs: ["c"], outputs: ["r"] },
    { op: "GlobalAveragePool", inputs: ["r"], outputs: ["p"] },
    { op: "Flatten", inputs: ["p"], outputs: ["f"] },
    { op: "Softmax", inputs: ["f"], outputs: ["probabilities"], attributes: { axis: 1 } },
  ],
  initializers: [weights("w", [2, 3, 3, 3], 5)],
});

Deno.test("an ONNX upload registers a model that names its inputs and outputs", async () => {
  await withTestServer({}, async (server) => {
    const { status, body } = await upload(server, CLASSIFIER, "?name=tiny-classifier");
    strictEqual(status, 201, JSON.stringify(body));
    strictEqual(body.name, "tiny-classifier");
    strictEqual(body.inputs[0].name, "image");
    deepStrictEqual(body.inputs[0].dimensions, [0, 3, 4, 4]);
    strictEqual(body.outputs[0].name, "probabilities");
    deepStrictEqual(body.onnx.inputs, [{
      name: "image",
      elementType: "float32",
      shape: ["batch", 3, 4, 4],
    }]);
    // Its convolution runs in NHWC: one transpose at the input instead of two per image op.
    strictEqual(body.onnx.layout, "NHWC");
    strictEqual(body.onnx.opset, 13);
    const again = await server.request("GET", `/v1/models/${body.id}`);
    deepStrictEqual(again.body, body);

    const compilation = await server.request("POST", "/v1/compilations", { model: body.id });
    strictEqual(compilation.status, 201, JSON.stringify(compilation.body));
    const execution = await server.request(
      "POST",
      `/v1/compilations/${compilation.body.id}/executions`,
      {
        inputs: [{
          dimensions: [2, 3, 4, 4],
          data: Array.from({ length: 96 }, (_, i) => (i % 7) / 7),
        }],
      },
    );
    strictEqual(execution.status, 200, JSON.stringify(execution.body));
    const out = execution.body.outputs as { dimensions: number[]; data: number[] }[];
    deepStrictEqual(out[0].dimensions, [2, 2]);
    ok(Math.abs(out[0].data[0] + out[0].data[1] - 1) < 1e-6, "softmax rows sum to 1");
  });
});

Deno.test("the import answer and the model's description say which extents stay to execution, what that costs and the way out", async () => {
  await withTestServer({}, async (server) => {
    const open = await upload(server, CLASSIFIER);
    strictEqual(open.status, 201, JSON.stringify(open.body));
    const note = (open.body.onnx.notes as string[]).find((n) => n.includes("'batch'"));
    ok(note, JSON.stringify(open.body.onnx.notes));
    ok(note.includes("first execution that brings it"), note);
    ok(note.includes("?shape=image:<batch>x3x4x4"), note);
    // GET /v1/models/{id} says the same: the input's symbolic extent, and the note.
    const info = await server.request("GET", `/v1/models/${open.body.id}`);
    const onnx = info.body.onnx as { inputs: { shape: unknown[] }[]; notes: string[] };
    deepStrictEqual(onnx.inputs[0].shape, ["batch", 3, 4, 4]);
    ok(onnx.notes.includes(note), JSON.stringify(onnx.notes));
    const fixed = await upload(server, CLASSIFIER, "?shape=image:1x3x4x4");
    strictEqual(fixed.status, 201, JSON.stringify(fixed.body));
    ok(
      !(fixed.body.onnx.notes as string[]).some((n) => n.includes("to execution")),
      JSON.stringify(fixed.body.onnx.notes),
    );
  });
});

Deno.test("?shape= fixes an input's symbolic extents at conversion", async () => {
  await withTestServer({}, async (server) => {
    const { status, body } = await upload(server, CLASSIFIER, "?shape=image:1x3x4x4");
    strictEqual(status, 201, JSON.stringify(body));
    deepStrictEqual(body.inputs[0].dimensions, [1, 3, 4, 4]);
    const bad = await upload(server, CLASSIFIER, "?shape=image:1x3x5x4");
    strictEqual(bad.status, 400);
    ok(/does not fit its ONNX shape/.test(bad.body.message), bad.body.message);
    for (const query of ["?shape=image", "?shape=image:?x?x?x?", "?shape=image:0x3x4x4"]) {
      const malformed = await upload(server, CLASSIFIER, query);
      strictEqual(malformed.status, 400, query);
      ok(/is not input:DxDx/.test(malformed.body.message), malformed.body.message);
    }
    // `?` keeps an extent as the file has it: the batch stays symbolic, or 3 stays 3.
    const keepBatch = await upload(server, CLASSIFIER, "?shape=image:?x3x4x4");
    deepStrictEqual(keepBatch.body.inputs[0].dimensions, [0, 3, 4, 4]);
    const fixBatch = await upload(server, CLASSIFIER, "?shape=image:2x?x4x4");
    deepStrictEqual(fixBatch.body.inputs[0].dimensions, [2, 3, 4, 4]);
  });
});

Deno.test("every refusal of an ONNX upload is a 400 naming its cause", async () => {
  await withTestServer({}, async (server) => {
    const cases: [Uint8Array, RegExp][] = [
      [new Uint8Array(), /the body is empty/],
      [new Uint8Array([0x0a, 0xff, 0xff, 0xff]), /not a valid ONNX protobuf|holds no graph/],
      [
        CLASSIFIER.subarray(0, CLASSIFIER.length - 40),
        /not a valid ONNX protobuf|holds no graph|is not produced/,
      ],
      [
        onnxBytes(
          chain([1, 4], [1, 4], [{ op: "Celu", inputs: ["x"], outputs: ["y"], name: "odd" }]),
        ),
        /node 'odd' \(Celu\): op type Celu is not supported/,
      ],
    ];
    for (const [bytes, pattern] of cases) {
      const { status, body } = await upload(server, bytes);
      strictEqual(status, 400, JSON.stringify(body));
      strictEqual(body.status, "INVALID_ARGUMENT");
      ok(pattern.test(body.message), body.message);
    }
  });
});

Deno.test("the SDK imports an ONNX file, compiles it by id and runs it", async () => {
  await withTestServer({}, async (server) => {
    const client = new NnClient({ baseUrl: server.url });
    const info = await client.importOnnx(CLASSIFIER, {
      name: "sdk",
      shapes: { image: [1, 3, 4, 4] },
    });
    strictEqual(info.name, "sdk");
    strictEqual(info.inputs[0].name, "image");
    deepStrictEqual(info.inputs[0].dimensions, [1, 3, 4, 4]);
    const compilation = await client.compile(info.id);
    const result = await compilation.execution().setInput(0, new Float32Array(48).fill(0.5))
      .compute();
    deepStrictEqual(result.outputs[0].dimensions, [1, 2]);
    const [a, b] = result.outputs[0].data as Float32Array;
    ok(Math.abs(a + b - 1) < 1e-6, "softmax sums to 1");
  });
});

Deno.test("executions of an imported model take inputs by name and name their outputs", async () => {
  await withTestServer({}, async (server) => {
    const { body: model } = await upload(server, CLASSIFIER);
    const compilation = await server.request("POST", "/v1/compilations", { model: model.id });
    const path = `/v1/compilations/${compilation.body.id}/executions`;
    const image = { dimensions: [1, 3, 4, 4], data: Array.from({ length: 48 }, (_, i) => i / 48) };
    const named = await server.request("POST", path, { inputs: { image } });
    strictEqual(named.status, 200, JSON.stringify(named.body));
    const listed = await server.request("POST", path, { inputs: [image] });
    strictEqual(listed.status, 200, JSON.stringify(listed.body));
    deepStrictEqual(named.body.outputs, listed.body.outputs);
    const [output] = named.body.outputs as { name: string; dimensions: number[] }[];
    strictEqual(output.name, "probabilities");
    deepStrictEqual(output.dimensions, [1, 2]);

    const unknown = await server.request("POST", path, { inputs: { picture: image } });
    strictEqual(unknown.status, 400);
    ok(/no input named 'picture' \(its inputs: image\)/.test(unknown.body.message as string));
    const missing = await server.request("POST", path, { inputs: {} });
    strictEqual(missing.status, 400);
    ok(/input 'image' is missing/.test(missing.body.message as string));

    const plain = await server.request("POST", "/v1/models", addModel(2));
    const plainCompilation = await server.request("POST", "/v1/compilations", {
      model: plain.body.id,
    });
    const byName = await server.request(
      "POST",
      `/v1/compilations/${plainCompilation.body.id}/executions`,
      { inputs: { a: { data: [1, 2] } } },
    );
    strictEqual(byName.status, 400);
    ok(/inputs by name need a model whose inputs have names/.test(byName.body.message as string));
  });
});

Deno.test("?view=model returns the converted model as JSON that registers again as it is", async () => {
  await withTestServer({}, async (server) => {
    const { body: info } = await upload(server, CLASSIFIER);
    const view = await server.request("GET", `/v1/models/${info.id}?view=model`);
    strictEqual(view.status, 200, JSON.stringify(view.body));
    const operations = view.body.operations as { type: string }[];
    // The Relu is the convolution's fused activation; the image operations run in NHWC.
    deepStrictEqual(operations.map((o) => o.type), [
      "TRANSPOSE",
      "CONV_2D",
      "MEAN",
      "RESHAPE",
      "SOFTMAX",
    ]);
    strictEqual(view.body.pools, undefined, "weights are inline");
    const again = await server.request("POST", "/v1/models", view.body);
    strictEqual(again.status, 201, JSON.stringify(again.body));
    strictEqual(again.body.checksum, info.checksum, "the same canonical model");
    const plainInfo = await server.request("GET", `/v1/models/${info.id}?view=info`);
    deepStrictEqual(plainInfo.body, info);
    const bad = await server.request("GET", `/v1/models/${info.id}?view=onnx`);
    strictEqual(bad.status, 400);
  });
});

Deno.test("int64 inputs become TENSOR_INT32: the import says so and executions refuse values beyond int32", async () => {
  await withTestServer({}, async (server) => {
    // Token ids in, ids + 1 out (int64 in the ONNX file).
    const bytes = onnxBytes({
      inputs: [{ name: "ids", dims: [3], type: INT64 }],
      outputs: [{ name: "next", dims: [3], type: INT64 }],
      nodes: [{ op: "Add", inputs: ["ids", "one"], outputs: ["next"] }],
      initializers: [{ name: "one", dims: [1], values: [1], int64: true }],
    });
    const { status, body: info } = await upload(server, bytes);
    strictEqual(status, 201, JSON.stringify(info));
    deepStrictEqual(info.inputs[0].type, "TENSOR_INT32");
    ok(
      info.onnx.notes.some((note: string) => /'ids' is int64 .* values must fit int32/.test(note)),
      JSON.stringify(info.onnx.notes),
    );
    const compilation = await server.request("POST", "/v1/compilations", { model: info.id });
    const path = `/v1/compilations/${compilation.body.id}/executions`;
    const fits = await server.request("POST", path, {
      inputs: { ids: { data: [0, 2147483646, -2147483648] } },
    });
    strictEqual(fits.status, 200, JSON.stringify(fits.body));
    const [next] = fits.body.outputs as { data: number[] }[];
    deepStrictEqual(next.data, [1, 2147483647, -2147483647]);
    const beyond = await server.request("POST", path, {
      inputs: { ids: { data: [1, 2147483648, 3] } },
    });
    strictEqual(beyond.status, 400, JSON.stringify(beyond.body));
    const message = beyond.body.message as string;
    ok(/2147483648 does not fit TENSOR_INT32/.test(message), message);
  });
  const tooBig = onnxBytes({
    inputs: [{ name: "ids", dims: [1], type: INT64 }],
    outputs: [{ name: "next", dims: [1], type: INT64 }],
    nodes: [{ op: "Add", inputs: ["ids", "big"], outputs: ["next"] }],
    initializers: [{ name: "big", dims: [1], values: [2 ** 40], int64: true }],
  });
  await withTestServer({}, async (server) => {
    const { status, body } = await upload(server, tooBig);
    strictEqual(status, 400);
    ok(/1099511627776, outside the int32 range/.test(body.message), body.message);
  });
});

Deno.test("?value= fixes an input's values at conversion: an If on it keeps only the branch taken", async () => {
  // y = relu(x) at 16 kHz; the 8 kHz branch reshapes x to [4, 4], which its 6 values cannot
  // fill (as Silero VAD's 8 kHz branch cannot take a 16 kHz frame).
  const bytes = onnxBytes({
    inputs: [{ name: "x", dims: [2, 3] }, { name: "sr", dims: [], type: INT64 }],
    outputs: [{ name: "y", dims: [2, 3] }],
    nodes: [
      { op: "Equal", inputs: ["sr", "rate"], outputs: ["is16k"] },
      ifNode(
        "is16k",
        "y",
        {
          output: { name: "t", dims: [2, 3] },
          nodes: [{ op: "Relu", inputs: ["x"], outputs: ["t"] }],
        },
        {
          output: { name: "e", dims: [4, 4] },
          nodes: [{ op: "Reshape", inputs: ["x", "square"], outputs: ["e"], name: "to_square" }],
        },
        "by_rate",
      ),
    ],
    initializers: [
      { name: "rate", dims: [], values: [16000], int64: true },
      { name: "square", dims: [2], values: [4, 4], int64: true },
    ],
  });
  await withTestServer({}, async (server) => {
    // With the rate at execution, the branch that cannot convert fails only the executions
    // that take it (as onnxruntime fails them), with the reason; the import says so.
    const runtime = await upload(server, bytes);
    strictEqual(runtime.status, 201, JSON.stringify(runtime.body));
    const note = (runtime.body.onnx.notes as string[]).find((n) => n.includes("'by_rate'"));
    ok(
      note && /else_branch does not convert: node 'to_square' \(Reshape\).*\?value=/.test(note),
      JSON.stringify(runtime.body.onnx.notes),
    );
    const compiled = await server.request("POST", "/v1/compilations", { model: runtime.body.id });
    strictEqual(compiled.status, 201, JSON.stringify(compiled.body));
    const at = (rate: number) =>
      server.request("POST", `/v1/compilations/${compiled.body.id}/executions`, {
        inputs: { x: { data: [-1, 2, -3, 4, -5, 6] }, sr: { dimensions: [], data: [rate] } },
      });
    const taken = await at(16000);
    strictEqual(taken.status, 200, JSON.stringify(taken.body));
    const [y16k] = taken.body.outputs as { data: number[] }[];
    deepStrictEqual(y16k.data, [0, 2, 0, 4, 0, 6]);
    const refused = await at(8000);
    strictEqual(refused.status, 400, JSON.stringify(refused.body));
    ok(
      /'by_rate'.*else_branch does not convert: node 'to_square'.*the condition 'is16k' false/
        .test(String(refused.body.message)),
      String(refused.body.message),
    );

    const { status, body: info } = await upload(server, bytes, "?value=sr:16000");
    strictEqual(status, 201, JSON.stringify(info));
    deepStrictEqual(info.inputs.map((i: { name: string }) => i.name), ["x"]);
    ok(
      info.onnx.notes.some((n: string) => /'sr' is fixed to \[16000\] at import/.test(n)),
      JSON.stringify(info.onnx.notes),
    );
    const model = await server.request("GET", `/v1/models/${info.id}?view=model`);
    const operations = (model.body as { operations: { type: string }[] }).operations;
    deepStrictEqual(operations.map((o) => o.type), ["RELU"]);
    const compilation = await server.request("POST", "/v1/compilations", { model: info.id });
    const run = await server.request(
      "POST",
      `/v1/compilations/${compilation.body.id}/executions`,
      { inputs: { x: { data: [-1, 2, -3, 4, -5, 6] } } },
    );
    strictEqual(run.status, 200, JSON.stringify(run.body));
    const [y] = run.body.outputs as { data: number[] }[];
    deepStrictEqual(y.data, [0, 2, 0, 4, 0, 6]);

    const refusals: [string, RegExp][] = [
      ["?value=sr:8000", /node 'to_square' \(Reshape\)/],
      ["?value=sr", /value 'sr' is not input:V/],
      ["?value=sr:", /value 'sr:' is not input:V/],
      ["?value=rate:1", /a value is given for 'rate', which is not an input/],
      ["?value=sr:1,2", /2 values given for input 'sr' of shape \[\]/],
      ["?value=sr:1.5", /values given for input 'sr' are not all int64 values/],
    ];
    for (const [query, pattern] of refusals) {
      const refused = await upload(server, bytes, query);
      strictEqual(refused.status, 400, `${query}: ${JSON.stringify(refused.body)}`);
      ok(pattern.test(refused.body.message), `${query}: ${refused.body.message}`);
    }
  });
});

Deno.test("?shape= and ?value= repeat for several inputs, over HTTP and from the SDK", async () => {
  // y = a + b * k, every input of its own; k an int64 scale fixed at import.
  const bytes = onnxBytes({
    inputs: [
      { name: "a", dims: ["n", 3] },
      { name: "b", dims: ["n", 3] },
      { name: "k", dims: [1], type: INT64 },
      { name: "j", dims: [1], type: INT64 },
    ],
    outputs: [{ name: "y", dims: ["n", 3] }],
    nodes: [
      { op: "Add", inputs: ["k", "j"], outputs: ["kj"] },
      { op: "Cast", inputs: ["kj"], outputs: ["scale"], attributes: { to: 1 } },
      { op: "Mul", inputs: ["b", "scale"], outputs: ["bs"] },
      { op: "Add", inputs: ["a", "bs"], outputs: ["y"] },
    ],
  });
  await withTestServer({}, async (server) => {
    const query = "?shape=a:2x3&shape=b:2x3&value=k:2&value=j:1";
    const { status, body } = await upload(server, bytes, query);
    strictEqual(status, 201, JSON.stringify(body));
    deepStrictEqual(body.inputs.map((i: { dimensions: number[] }) => i.dimensions), [[2, 3], [
      2,
      3,
    ]]);
    const client = new NnClient({ baseUrl: server.url });
    const info = await client.importOnnx(bytes, {
      shapes: { a: [2, 3], b: [2, 3] },
      values: { k: [2], j: [1] },
    });
    deepStrictEqual(info.inputs.map((i) => i.name), ["a", "b"]);
    const compilation = await server.request("POST", "/v1/compilations", { model: info.id });
    const run = await server.request(
      "POST",
      `/v1/compilations/${compilation.body.id}/executions`,
      { inputs: { a: { data: [1, 2, 3, 4, 5, 6] }, b: { data: [1, 1, 1, 2, 2, 2] } } },
    );
    strictEqual(run.status, 200, JSON.stringify(run.body));
    const [y] = run.body.outputs as { data: number[] }[];
    deepStrictEqual(y.data, [4, 5, 6, 10, 11, 12]);
  });
});
