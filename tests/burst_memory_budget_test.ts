/**
 * Memories held by burst slots, against a real server: deleting a mapped memory hides it from
 * its client, but its bytes stay counted in the client's budget until the slot lets go (freed,
 * remapped, or the burst ends), so a burst cannot be used to grow the server's memory past
 * the budget.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { burstUrl, MessageSocket } from "./burst_fixture.ts";
import { addModel, type TestServer, withTestServer } from "./server_fixture.ts";

const SIZE = 9 * 1024;
const BUDGET = 20 * 1024;

async function createMemory(server: TestServer): Promise<{ status: number; id?: string }> {
  const response = await fetch(`${server.url}/v1/memories`, {
    method: "POST",
    headers: { "content-type": "application/octet-stream" },
    body: new Uint8Array(SIZE),
  });
  const body = await response.json();
  return { status: response.status, id: body.id };
}

async function deleteMemory(server: TestServer, id: string): Promise<number> {
  const response = await fetch(`${server.url}/v1/memories/${id}`, { method: "DELETE" });
  await response.body?.cancel();
  return response.status;
}

/** Creates the budget's worth of memories, deleting each at once; returns the statuses. */
async function createAndDelete(server: TestServer, rounds: number, map?: MessageSocket) {
  const statuses: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const created = await createMemory(server);
    statuses.push(created.status);
    if (created.status !== 201) continue;
    if (map) {
      map.sendControl({ type: "map", slot: round, memory: created.id });
      deepStrictEqual(await map.control(), { type: "mapped", slot: round, size: SIZE });
    }
    strictEqual(await deleteMemory(server, created.id!), 204);
  }
  return statuses;
}

async function openBurst(server: TestServer): Promise<MessageSocket> {
  const model = await server.request("POST", "/v1/models", addModel(2));
  const compilation = await server.request("POST", "/v1/compilations", { model: model.body.id });
  return (await MessageSocket.open(burstUrl(server.url, compilation.body.id as string))).socket;
}

const limits = { memoryLimits: { maxMemoryBytes: SIZE, clientBudgetBytes: BUDGET } };

Deno.test("memories mapped to burst slots stay counted after their delete until the burst ends", async () => {
  await withTestServer(limits, async (server) => {
    const burst = await openBurst(server);
    const statuses = await createAndDelete(server, 25, burst);
    // Two fit the budget; every later create is refused while the slots hold them.
    deepStrictEqual(statuses.slice(0, 2), [201, 201]);
    deepStrictEqual(new Set(statuses.slice(2)), new Set([413]));
    await burst.close();
    // The burst let go: the budget is free again (the release is asynchronous).
    let status = 0;
    for (let attempt = 0; attempt < 50 && status !== 201; attempt++) {
      const created = await createMemory(server);
      status = created.status;
      if (created.id) await deleteMemory(server, created.id);
      else await new Promise((resolve) => setTimeout(resolve, 20));
    }
    strictEqual(status, 201);
    // Without a holder, deleted memories are given back at once.
    deepStrictEqual(await createAndDelete(server, 5), [201, 201, 201, 201, 201]);
  });
});

Deno.test("freeing or remapping a slot lets go of its deleted memory", async () => {
  await withTestServer(limits, async (server) => {
    const burst = await openBurst(server);
    const [first, second] = [await createMemory(server), await createMemory(server)];
    burst.sendControl({ type: "map", slot: 1, memory: first.id });
    await burst.control();
    burst.sendControl({ type: "map", slot: 2, memory: second.id });
    await burst.control();
    strictEqual(await deleteMemory(server, first.id!), 204);
    strictEqual(await deleteMemory(server, second.id!), 204);
    strictEqual((await createMemory(server)).status, 413);
    burst.sendControl({ type: "free", slot: 1 });
    deepStrictEqual(await burst.control(), { type: "freed", slot: 1 });
    const third = await pollCreate(server);
    strictEqual(third.status, 201);
    burst.sendControl({ type: "map", slot: 2, memory: third.id });
    deepStrictEqual(await burst.control(), { type: "mapped", slot: 2, size: SIZE });
    strictEqual((await pollCreate(server)).status, 201, "remapping slot 2 let go of `second`");
    await burst.close();
  });
});

/** Creates a memory, retrying briefly while an asynchronous release lands. */
async function pollCreate(server: TestServer) {
  let created = await createMemory(server);
  for (let attempt = 0; attempt < 50 && created.status !== 201; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    created = await createMemory(server);
  }
  return created;
}
