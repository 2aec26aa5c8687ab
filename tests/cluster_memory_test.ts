/**
 * Memories shared by replicas: two servers on one PostgreSQL database and one blob directory
 * (the network volume every replica mounts), separate data dirs. A memory created through
 * one replica is read, written, used by executions and burst slots, and deleted through the
 * other; concurrent writes to different regions through both all land; a delete is seen at
 * once; the bytes live in the blob store only, in blocks: blocks of zeros are not stored,
 * and a small write to a large memory stores its block again, not the memory.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { NnClient } from "../client/mod.ts";
import { startPostgres } from "./postgres_fixture.ts";
import { addModel, startTestServer, type TestServer } from "./server_fixture.ts";
import { BLOCK_BYTES, ORPHAN_GRACE_MS } from "../memory/memory_blobs.ts";
import { DirectoryBlobStore } from "../store/blob_store.ts";

const floats = (...values: number[]) => new Uint8Array(new Float32Array(values).buffer);

async function read(server: TestServer, id: string): Promise<{ status: number; values: number[] }> {
  const response = await fetch(`${server.url}/v1/memories/${id}`);
  const bytes = new Uint8Array(await response.arrayBuffer());
  return {
    status: response.status,
    values: response.ok ? [...new Float32Array(bytes.buffer)] : [],
  };
}

async function write(
  server: TestServer,
  id: string,
  offset: number,
  bytes: Uint8Array<ArrayBuffer>,
) {
  const response = await fetch(`${server.url}/v1/memories/${id}?offset=${offset}`, {
    method: "PUT",
    headers: { "content-type": "application/octet-stream" },
    body: bytes,
  });
  await response.body?.cancel();
  strictEqual(response.status, 204, `write through ${server.driver.replica}`);
}

async function blobFiles(dir: string): Promise<string[]> {
  return await allBlobs(dir, "memories/");
}

/** The keys of the blobs under `prefix` in the blob directory `dir`. */
async function allBlobs(dir: string, prefix: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (path: string) => {
    try {
      for await (const entry of Deno.readDir(path)) {
        if (entry.isDirectory) await walk(`${path}/${entry.name}`);
        else found.push(`${path}/${entry.name}`.slice(dir.length + 1));
      }
    } catch (error) {
      // A directory the server's sweep removed while this walk went through it: it holds
      // nothing any more.
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  };
  await walk(dir);
  return found.filter((f) => f.startsWith(prefix));
}

Deno.test("replicas on one database and blob store share memories: reads, writes, executions, bursts and deletes", async () => {
  const postgres = await startPostgres();
  const blobDir = await Deno.makeTempDir({ prefix: "nnserve-blobs-" });
  const servers: TestServer[] = [];
  try {
    const databaseUrl = await postgres.database("memories");
    for (const replica of ["a", "b"]) {
      servers.push(await startTestServer({ databaseUrl, blobs: { dir: blobDir }, replica }));
    }
    const [a, b] = servers;
    const clientA = new NnClient({ baseUrl: a.url });
    const clientB = new NnClient({ baseUrl: b.url });

    // Created through a, read and written through b, read again through a.
    const input = await clientA.createMemory(floats(1, 2, 3, 4));
    deepStrictEqual(await read(b, input.id), { status: 200, values: [1, 2, 3, 4] });
    await write(b, input.id, 4, floats(20));
    deepStrictEqual((await read(a, input.id)).values, [1, 20, 3, 4]);
    // The bytes are in the blob store, not in either data dir: one blob per memory.
    deepStrictEqual((await blobFiles(blobDir)).length, 1);
    for (const server of servers) {
      deepStrictEqual([...Deno.readDirSync(`${server.dataDir}/memories`)], []);
    }

    // Concurrent writes of different regions through both replicas all land.
    const shared = await clientB.createMemory({ size: 4 * 16 });
    deepStrictEqual((await read(a, shared.id)).values, new Array(16).fill(0));
    await Promise.all(
      Array.from({ length: 16 }, (_, i) => write(servers[i % 2], shared.id, 4 * i, floats(i + 1))),
    );
    const expected = Array.from({ length: 16 }, (_, i) => i + 1);
    deepStrictEqual((await read(a, shared.id)).values, expected);
    deepStrictEqual((await read(b, shared.id)).values, expected);

    // An execution through a reads a memory written through b and writes one created on b.
    const model = (await a.request("POST", "/v1/models", addModel(2))).body as { id: string };
    const compilation = await clientA.compile(model.id);
    const output = await clientB.createMemory({ size: 8 });
    const run = await a.request("POST", `/v1/compilations/${compilation.info.id}/executions`, {
      inputs: [
        { memory: input.id, offset: 0, length: 8 },
        { memory: input.id, offset: 8, length: 8 },
      ],
      outputs: [{ memory: output.id, offset: 0, length: 8 }],
    });
    strictEqual(run.status, 200, JSON.stringify(run.body));
    deepStrictEqual((await read(b, output.id)).values, [4, 24]);

    // A burst slot on b sees a write made through a before its next request.
    const compiledOnB = await clientB.compile(model.id);
    const slotMemory = await clientB.createMemory(floats(5, 6));
    await using burst = await compiledOnB.burst();
    await burst.mapMemory(0, slotMemory);
    const first = await burst.compute([{ slot: 0, offset: 0, length: 8 }, [1, 1]]);
    deepStrictEqual([...first.outputs[0].data as Float32Array], [6, 7]);
    await write(a, slotMemory.id, 0, floats(50, 60));
    const second = await burst.compute([{ slot: 0, offset: 0, length: 8 }, [1, 1]]);
    deepStrictEqual([...second.outputs[0].data as Float32Array], [51, 61]);

    // A large memory is stored in blocks: a small write stores its block again, not the memory.
    const large = new Uint8Array(3 * BLOCK_BYTES + 100);
    large[5] = 1; // block 0; blocks 1 and 2 are zeros and need no blob; block 3 holds the tail
    large[3 * BLOCK_BYTES + 99] = 2;
    const big = await clientA.createMemory(large);
    const blobsOf = async (id: string) =>
      (await blobFiles(blobDir)).filter((f) => f.startsWith(`memories/${id}/`)).sort();
    const stored = await blobsOf(big.id);
    strictEqual(stored.length, 2, `blocks of zeros are not stored: ${stored}`);
    const patch = new Uint8Array([7, 7, 7, 7]);
    const writing = (server: TestServer, at: number) =>
      fetch(`${server.url}/v1/memories/${big.id}?offset=${at}`, {
        method: "PUT",
        headers: { "content-type": "application/octet-stream" },
        body: patch,
      }).then(async (r) => {
        await r.body?.cancel();
        strictEqual(r.status, 204);
      });
    // Two replicas write two blocks at once: both land, and the untouched blocks keep their blobs.
    await Promise.all([writing(b, 2 * BLOCK_BYTES + 8), writing(a, 3 * BLOCK_BYTES)]);
    large.set(patch, 2 * BLOCK_BYTES + 8);
    large.set(patch, 3 * BLOCK_BYTES);
    const after = await blobsOf(big.id);
    strictEqual(after.length, 3, `block 0, the written block 2 and block 3: ${after}`);
    strictEqual(
      stored.filter((f) => after.includes(f)).length,
      1,
      "block 0's blob is untouched, block 3's replaced",
    );
    for (const server of servers) {
      const response = await fetch(`${server.url}/v1/memories/${big.id}`);
      deepStrictEqual(new Uint8Array(await response.arrayBuffer()), large, server.driver.replica);
    }

    // A delete through a is seen by b at once; the deleted memory's blob goes.
    const before = (await blobFiles(blobDir)).length;
    const deleted = await fetch(`${a.url}/v1/memories/${input.id}`, { method: "DELETE" });
    strictEqual(deleted.status, 204);
    strictEqual((await read(b, input.id)).status, 404);
    strictEqual((await read(a, input.id)).status, 404);
    strictEqual((await blobFiles(blobDir)).length, before - 1);
    // Replaced versions leave nothing behind: one blob per memory that has bytes.
    ok((await blobFiles(blobDir)).every((f) => !f.includes(input.id)));
  } finally {
    for (const server of servers) {
      await server.close();
      await Deno.remove(server.dataDir, { recursive: true });
    }
    await Deno.remove(blobDir, { recursive: true });
    await postgres.stop();
  }
});

Deno.test("blobs crashed writes left are swept at start once old, and a deleted memory's all go", async () => {
  const postgres = await startPostgres();
  const blobDir = await Deno.makeTempDir({ prefix: "nnserve-blobs-" });
  try {
    const databaseUrl = await postgres.database("orphans");
    const options = { databaseUrl, blobs: { dir: blobDir }, replica: "a" };
    let server = await startTestServer(options);
    let id = "";
    const orphans: string[] = [];
    const cacheOrphans: string[] = [];
    try {
      const created = await fetch(`${server.url}/v1/memories`, {
        method: "POST",
        headers: { "content-type": "application/octet-stream" },
        body: floats(1, 2, 3, 4),
      });
      strictEqual(created.status, 201);
      id = (await created.json()).id;
      const named = await blobFiles(blobDir);
      strictEqual(named.length, 1, named.join());
      // What a replica killed between storing a write's block and naming it leaves behind:
      // one stored long ago, one a moment ago (a write that may still be in flight).
      const blobs = new DirectoryBlobStore(blobDir);
      for (const age of [ORPHAN_GRACE_MS + 60_000, 0]) {
        orphans.push(
          await blobs.put(`memories/${id}/${Date.now() - age}-${crypto.randomUUID()}`, [
            floats(9, 9, 9, 9),
          ]),
        );
      }
      // The same of a compilation cache save: its blobs stored, the map never pointed at them.
      const key = "cd".repeat(32);
      for (const age of [ORPHAN_GRACE_MS + 60_000, 0]) {
        cacheOrphans.push(
          await blobs.put(`cache/${key}-${Date.now() - age}-${crypto.randomUUID()}`, [
            floats(7),
          ]),
        );
      }
    } finally {
      await server.close();
    }
    server = await startTestServer({ ...options, dataDir: server.dataDir });
    try {
      const [old, young] = orphans;
      // The start-up sweep runs beside serving: wait for it (bounded).
      const swept = async () =>
        !(await blobFiles(blobDir)).includes(old) &&
        !(await allBlobs(blobDir, "cache/")).includes(cacheOrphans[0]);
      for (let k = 0; k < 200 && !await swept(); k++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const left = await blobFiles(blobDir);
      ok(!left.includes(old), "the old unnamed block is swept");
      ok(left.includes(young), "a young unnamed block may be a write in flight: kept");
      const cacheLeft = await allBlobs(blobDir, "cache/");
      ok(!cacheLeft.includes(cacheOrphans[0]), "the old unnamed cache blob is swept");
      ok(cacheLeft.includes(cacheOrphans[1]), "a young one may be a save in flight: kept");
      deepStrictEqual((await read(server, id)).values, [1, 2, 3, 4]);
      const deleted = await fetch(`${server.url}/v1/memories/${id}`, { method: "DELETE" });
      strictEqual(deleted.status, 204);
      deepStrictEqual(await blobFiles(blobDir), [], "every block of the deleted memory is gone");
    } finally {
      await server.close();
      await Deno.remove(server.dataDir, { recursive: true });
    }
  } finally {
    await Deno.remove(blobDir, { recursive: true });
    await postgres.stop();
  }
});
