/**
 * The per-client memory budget under concurrency, against a real server: creates and deletes
 * racing each other never lose an update, of concurrent deletes of one memory exactly one
 * succeeds, and a memory that an execution still holds stays counted after its delete.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { maxPoolModel, type TestServer, withTestServer } from "./server_fixture.ts";

const KIB = 1024;

async function createMemory(server: TestServer, size: number): Promise<Response> {
  return await fetch(`${server.url}/v1/memories`, {
    method: "POST",
    headers: { "content-type": "application/octet-stream" },
    body: new Uint8Array(size),
  });
}

async function deleteMemory(server: TestServer, id: string): Promise<number> {
  const response = await fetch(`${server.url}/v1/memories/${id}`, { method: "DELETE" });
  await response.body?.cancel();
  return response.status;
}

function withServer(budget: number, fn: (server: TestServer) => Promise<void>) {
  return withTestServer({
    memoryLimits: { maxMemoryBytes: 1024 * KIB, clientBudgetBytes: budget },
  }, fn);
}

Deno.test("concurrent deletes and creates never lose a budget update", async () => {
  const size = 9 * KIB;
  await withServer(30 * KIB, async (server) => {
    const live: string[] = [];
    for (let i = 0; i < 2; i++) live.push((await (await createMemory(server, size)).json()).id);
    for (let round = 0; round < 10; round++) {
      const old = live.shift()!;
      const [deleted, ...created] = await Promise.all([
        deleteMemory(server, old),
        createMemory(server, size),
        createMemory(server, size),
        createMemory(server, size),
      ]);
      strictEqual(deleted, 204);
      for (const response of created) {
        const body = await response.json();
        if (response.status === 201) live.push(body.id);
        else strictEqual(response.status, 413, JSON.stringify(body));
      }
      ok(
        live.length * size <= 30 * KIB,
        `round ${round}: the client holds ${live.length} memories of ${size} bytes`,
      );
    }
    // Nothing was lost the other way either: with everything deleted, the whole budget is free.
    for (const id of live) strictEqual(await deleteMemory(server, id), 204);
    const again = await Promise.all([1, 2, 3].map(() => createMemory(server, size)));
    deepStrictEqual(again.map((r) => r.status), [201, 201, 201]);
    await Promise.all(again.map((r) => r.body?.cancel()));
  });
});

Deno.test("of three concurrent deletes of one memory exactly one succeeds", async () => {
  await withServer(30 * KIB, async (server) => {
    for (let round = 0; round < 5; round++) {
      const { id } = await (await createMemory(server, 1 * KIB)).json();
      const statuses = await Promise.all([1, 2, 3].map(() => deleteMemory(server, id)));
      deepStrictEqual(statuses.sort(), [204, 404, 404]);
    }
  });
});

Deno.test("a memory an execution holds stays counted after its delete until the execution ends", async () => {
  const side = 360;
  const bytes = side * side * 4;
  await withServer(Math.floor(bytes * 1.5), async (server) => {
    const model = await server.request("POST", "/v1/models", maxPoolModel(side, 60));
    strictEqual(model.status, 201, JSON.stringify(model.body));
    // On the reference kernels: the execution must last while the memory is deleted (the
    // onnxruntime device would finish the pools sooner).
    const compilation = await server.request("POST", "/v1/compilations", {
      model: model.body.id,
      devices: ["cpu-reference"],
    });
    strictEqual(compilation.status, 201, JSON.stringify(compilation.body));
    const { id: memory } = await (await createMemory(server, bytes)).json();
    const started = performance.now();
    const execution = server.request(
      "POST",
      `/v1/compilations/${compilation.body.id}/executions`,
      { inputs: [{ memory, offset: 0, length: bytes }], outputEncoding: "base64" },
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    strictEqual(await deleteMemory(server, memory), 204);
    strictEqual((await fetch(`${server.url}/v1/memories/${memory}`)).status, 404);
    const whileHeld = await createMemory(server, bytes);
    const { status } = await execution;
    const ran = performance.now() - started;
    ok(ran > 300, `the execution took ${ran.toFixed(0)} ms: too quick to hold the memory`);
    strictEqual(status, 200);
    strictEqual(whileHeld.status, 413, "the deleted memory was still held, so still counted");
    await whileHeld.body?.cancel();
    // Once the execution let go, the budget is free again (the release is asynchronous).
    let after = 0;
    for (let attempt = 0; attempt < 50 && after !== 201; attempt++) {
      const response = await createMemory(server, bytes);
      after = response.status;
      await response.body?.cancel();
      if (after !== 201) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    strictEqual(after, 201);
  });
});
