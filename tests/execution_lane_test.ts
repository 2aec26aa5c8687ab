/**
 * The execution lane (routes/execution_lane.ts) answers exactly as the router does: the same
 * status, headers and body, the same access-log line and refusal count, for `/v1` executions
 * and `/v2` inferences, every body form and every refusal on the way (key, body limit, JSON,
 * schema, driver).
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { RequestLog } from "../routes/access_log.ts";
import { buildApp } from "../routes/app.ts";
import { INFERENCE_HEADER_LENGTH } from "../routes/binary_tensors.ts";
import { executionLane } from "../routes/execution_lane.ts";
import { parseExecutionRequest } from "../routes/executions.ts";
import { ExecutionRequest } from "../routes/schemas.ts";
import { InferRequest, parseInferRequest } from "../routes/v2/infer.ts";
import { addModel, withTestServer } from "./server_fixture.ts";

const KEY = "lane-test-key";
const AUTHORIZED = { authorization: `Bearer ${KEY}` };

/** What each case is answered (so that the two paths agreeing means something). */
const EXPECTED_STATUS: Record<string, number> = {
  "JSON": 200,
  "JSON, base64 outputs": 200,
  "JSON, framed outputs": 200,
  "JSON, raw output": 200,
  "framed body": 200,
  "no key": 401,
  "unknown key": 401,
  "JSON past its limit": 413,
  "malformed JSON": 400,
  "schema error": 400,
  "wrong element count": 400,
  "unknown compilation": 404,
  "no media type": 400,
  "v2 JSON": 200,
  "v2 version, JSON": 200,
  "v2 binary": 200,
  "v2 no key": 401,
  "v2 unknown version": 404,
  "v2 unknown model": 404,
  "v2 past the JSON limit": 413,
  "v2 not JSON": 400,
  "v2 schema error": 400,
};

/** A request to send to both apps: a fresh Request each time (a body is read once). */
interface Case {
  name: string;
  path?: string;
  headers?: Record<string, string>;
  body: string | Uint8Array<ArrayBuffer>;
}

function framed(header: unknown, ...tensors: Float32Array[]): Uint8Array<ArrayBuffer> {
  const head = new TextEncoder().encode(JSON.stringify(header));
  const parts = [head, ...tensors.map((t) => new Uint8Array(t.buffer))];
  const body = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const part of parts) {
    body.set(part, at);
    at += part.byteLength;
  }
  return body;
}

/** Inferences of the Open Inference Protocol, as `adder` version 3 serves them. */
function v2Cases(): Case[] {
  const tensor = (name: string, data: number[]) => ({
    name,
    datatype: "FP32",
    shape: [4],
    data,
  });
  const infer = {
    id: "r1",
    inputs: [tensor("input0", [1, 2, 3, 4]), tensor("input1", [5, 6, 7, 8])],
  };
  const binaryInfer = {
    inputs: [
      { ...tensor("input0", []), data: undefined, parameters: { binary_data_size: 16 } },
      { ...tensor("input1", []), data: undefined, parameters: { binary_data_size: 16 } },
    ],
    outputs: [{ name: "output0", parameters: { binary_data: true } }],
  };
  const framedBody = framed(
    binaryInfer,
    new Float32Array([1, 2, 3, 4]),
    new Float32Array([8, 7, 6, 5]),
  );
  const header = String(framedBody.byteLength - 32);
  return [
    {
      name: "v2 JSON",
      path: "/v2/models/adder/infer",
      headers: AUTHORIZED,
      body: JSON.stringify(infer),
    },
    {
      name: "v2 version, JSON",
      path: "/v2/models/adder/versions/3/infer",
      headers: { ...AUTHORIZED, "content-type": "application/json" },
      body: JSON.stringify(infer),
    },
    {
      name: "v2 binary",
      path: "/v2/models/adder/infer",
      headers: { ...AUTHORIZED, [INFERENCE_HEADER_LENGTH]: header },
      body: framedBody,
    },
    { name: "v2 no key", path: "/v2/models/adder/infer", body: JSON.stringify(infer) },
    {
      name: "v2 unknown version",
      path: "/v2/models/adder/versions/9/infer",
      headers: AUTHORIZED,
      body: JSON.stringify(infer),
    },
    { name: "v2 unknown model", path: "/v2/models/nobody/infer", headers: AUTHORIZED, body: "{}" },
    {
      name: "v2 past the JSON limit",
      path: "/v2/models/adder/infer",
      headers: AUTHORIZED,
      body: JSON.stringify({ ...infer, id: "x".repeat(300) }),
    },
    { name: "v2 not JSON", path: "/v2/models/adder/infer", headers: AUTHORIZED, body: "{" },
    {
      name: "v2 schema error",
      path: "/v2/models/adder/infer",
      headers: AUTHORIZED,
      body: JSON.stringify({ inputs: 3 }),
    },
  ];
}

