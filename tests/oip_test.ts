/**
 * The Open Inference Protocol (KServe v2 REST) at `/v2`, driven by the SDK's protocol client
 * (`client/v2.ts`, written from the specification) and by raw requests shaped as
 * `tritonclient.http` sends them (compact JSON, no Content-Type, binary data after the JSON
 * with Inference-Header-Content-Length). Every inference result is compared with a `/v1`
 * execution of the same compilation. Covered: server live/ready/metadata, model ready and
 * metadata (also under /versions/{v}), JSON and binary inputs, outputs selected and mixed
 * binary/JSON, version routing, id echo, quantized and boolean datatypes, gzip bodies,
 * errors as {"error"} (4xx, never 500), auth and client isolation as under /v1.
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict";
import { NnClient, V2Error } from "../client/mod.ts";
import {
  addModel,
  metric,
  mulModel,
  SLOW_INPUT_ELEMENTS,
  slowConvModel,
  startTestServer,
  type TestServer,
  withTestServer,
} from "./server_fixture.ts";

const KEYS = new Map([["key-a", "alice"], ["key-b", "bob"]]);
const ALICE = { authorization: "Bearer key-a" };

/** Registers `model` as `name`/`version` for the key and compiles it; the compilation id. */
async function serve(
  server: TestServer,
  model: unknown,
  name: string,
  version: string,
  headers: Record<string, string> = ALICE,
): Promise<string> {
  const registered = await server.request(
    "POST",
    `/v1/models?name=${name}&version=${version}`,
    model,
    headers,
  );
  strictEqual(registered.status, 201, JSON.stringify(registered.body));
  const compiled = await server.request("POST", "/v1/compilations", {
    model: registered.body.id,
  }, headers);
  strictEqual(compiled.status, 201, JSON.stringify(compiled.body));
  return compiled.body.id as string;
}

/** A `/v1` execution's outputs, as plain numbers. */
async function v1Outputs(server: TestServer, compilation: string, inputs: number[][]) {
  const run = await server.request("POST", `/v1/compilations/${compilation}/executions`, {
    inputs: inputs.map((data) => ({ data })),
  }, ALICE);
  strictEqual(run.status, 200, JSON.stringify(run.body));
  return (run.body.outputs as { data: number[] }[]).map((o) => o.data);
}

/** A raw POST as tritonclient sends it: no Content-Type, compact JSON, binary after it. */
function rawInfer(server: TestServer, path: string, json: unknown, binary?: Uint8Array) {
  const head = new TextEncoder().encode(JSON.stringify(json));
  const body = new Uint8Array(head.byteLength + (binary?.byteLength ?? 0));
  body.set(head);
  if (binary) body.set(binary, head.byteLength);
  return fetch(`${server.url}${path}`, {
    method: "POST",
    headers: {
      ...ALICE,
      ...(binary ? { "Inference-Header-Content-Length": String(head.byteLength) } : {}),
    },
    body,
  });
}

