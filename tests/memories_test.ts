import { deepStrictEqual, match, strictEqual } from "node:assert/strict";
import { addModel, startTestServer, type TestServer } from "./server_fixture.ts";

const f32bytes = (values: number[]) => new Uint8Array(new Float32Array(values).buffer);

async function createMemory(
  server: TestServer,
  bytes: Uint8Array,
  headers: HeadersInit = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${server.url}/v1/memories`, {
    method: "POST",
    headers: { "content-type": "application/octet-stream", ...headers },
    body: bytes as Uint8Array<ArrayBuffer>,
  });
  return { status: response.status, body: await response.json() };
}

async function readMemory(server: TestServer, id: string, range?: string) {
  const response = await fetch(`${server.url}/v1/memories/${id}`, {
    headers: range ? { range } : {},
  });
  return {
    status: response.status,
    headers: response.headers,
    bytes: new Uint8Array(await response.arrayBuffer()),
  };
}

async function compileAdd(server: TestServer, n: number): Promise<string> {
  const model = await server.request("POST", "/v1/models", addModel(n));
  const compilation = await server.request("POST", "/v1/compilations", { model: model.body.id });
  return compilation.body.id as string;
}

Deno.test("memories are created from bytes or a size, read with Range and written at an offset", async () => {
  const server = await startTestServer();
  try {
    const created = await createMemory(server, new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]));
    strictEqual(created.status, 201);
    strictEqual(created.body.size, 8);
    const id = created.body.id as string;
    deepStrictEqual((await readMemory(server, id)).bytes, new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]));
    const part = await readMemory(server, id, "bytes=2-4");
    strictEqual(part.status, 206);
    strictEqual(part.headers.get("content-range"), "bytes 2-4/8");
    deepStrictEqual(part.bytes, new Uint8Array([3, 4, 5]));
    deepStrictEqual((await readMemory(server, id, "bytes=-2")).bytes, new Uint8Array([7, 8]));
    strictEqual((await readMemory(server, id, "bytes=9-")).status, 400);

    const put = await fetch(`${server.url}/v1/memories/${id}?offset=6`, {
      method: "PUT",
      headers: { "content-type": "application/octet-stream" },
      body: new Uint8Array([70, 80]),
    });
    strictEqual(put.status, 204);
    deepStrictEqual(
      (await readMemory(server, id)).bytes,
      new Uint8Array([1, 2, 3, 4, 5, 6, 70, 80]),
    );
    const outside = await fetch(`${server.url}/v1/memories/${id}?offset=7`, {
      method: "PUT",
      headers: { "content-type": "application/octet-stream" },
      body: new Uint8Array([1, 2]),
    });
    strictEqual(outside.status, 400);
    match((await outside.json()).message, /outside the memory of 8 bytes/);

    const zeros = await server.request("POST", "/v1/memories", { size: 16 });
    strictEqual(zeros.status, 201);
    deepStrictEqual((await readMemory(server, zeros.body.id as string)).bytes, new Uint8Array(16));
    strictEqual((await server.request("DELETE", `/v1/memories/${id}`)).status, 204);
    strictEqual((await readMemory(server, id)).status, 404);
  } finally {
    await server.close();
  }
});

Deno.test("memory size limit and per-client budget answer 413 RESOURCE_EXHAUSTED_PERSISTENT", async () => {
  const server = await startTestServer({
    memoryLimits: { maxMemoryBytes: 1000, clientBudgetBytes: 1500 },
  });
  try {
    const tooBig = await server.request("POST", "/v1/memories", { size: 1001 });
    strictEqual(tooBig.status, 413);
    strictEqual(tooBig.body.status, "RESOURCE_EXHAUSTED_PERSISTENT");
    strictEqual((await server.request("POST", "/v1/memories", { size: 1000 })).status, 201);
    const overBudget = await server.request("POST", "/v1/memories", { size: 600 });
    strictEqual(overBudget.status, 413);
    match(String(overBudget.body.message), /budget/);
    strictEqual((await server.request("POST", "/v1/memories", { size: 500 })).status, 201);
  } finally {
    await server.close();
  }
});

Deno.test("executions read inputs from memories and write outputs in place", async () => {
  const server = await startTestServer();
  try {
    const id = await compileAdd(server, 3);
    const inputs = await createMemory(server, f32bytes([1, 2, 3, 10, 20, 30]));
    const out = await server.request("POST", "/v1/memories", { size: 16 });
    const memory = inputs.body.id as string;
    const run = await server.request("POST", `/v1/compilations/${id}/executions`, {
      inputs: [{ memory, offset: 0, length: 12 }, { memory, offset: 12, length: 12 }],
      outputs: [{ memory: out.body.id, offset: 4, length: 12 }],
    });
    strictEqual(run.status, 200);
    deepStrictEqual(run.body.outputs, [{ dimensions: [3] }]);
    const written = (await readMemory(server, out.body.id as string)).bytes;
    deepStrictEqual(new Float32Array(written.buffer), new Float32Array([0, 11, 22, 33]));
  } finally {
    await server.close();
  }
});

Deno.test("memory regions are checked: out of bounds is 400, a short output region is 422", async () => {
  const server = await startTestServer();
  try {
    const id = await compileAdd(server, 3);
    const memory = (await createMemory(server, f32bytes([1, 2, 3, 4, 5, 6]))).body.id;
    const outside = await server.request("POST", `/v1/compilations/${id}/executions`, {
      inputs: [{ memory, offset: 16, length: 12 }, { memory, offset: 0, length: 12 }],
    });
    strictEqual(outside.status, 400);
    deepStrictEqual(outside.body.path, ["inputs", 0]);
    match(String(outside.body.message), /outside the memory of 24 bytes/);
    const wrongLength = await server.request("POST", `/v1/compilations/${id}/executions`, {
      inputs: [{ memory, offset: 0, length: 8 }, { memory, offset: 0, length: 12 }],
    });
    strictEqual(wrongLength.status, 400);
    match(String(wrongLength.body.message), /needs 12 bytes/);
    const small = await server.request("POST", "/v1/memories", { size: 8 });
    const short = await server.request("POST", `/v1/compilations/${id}/executions`, {
      inputs: [{ memory, offset: 0, length: 12 }, { memory, offset: 12, length: 12 }],
      outputs: [{ memory: small.body.id, offset: 0, length: 8 }],
    });
    strictEqual(short.status, 422);
    strictEqual(short.body.status, "OUTPUT_INSUFFICIENT_SIZE");
    deepStrictEqual(short.body.outputShapes, [{ dimensions: [3], isSufficient: false }]);
    const unknown = await server.request("POST", `/v1/compilations/${id}/executions`, {
      inputs: [{ memory: "nope", offset: 0, length: 12 }, { memory, offset: 0, length: 12 }],
    });
    strictEqual(unknown.status, 404);
  } finally {
    await server.close();
  }
});

Deno.test("models take CONSTANT_REFERENCE weights from pools and keep them after the memory is deleted", async () => {
  const server = await startTestServer();
  try {
    const weights = await createMemory(server, f32bytes([0, 0, 100, 200, 300]));
    const model = addModel(3) as Record<string, unknown> & { operands: Record<string, unknown>[] };
    model.operands[1] = {
      type: "TENSOR_FLOAT32",
      dimensions: [3],
      lifetime: "CONSTANT_REFERENCE",
      location: { poolIndex: 0, offset: 8, length: 12 },
    };
    model.inputIndexes = [0];
    model.pools = [weights.body.id];
    const registered = await server.request("POST", "/v1/models", model);
    strictEqual(registered.status, 201);
    strictEqual((await server.request("DELETE", `/v1/memories/${weights.body.id}`)).status, 204);
    const compilation = await server.request("POST", "/v1/compilations", {
      model: registered.body.id,
    });
    const run = await server.request("POST", `/v1/compilations/${compilation.body.id}/executions`, {
      inputs: [{ data: [1, 2, 3] }],
    });
    deepStrictEqual(run.body.outputs, [{ dimensions: [3], data: [101, 202, 303] }]);
    const missing = await server.request("POST", "/v1/models", model);
    strictEqual(missing.status, 404);
    match(String(missing.body.message), new RegExp(String(weights.body.id)));
  } finally {
    await server.close();
  }
});

Deno.test("memories and what executions wrote into them survive a restart", async () => {
  const first = await startTestServer();
  const id = await compileAdd(first, 2);
  const memory = (await createMemory(first, f32bytes([1, 2, 3, 4]))).body.id as string;
  const out = (await first.request("POST", "/v1/memories", { size: 8 })).body.id as string;
  const run = await first.request("POST", `/v1/compilations/${id}/executions`, {
    inputs: [{ memory, offset: 0, length: 8 }, { memory, offset: 8, length: 8 }],
    outputs: [{ memory: out, offset: 0, length: 8 }],
  });
  strictEqual(run.status, 200);
  await first.close();
  const second = await startTestServer({ dataDir: first.dataDir });
  try {
    const bytes = (await readMemory(second, out)).bytes;
    deepStrictEqual(new Float32Array(bytes.buffer), new Float32Array([4, 6]));
    const again = await second.request("POST", `/v1/compilations/${id}/executions`, {
      inputs: [{ memory, offset: 0, length: 8 }, { memory, offset: 8, length: 8 }],
    });
    deepStrictEqual(again.body.outputs, [{ dimensions: [2], data: [4, 6] }]);
  } finally {
    await second.close();
  }
});

Deno.test("one client cannot see or use another client's memories", async () => {
  const keys = new Map([["key-a", "alice"], ["key-b", "bob"]]);
  const server = await startTestServer({ apiKeys: keys });
  const as = (key: string) => ({ authorization: `Bearer ${key}` });
  try {
    const mine = await createMemory(server, new Uint8Array(12), as("key-a"));
    strictEqual(mine.status, 201);
    const id = mine.body.id as string;
    const read = await fetch(`${server.url}/v1/memories/${id}`, { headers: as("key-b") });
    strictEqual(read.status, 404);
    await read.body?.cancel();
    strictEqual(
      (await server.request("DELETE", `/v1/memories/${id}`, undefined, as("key-b"))).status,
      404,
    );
    const model = await server.request("POST", "/v1/models", addModel(3), as("key-b"));
    const compilation = await server.request(
      "POST",
      "/v1/compilations",
      { model: model.body.id },
      as("key-b"),
    );
    const run = await server.request(
      "POST",
      `/v1/compilations/${compilation.body.id}/executions`,
      { inputs: [{ memory: id, offset: 0, length: 12 }, { data: [1, 2, 3] }] },
      as("key-b"),
    );
    strictEqual(run.status, 404);
    strictEqual((await readMemory(server, id)).status, 401);
  } finally {
    await server.close();
  }
});