/** Status, headers (the answer's own: request ids are given) and body bytes. */
async function answered(response: Response) {
  return {
    status: response.status,
    headers: [...response.headers].sort(),
    body: [...new Uint8Array(await response.arrayBuffer())],
  };
}

Deno.test("the execution lane answers, logs and counts every request as the router does", async () => {
  await withTestServer({ apiKeys: new Map([[KEY, "alice"]]) }, async (server) => {
    const json = { ...AUTHORIZED, "content-type": "application/json" };
    const model = await server.request(
      "POST",
      "/v1/models?name=adder&version=3",
      addModel(4),
      AUTHORIZED,
    );
    strictEqual(model.status, 201);
    const compiled = await server.request(
      "POST",
      "/v1/compilations",
      { model: model.body.id },
      AUTHORIZED,
    );
    strictEqual(compiled.status, 201);
    const executions = `/v1/compilations/${compiled.body.id}/executions`;
    const inputs = { inputs: [{ data: [1, 2, 3, 4] }, { data: [5, 6, 7, 8] }] };
    const a = new Float32Array([1, 2, 3, 4]);
    const b = new Float32Array([0.5, 0.25, -1, 8]);
    const binaryInputs = {
      inputs: [{ parameters: { binary_data_size: 16 } }, { parameters: { binary_data_size: 16 } }],
    };
    const framedBody = framed(binaryInputs, a, b);
    const cases: Case[] = [
      { name: "JSON", headers: json, body: JSON.stringify(inputs) },
      {
        name: "JSON, base64 outputs",
        headers: json,
        body: JSON.stringify({ ...inputs, outputEncoding: "base64" }),
      },
      {
        name: "JSON, framed outputs",
        headers: json,
        body: JSON.stringify({ ...inputs, outputEncoding: "binary" }),
      },
      {
        name: "JSON, raw output",
        headers: { ...json, accept: "application/octet-stream" },
        body: JSON.stringify(inputs),
      },
      {
        name: "framed body",
        headers: {
          ...AUTHORIZED,
          "content-type": "application/octet-stream",
          [INFERENCE_HEADER_LENGTH]: String(framedBody.byteLength - 32),
        },
        body: framedBody,
      },
      { name: "no key", headers: { "content-type": "application/json" }, body: "{}" },
      {
        name: "unknown key",
        headers: { "content-type": "application/json", authorization: "Bearer nobody" },
        body: "{}",
      },
      {
        name: "JSON past its limit",
        headers: json,
        body: JSON.stringify({ ...inputs, padding: "x".repeat(300) }),
      },
      { name: "malformed JSON", headers: json, body: '{"inputs": [' },
      { name: "schema error", headers: json, body: JSON.stringify({ inputs: 7 }) },
      {
        name: "wrong element count",
        headers: json,
        body: JSON.stringify({ inputs: [{ data: [1] }, { data: [5, 6, 7, 8] }] }),
      },
      {
        name: "unknown compilation",
        path: "/v1/compilations/no-such-compilation/executions",
        headers: json,
        body: JSON.stringify(inputs),
      },
      { name: "no media type", headers: AUTHORIZED, body: JSON.stringify(inputs) },
      ...v2Cases(),
    ];
    const lines: string[] = [];
    const sink = (line: string) => lines.push(line);
    const options = {
      apiKeys: new Map([[KEY, "alice"]]),
      maxJsonBytes: 256,
      log: { level: "info" as const, sink },
    };
    const laned = buildApp(server.service, options);
    const routed = buildApp(server.service, { ...options, executionLane: false });
    const lane = executionLane({
      service: server.service,
      log: new RequestLog(server.service.driver.metrics, { level: "off", sink, replica: "" }),
      keys: options.apiKeys,
      limits: { maxBytes: 1 << 20, maxJsonBytes: 256 },
    });
    /** The refusal counts by series. */
    const refusals = async () => {
      const text = await (await fetch(`${server.url}/metrics`)).text();
      const series = text.split("\n").filter((l) => l.startsWith("nnserve_refusals_total"));
      return new Map(series.map((l) => [l.split(" ")[0], Number(l.split(" ")[1])]));
    };
    /** What each series gained from `from` to `to`. */
    const added = (to: Map<string, number>, from: Map<string, number>) =>
      [...to].map(([series, n]) => [series, n - (from.get(series) ?? 0)]).filter(([, n]) => n);
    for (const c of cases) {
      const request = () =>
        new Request(`http://127.0.0.1${c.path ?? executions}`, {
          method: "POST",
          headers: {
            "x-request-id": `case-${c.name.replaceAll(" ", "-")}`,
            // As served requests declare it (an in-memory Request does not).
            "content-length": String(new Blob([c.body]).size),
            ...c.headers,
          },
          body: c.body,
        });
      const taken = lane(request());
      ok(taken !== undefined, `${c.name}: the lane takes it`);
      await taken;
      const before = await refusals();
      const fromRouter = await answered(await routed.fetch(request()));
      const routerRefusals = await refusals();
      const fromLane = await answered(await laned.fetch(request()));
      deepStrictEqual(fromLane, fromRouter, c.name);
      strictEqual(fromLane.status, EXPECTED_STATUS[c.name], c.name);
      // Both count a refusal the same way: the lane's run adds what the router's added.
      deepStrictEqual(
        added(await refusals(), routerRefusals),
        added(routerRefusals, before),
        c.name,
      );
      const [routerLine, laneLine] = lines.splice(-2).map((line) => {
        const { time: _time, ms: _ms, ...rest } = JSON.parse(line);
        return rest;
      });
      deepStrictEqual(laneLine, routerLine, `${c.name}: the access-log line`);
    }
    // What the lane leaves to the router: other methods, a query, an escaped id, a body
    // without a declared length.
    const post = (path: string, init: RequestInit = {}) =>
      new Request(`http://127.0.0.1${path}`, {
        method: "POST",
        body: "{}",
        headers: { "content-length": "2" },
        ...init,
      });
    strictEqual(lane(new Request(`http://127.0.0.1${executions}`)), undefined);
    strictEqual(lane(post(`${executions}?dimensions=4`)), undefined);
    strictEqual(lane(post("/v1/compilations/a%2Fb/executions")), undefined);
    strictEqual(lane(post(`${executions}/`)), undefined);
    strictEqual(lane(post("/v2/models/a%20b/infer")), undefined);
    strictEqual(lane(post("/v2/models/adder/infer?x=1")), undefined);
    strictEqual(lane(post("/v2/models/adder/ready")), undefined);
    strictEqual(
      lane(
        post("/v1/compilations/abc/executions", {
          body: ReadableStream.from([new Uint8Array(2)]),
          headers: {},
        }),
      ),
      undefined,
    );
    const taken = lane(post("/v1/compilations/abc/executions"));
    strictEqual((await taken)?.status, 401);
  });
});