Deno.test("v2: health, server and model metadata, readiness, versions and JSON inference equal /v1", async () => {
  await withTestServer({ apiKeys: KEYS }, async (server) => {
    const add = await serve(server, addModel(2), "calc", "1");
    const mul = await serve(server, mulModel(2), "calc", "2");
    const v2 = new NnClient({ baseUrl: server.url, apiKey: "key-a" }).v2;
    ok(await v2.isServerLive());
    ok(await v2.isServerReady());
    const server_ = await v2.serverMetadata();
    strictEqual(server_.name, "nnserve");
    for (const extension of ["binary_tensor_data", "system_shared_memory", "statistics"]) {
      ok(server_.extensions.includes(extension), extension);
    }
    ok(await v2.isModelReady("calc"));
    ok(await v2.isModelReady("calc", "1"));
    ok(!(await v2.isModelReady("calc", "3")), "an unknown version is not ready");
    const metadata = await v2.modelMetadata("calc");
    deepStrictEqual(metadata, {
      name: "calc",
      versions: ["1", "2"],
      platform: "nnapi",
      inputs: [
        { name: "input0", datatype: "FP32", shape: [2] },
        { name: "input1", datatype: "FP32", shape: [2] },
      ],
      outputs: [{ name: "output0", datatype: "FP32", shape: [2] }],
    });
    deepStrictEqual(await v2.modelMetadata("calc", "1"), metadata);

    const inputs = [[1.5, -2], [4, 0.25]];
    const request = [
      { name: "input0", datatype: "FP32", shape: [2], data: inputs[0] },
      { name: "input1", datatype: "FP32", shape: [2], data: inputs[1] },
    ];
    // No version: the latest ready one (2, MUL); /versions/1 routes to ADD.
    const latest = await v2.infer("calc", request, { id: "req-7" });
    strictEqual(latest.id, "req-7", "the id is echoed");
    deepStrictEqual([latest.modelName, latest.modelVersion], ["calc", "2"]);
    deepStrictEqual(
      [...latest.outputs[0].data as Float32Array],
      (await v1Outputs(server, mul, inputs))[0],
    );
    deepStrictEqual([...latest.outputs[0].data as Float32Array], [6, -0.5]);
    const first = await v2.infer("calc", request, { version: "1" });
    strictEqual(first.modelVersion, "1");
    deepStrictEqual(
      [...first.outputs[0].data as Float32Array],
      (await v1Outputs(server, add, inputs))[0],
    );
    deepStrictEqual(first.outputs[0].shape, [2]);

    // Nested data is row-major; tritonclient's raw form needs no Content-Type.
    const raw = await rawInfer(server, "/v2/models/calc/versions/1/infer", {
      inputs: [
        { name: "input1", shape: [2], datatype: "FP32", data: [[4], [0.25]] },
        { name: "input0", shape: [2], datatype: "FP32", data: [1.5, -2] },
      ],
    });
    const body = await raw.json();
    strictEqual(raw.status, 200, JSON.stringify(body));
    deepStrictEqual(body.outputs, [{
      name: "output0",
      datatype: "FP32",
      shape: [2],
      data: [5.5, -1.75],
    }]);
    strictEqual(body.id, undefined, "no id asked, none echoed");
  });
});

Deno.test("v2 sees /v1 changes at once: a new version, a deleted compilation, a deleted model", async () => {
  await withTestServer({}, async (server) => {
    const first = await serve(server, addModel(2), "calc", "1", {});
    const v2 = new NnClient({ baseUrl: server.url }).v2;
    const request = [
      { name: "input0", datatype: "FP32", shape: [2], data: [2, 3] },
      { name: "input1", datatype: "FP32", shape: [2], data: [4, 5] },
    ];
    strictEqual((await v2.infer("calc", request)).modelVersion, "1");
    const second = await serve(server, mulModel(2), "calc", "2", {});
    const latest = await v2.infer("calc", request);
    deepStrictEqual([latest.modelVersion, [...latest.outputs[0].data as Float32Array]], ["2", [
      8,
      15,
    ]]);
    strictEqual((await server.request("DELETE", `/v1/compilations/${second}`)).status, 204);
    ok(!(await v2.isModelReady("calc", "2")), "its compilation is gone");
    strictEqual((await v2.infer("calc", request)).modelVersion, "1", "the ready one serves");
    const model = (await server.request("GET", `/v1/compilations/${first}`)).body.model as string;
    await server.request("DELETE", `/v1/compilations/${first}`);
    strictEqual((await server.request("DELETE", `/v1/models/${model}`)).status, 204);
    deepStrictEqual((await v2.modelMetadata("calc")).versions, ["2"], "version 1 is gone");
  });
});

