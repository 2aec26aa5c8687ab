/**
 * Tensor values in JSON, against a real server: numbers a type cannot hold are refused by
 * name, non-finite values travel as "NaN", "Infinity" and "-Infinity" both ways (JSON has no
 * such numbers), and a memory offset is a decimal integer and nothing else.
 */
import { deepStrictEqual, match, strictEqual } from "node:assert/strict";
import { NnClient } from "../client/mod.ts";
import { addModel, type TestServer, withTestServer } from "./server_fixture.ts";

function withServer(fn: (server: TestServer) => Promise<void>): Promise<void> {
  return withTestServer({}, fn);
}

async function compileAdd(server: TestServer, n: number): Promise<string> {
  const model = await server.request("POST", "/v1/models", addModel(n));
  const compilation = await server.request("POST", "/v1/compilations", { model: model.body.id });
  return compilation.body.id as string;
}

/** Posts a raw JSON text (numbers JSON.stringify cannot write, such as 1e999). */
async function postText(server: TestServer, path: string, text: string) {
  const response = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: text,
  });
  return { status: response.status, body: await response.json() };
}

Deno.test("a float32 input beyond float32's range is refused naming the input", async () => {
  await withServer(async (server) => {
    const id = await compileAdd(server, 2);
    const result = await server.request("POST", `/v1/compilations/${id}/executions`, {
      inputs: [{ data: [1, 1e39] }, { data: [1, 2] }],
    });
    strictEqual(result.status, 400);
    strictEqual(result.body.status, "INVALID_ARGUMENT");
    deepStrictEqual(result.body.path, ["inputs", 0, "data", 1]);
    match(result.body.message as string, /input 0 .*1e\+39 is beyond the range of TENSOR_FLOAT32/);
  });
});

Deno.test("a JSON number beyond a double's range is named as such, not as an unknown key", async () => {
  await withServer(async (server) => {
    const id = await compileAdd(server, 2);
    const result = await postText(
      server,
      `/v1/compilations/${id}/executions`,
      '{"inputs": [{"data": [1e999, 1]}, {"data": [1, 2]}]}',
    );
    strictEqual(result.status, 400);
    deepStrictEqual(result.body.path, ["inputs", 0, "data", 0]);
    match(result.body.message, /inputs\.0\.data\.0: a number beyond a double's range/);
    match(result.body.message, /"Infinity"/);
    const other = await server.request("POST", `/v1/compilations/${id}/executions`, {
      inputs: [{ base64: 3 }, { data: [1, 2] }],
    });
    strictEqual(other.status, 400);
    deepStrictEqual(other.body.path, ["inputs", 0, "base64"]);
  });
});

Deno.test("non-finite values travel by name in JSON and exactly in base64", async () => {
  await withServer(async (server) => {
    const id = await compileAdd(server, 4);
    const inputs = [{ data: ["Infinity", "-Infinity", "NaN", 1] }, { data: [1, 1, 1, 1] }];
    const json = await server.request("POST", `/v1/compilations/${id}/executions`, { inputs });
    strictEqual(json.status, 200, JSON.stringify(json.body));
    deepStrictEqual(json.body.outputs, [{
      dimensions: [4],
      data: ["Infinity", "-Infinity", "NaN", 2],
    }]);
    const base64 = await server.request("POST", `/v1/compilations/${id}/executions`, {
      inputs,
      outputEncoding: "base64",
    });
    const outputs = base64.body.outputs as { base64: string }[];
    deepStrictEqual(
      new Float32Array(Uint8Array.fromBase64(outputs[0].base64).buffer),
      new Float32Array([Infinity, -Infinity, NaN, 2]),
    );
    // An integer operand has no such values.
    const model = await server.request("POST", "/v1/models", {
      ...addModel(2),
      operands: addModel(2).operands.map((o) => o.type === "INT32" ? { ...o, value: ["NaN"] } : o),
    });
    strictEqual(model.status, 400);
    match(model.body.message as string, /INT32 is not a float type and has no NaN/);
  });
});

Deno.test("model constants beyond their type's range are refused naming the operand", async () => {
  await withServer(async (server) => {
    const model = addModel(2);
    model.operands[1] = {
      ...model.operands[1],
      lifetime: "CONSTANT_COPY",
      value: [1, 1e39],
    } as typeof model.operands[1];
    model.inputIndexes = [0];
    const result = await server.request("POST", "/v1/models", model);
    strictEqual(result.status, 400);
    deepStrictEqual(result.body.path, ["operands", 1, "value", 1]);
    match(result.body.message as string, /operand 1.*beyond the range of TENSOR_FLOAT32/);
  });
});

Deno.test("the SDK sends and receives non-finite values over JSON", async () => {
  await withServer(async (server) => {
    const model = await server.request("POST", "/v1/models", addModel(3));
    const client = new NnClient({ baseUrl: server.url });
    const compilation = await client.compile(model.body.id as string);
    const result = await compilation.compute([[Infinity, NaN, -1], [-Infinity, 0, 1]]);
    deepStrictEqual([...result.outputs[0].data as Float32Array], [NaN, NaN, 0]);
    const more = await compilation.compute([[Infinity, -Infinity, 1], [1, 1, 1]]);
    deepStrictEqual([...more.outputs[0].data as Float32Array], [Infinity, -Infinity, 2]);
  });
});

Deno.test("a memory offset is a decimal non-negative integer and nothing else", async () => {
  await withServer(async (server) => {
    const created = await server.request("POST", "/v1/memories", { size: 16 });
    const put = async (query: string) => {
      const response = await fetch(`${server.url}/v1/memories/${created.body.id}${query}`, {
        method: "PUT",
        headers: { "content-type": "application/octet-stream" },
        body: new Uint8Array([7, 7]),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : {} };
    };
    for (const query of ["?offset=0x8", "?offset=", "?offset=1e1", "?offset=-1", "?offset=8.0"]) {
      const result = await put(query);
      strictEqual(result.status, 400, query);
      deepStrictEqual(result.body.path, ["offset"], query);
    }
    strictEqual((await put("?offset=8")).status, 204);
    strictEqual((await put("")).status, 204);
    const bytes = new Uint8Array(
      await (await fetch(`${server.url}/v1/memories/${created.body.id}`)).arrayBuffer(),
    );
    deepStrictEqual([...bytes], [7, 7, 0, 0, 0, 0, 0, 0, 7, 7, 0, 0, 0, 0, 0, 0]);
  });
});