/**
 * Checks a hand-written fast path of a zod schema: plain values come out as zod gives them,
 * every other value gets zod's own answer.
 */
function agreesWithZod<T>(
  fast: (value: unknown) => ZodResult<T>,
  zod: (value: unknown) => ZodResult<T>,
  values: { plain: unknown[]; others: unknown[] },
): void {
  for (const value of values.plain) deepStrictEqual(fast(value), zod(value));
  for (const value of values.others) {
    const expected = zod(value);
    const parsed = fast(value);
    strictEqual(parsed.success, expected.success, JSON.stringify(value));
    deepStrictEqual(
      parsed.success ? parsed.data : parsed.error.issues,
      expected.success ? expected.data : expected.error.issues,
    );
  }
}

/** What a zod `safeParse` answers. */
type ZodResult<T> =
  | { success: true; data: T }
  | { success: false; error: { issues: unknown[] } };

Deno.test("parseExecutionRequest takes plain bodies as zod does and gives the rest to zod", () => {
  const plain = [
    { inputs: [] },
    { inputs: [{ data: [] }] },
    { inputs: [{ data: [1, -0, 2.5e-8, -3] }, { data: [4] }] },
  ];
  const others = [
    { inputs: [{ data: [1, "NaN"] }] },
    { inputs: [{ data: [1, "x"] }] },
    { inputs: [{ data: [1], dimensions: [1] }] },
    { inputs: [{ data: [1] }], measureTiming: true },
    { inputs: { a: { data: [1] } } },
    { inputs: [{ data: [1], extra: 1 }] },
    { inputs: [[1]] },
    { inputs: [null] },
    { inputs: 7 },
    JSON.parse('{"inputs": [{"data": [1]}], "__proto__": {}}'),
    [],
    null,
  ];
  agreesWithZod(parseExecutionRequest, (v) => ExecutionRequest.safeParse(v), { plain, others });
});

Deno.test("parseInferRequest takes plain /v2 bodies as zod does and gives the rest to zod", () => {
  const input = { name: "input0", shape: [2], datatype: "FP32", data: [1, 2] };
  const plain = [
    { inputs: [input] },
    { id: "request 7", inputs: [input, { ...input, name: "input1", shape: [1, 0], data: [] }] },
  ];
  const others = [
    { inputs: [] },
    { id: 7, inputs: [input] },
    { inputs: [{ ...input, shape: [-1] }] },
    { inputs: [{ ...input, shape: [1.5] }] },
    { inputs: [{ ...input, shape: "2" }] },
    { inputs: [{ ...input, datatype: 1 }] },
    { inputs: [{ ...input, data: 1 }] },
    { inputs: [{ ...input, extra: 1 }] },
    { inputs: [{ ...input, parameters: { binary_data_size: 8 } }] },
    { inputs: [input], outputs: [{ name: "output0" }] },
    { inputs: [input], parameters: { binary_data_output: true } },
    { inputs: [input], extra: true },
    { inputs: [null] },
    JSON.parse(`{"inputs": [${JSON.stringify(input)}], "__proto__": {}}`),
    [],
    null,
  ];
  agreesWithZod(parseInferRequest, (v) => InferRequest.safeParse(v), { plain, others });
});