Deno.test("v2 finds named models of a data dir from before the name index", async () => {
  const first = await startTestServer({});
  const { dataDir } = first;
  try {
    await serve(first, addModel(2), "old", "1", {});
    await first.close();
    // As a store written before the index existed: no name keys, no marker.
    const kv = await Deno.openKv(`${dataDir}/nnserve.kv`);
    let removed = 0;
    for await (const entry of kv.list({ prefix: ["model_name"] })) {
      await kv.delete(entry.key);
      removed++;
    }
    await kv.delete(["model_name_index_built"]);
    kv.close();
    strictEqual(removed, 1);
    const again = await startTestServer({ dataDir });
    try {
      const v2 = new NnClient({ baseUrl: again.url }).v2;
      ok(await v2.isModelReady("old"), "the index was built again");
    } finally {
      await again.close();
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("v2: binary inputs and outputs, selected and mixed with JSON, and gzip bodies", async () => {
  await withTestServer({ apiKeys: KEYS }, async (server) => {
    // Two outputs: the sum and the product.
    const model = addModel(3);
    const twoOutputs = {
      ...model,
      operands: [...model.operands, { ...model.operands[3] }],
      operations: [...model.operations, { type: "MUL", inputs: [0, 1, 2], outputs: [4] }],
      outputIndexes: [3, 4],
    };
    const compilation = await serve(server, twoOutputs, "pair", "1");
    const inputs = [[1, 2, 3], [0.5, 0.25, 0.125]];
    const [sum, product] = await v1Outputs(server, compilation, inputs);
    const v2 = new NnClient({ baseUrl: server.url, apiKey: "key-a" }).v2;
    const request = [
      {
        name: "input0",
        datatype: "FP32",
        shape: [3],
        data: new Float32Array(inputs[0]),
        binary: true,
      },
      { name: "input1", datatype: "FP32", shape: [3], data: inputs[1] },
    ];
    const mixed = await v2.infer("pair", request, {
      outputs: [{ name: "output1", binary: true }, { name: "output0" }],
    });
    deepStrictEqual(mixed.outputs.map((o) => [o.name, o.parameters?.binary_data_size]), [
      ["output0", undefined],
      ["output1", 12],
    ]);
    deepStrictEqual([...mixed.outputs[0].data as Float32Array], sum);
    deepStrictEqual([...mixed.outputs[1].data as Float32Array], product);
    const selected = await v2.infer("pair", request, { outputs: [{ name: "output1" }] });
    deepStrictEqual(selected.outputs.map((o) => o.name), ["output1"], "only what was asked");
    const allBinary = await v2.infer("pair", request, { binaryOutputs: true });
    deepStrictEqual(allBinary.outputs.map((o) => o.parameters?.binary_data_size), [12, 12]);
    deepStrictEqual([...allBinary.outputs[1].data as Float32Array], product);

    // The raw wire: the header length, the JSON, then little-endian bytes in request order.
    const raw = await rawInfer(server, "/v2/models/pair/infer", {
      inputs: [
        { name: "input1", shape: [3], datatype: "FP32", parameters: { binary_data_size: 12 } },
        { name: "input0", shape: [3], datatype: "FP32", parameters: { binary_data_size: 12 } },
      ],
      outputs: [{ name: "output1", parameters: { binary_data: true } }],
    }, new Uint8Array(new Float32Array([...inputs[1], ...inputs[0]]).buffer));
    strictEqual(raw.status, 200, await raw.clone().text());
    const length = Number(raw.headers.get("inference-header-content-length"));
    const bytes = new Uint8Array(await raw.arrayBuffer());
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(0, length)));
    deepStrictEqual(header.outputs, [
      { name: "output1", datatype: "FP32", shape: [3], parameters: { binary_data_size: 12 } },
    ]);
    deepStrictEqual([...new Float32Array(bytes.slice(length).buffer)], product);

    // A gzip body (tritonclient's request_compression_algorithm).
    const json = JSON.stringify({
      inputs: [
        { name: "input0", shape: [3], datatype: "FP32", data: inputs[0] },
        { name: "input1", shape: [3], datatype: "FP32", data: inputs[1] },
      ],
    });
    const gzipped = await new Response(
      new Blob([json]).stream().pipeThrough(new CompressionStream("gzip")),
    ).arrayBuffer();
    const zipped = await fetch(`${server.url}/v2/models/pair/infer`, {
      method: "POST",
      headers: { ...ALICE, "content-encoding": "gzip" },
      body: gzipped,
    });
    const zippedBody = await zipped.json();
    strictEqual(zipped.status, 200, JSON.stringify(zippedBody));
    deepStrictEqual(zippedBody.outputs[1].data, product);
  });
});

Deno.test("v2: FP16 as JSON numbers and as binary halves; INT32; quantized inputs expose scale and zero point; BOOL data are booleans", async () => {
  await withTestServer({}, async (server) => {
    const quant = { type: "TENSOR_QUANT8_ASYMM", dimensions: [2], scale: 0.5, zeroPoint: 3 };
    const model = addModel(2);
    const quantModel = {
      ...model,
      operands: [
        { ...quant, lifetime: "MODEL_INPUT" },
        { ...quant, lifetime: "MODEL_INPUT" },
        model.operands[2],
        { ...quant, lifetime: "MODEL_OUTPUT" },
      ],
    };
    await serve(server, quantModel, "q", "1", {});
    const boolModel = {
      operands: [
        {
          type: "TENSOR_FLOAT32",
          dimensions: [3],
          scale: 0,
          zeroPoint: 0,
          lifetime: "MODEL_INPUT",
        },
        {
          type: "TENSOR_FLOAT32",
          dimensions: [3],
          scale: 0,
          zeroPoint: 0,
          lifetime: "MODEL_INPUT",
        },
        { type: "TENSOR_BOOL8", dimensions: [3], scale: 0, zeroPoint: 0, lifetime: "MODEL_OUTPUT" },
      ],
      operations: [{ type: "LESS", inputs: [0, 1], outputs: [2] }],
      inputIndexes: [0, 1],
      outputIndexes: [2],
    };
    await serve(server, boolModel, "less", "1", {});
    const halfModel = {
      ...model,
      operands: model.operands.map((o) =>
        o.type === "TENSOR_FLOAT32" ? { ...o, type: "TENSOR_FLOAT16" } : o
      ),
    };
    await serve(server, halfModel, "half", "1", {});
    const intModel = {
      ...model,
      operands: model.operands.map((o) =>
        o.type === "TENSOR_FLOAT32" ? { ...o, type: "TENSOR_INT32" } : o
      ),
    };
    await serve(server, intModel, "ints", "1", {});
    const v2 = new NnClient({ baseUrl: server.url }).v2;
    strictEqual((await v2.modelMetadata("ints")).outputs[0].datatype, "INT32");
    for (const binary of [false, true]) {
      const ints = await v2.infer("ints", [
        { name: "input0", datatype: "INT32", shape: [2], data: [2147483000, -7], binary },
        { name: "input1", datatype: "INT32", shape: [2], data: new Int32Array([600, 3]), binary },
      ], { binaryOutputs: binary });
      deepStrictEqual([...ints.outputs[0].data as Int32Array], [2147483600, -4]);
    }
    strictEqual((await v2.modelMetadata("half")).inputs[0].datatype, "FP16");
    for (const binary of [false, true]) {
      const half = await v2.infer("half", [
        { name: "input0", datatype: "FP16", shape: [2], data: [1.5, 0.1], binary },
        {
          name: "input1",
          datatype: "FP16",
          shape: [2],
          data: new Float16Array([0.25, 0.2]),
          binary,
        },
      ], { binaryOutputs: binary });
      // 0.1 and 0.2 round to halves; their sum rounds again: as float16 arithmetic does.
      deepStrictEqual(
        [...half.outputs[0].data as Float16Array],
        [1.75, Math.f16round(Math.f16round(0.1) + Math.f16round(0.2))],
      );
    }
    const metadata = await v2.modelMetadata("q");
    deepStrictEqual(metadata.inputs[0], { name: "input0", datatype: "UINT8", shape: [2] });
    deepStrictEqual(metadata.parameters, {
      input0_scale: 0.5,
      input0_zero_point: 3,
      input1_scale: 0.5,
      input1_zero_point: 3,
      output0_scale: 0.5,
      output0_zero_point: 3,
    });
    // (10-3)*0.5 + (20-3)*0.5 = 12 -> 12/0.5 + 3 = 27
    const q = await v2.infer("q", [
      { name: "input0", datatype: "UINT8", shape: [2], data: [10, 3] },
      {
        name: "input1",
        datatype: "UINT8",
        shape: [2],
        data: new Uint8Array([20, 3]),
        binary: true,
      },
    ]);
    deepStrictEqual([...q.outputs[0].data as Uint8Array], [27, 3]);
    strictEqual((await v2.modelMetadata("less")).outputs[0].datatype, "BOOL");
    const less = await v2.infer("less", [
      { name: "input0", datatype: "FP32", shape: [3], data: [1, 5, 2] },
      { name: "input1", datatype: "FP32", shape: [3], data: [2, 4, 2] },
    ]);
    deepStrictEqual(less.outputs[0].data, [true, false, false]);
    const lessBinary = await v2.infer("less", [
      { name: "input0", datatype: "FP32", shape: [3], data: [1, 5, 2] },
      { name: "input1", datatype: "FP32", shape: [3], data: [2, 4, 2] },
    ], { binaryOutputs: true });
    deepStrictEqual(lessBinary.outputs[0].data, [true, false, false]);
  });
});

Deno.test('v2: errors are {"error"} with 4xx, never 500; keys and clients as under /v1', async () => {
  await withTestServer({ apiKeys: KEYS }, async (server) => {
    await serve(server, addModel(2), "calc", "1");
    const registered = await server.request(
      "POST",
      "/v1/models?name=idle&version=1",
      addModel(2),
      ALICE,
    );
    strictEqual(registered.status, 201);
    const good = {
      inputs: [
        { name: "input0", shape: [2], datatype: "FP32", data: [1, 2] },
        { name: "input1", shape: [2], datatype: "FP32", data: [3, 4] },
      ],
    };
    const cases: [string, unknown, number, RegExp][] = [
      ["/v2/models/nope/infer", good, 404, /no model named 'nope'/],
      ["/v2/models/calc/versions/9/infer", good, 404, /no version 9/],
      ["/v2/models/idle/infer", good, 400, /not ready: load it/],
      ["/v2/models/calc/infer", { inputs: [good.inputs[0]] }, 400, /input 'input1' is missing/],
      [
        "/v2/models/calc/infer",
        { inputs: [{ ...good.inputs[0], datatype: "INT32" }, good.inputs[1]] },
        400,
        /input 'input0' is FP32, not INT32/,
      ],
      [
        "/v2/models/calc/infer",
        { inputs: [{ ...good.inputs[0], name: "x" }, good.inputs[1]] },
        400,
        /no input 'x'/,
      ],
      [
        "/v2/models/calc/infer",
        { inputs: [{ ...good.inputs[0], shape: [3] }, good.inputs[1]] },
        400,
        /./,
      ],
      [
        "/v2/models/calc/infer",
        { inputs: [{ ...good.inputs[0], data: [1, "x"] }, good.inputs[1]] },
        400,
        /FP32 data are numbers/,
      ],
      ["/v2/models/calc/infer", { ...good, outputs: [{ name: "nope" }] }, 400, /no output 'nope'/],
      [
        "/v2/models/calc/infer",
        { inputs: [{ ...good.inputs[0], parameters: { binary_data_size: 8 } }, good.inputs[1]] },
        400,
        /Inference-Header-Content-Length/,
      ],
    ];
    for (const [path, body, status, message] of cases) {
      const response = await rawInfer(server, path, body);
      const answer = await response.json();
      strictEqual(
        response.status,
        status,
        `${path} ${JSON.stringify(body)}: ${JSON.stringify(answer)}`,
      );
      deepStrictEqual(Object.keys(answer), ["error"]);
      ok(message.test(answer.error), answer.error);
    }
    const notJson = await fetch(`${server.url}/v2/models/calc/infer`, {
      method: "POST",
      headers: ALICE,
      body: "{inputs",
    });
    strictEqual(notJson.status, 400);
    ok(/not JSON/.test((await notJson.json()).error));
    const badLength = await fetch(`${server.url}/v2/models/calc/infer`, {
      method: "POST",
      headers: { ...ALICE, "Inference-Header-Content-Length": "999" },
      body: "{}",
    });
    strictEqual(badLength.status, 400);
    ok((await badLength.json()).error);
    const unknownRoute = await fetch(`${server.url}/v2/nothing`, { headers: ALICE });
    strictEqual(unknownRoute.status, 404);
    ok((await unknownRoute.json()).error);

    // Keys: health and server metadata are open; the rest needs a key, and bob sees only his.
    strictEqual((await fetch(`${server.url}/v2/health/ready`)).status, 200);
    const anonymous = await fetch(`${server.url}/v2/models/calc`);
    strictEqual(anonymous.status, 401);
    ok((await anonymous.json()).error);
    const bob = new NnClient({ baseUrl: server.url, apiKey: "key-b" }).v2;
    await rejects(bob.modelMetadata("calc"), (e) => e instanceof V2Error && e.httpStatus === 404);
    await rejects(
      bob.infer("calc", good.inputs.map((i) => ({ ...i, shape: i.shape }))),
      (e) => e instanceof V2Error && e.httpStatus === 404,
    );
    // The /v2 requests count in the request metrics by route.
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    ok(
      /nnserve_http_request_duration_seconds_count\{method="POST",route="\/v2\/models\/:name\/infer",status="400"\} \d+/
        .test(metrics),
    );
  });
});

Deno.test("v2: the service's limits refuse as under /v1: 429 with Retry-After for a full queue, 413 for a large body", async () => {
  await withTestServer({
    workers: 1,
    threads: 1,
    inlineWork: 0,
    queueLimits: { total: 1, perClient: 1 },
    maxBodyBytes: 2 * 1024 * 1024,
  }, async (server) => {
    const registered = await server.request("POST", "/v1/models?name=slow", slowConvModel(4));
    const compiled = await server.request("POST", "/v1/compilations", {
      model: registered.body.id,
      devices: ["cpu-reference"],
    });
    strictEqual(compiled.status, 201, JSON.stringify(compiled.body));
    const bytes = new Uint8Array(new Float32Array(SLOW_INPUT_ELEMENTS).fill(0.5).buffer);
    const infer = () =>
      rawInfer(server, "/v2/models/slow/infer", {
        inputs: [{
          name: "input0",
          shape: [1, 64, 64, 32],
          datatype: "FP32",
          parameters: { binary_data_size: bytes.byteLength },
        }],
        outputs: [{ name: "output0", parameters: { binary_data: true } }],
      }, bytes);
    // One runs, one waits in the queue of one place, the third is refused at once.
    const answers = await Promise.all([infer(), infer(), infer()]);
    const refused = answers.filter((a) => a.status === 429);
    strictEqual(refused.length, 1, JSON.stringify(answers.map((a) => a.status)));
    strictEqual(refused[0].headers.get("retry-after"), "1");
    ok(/queue/.test((await refused[0].json()).error));
    for (const answer of answers.filter((a) => a !== refused[0])) {
      strictEqual(answer.status, 200);
      await answer.body?.cancel();
    }
    strictEqual(
      (await metric(server.url, 'nnserve_refusals_total{limit="client_queue"}'))! +
        (await metric(server.url, 'nnserve_refusals_total{limit="queue"}'))!,
      1,
    );
    // A body past the limit: 413, in the protocol's form.
    const large = await rawInfer(
      server,
      "/v2/models/slow/infer",
      { inputs: [] },
      new Uint8Array(3 * 1024 * 1024),
    );
    strictEqual(large.status, 413);
    ok((await large.json()).error);
  });
});
