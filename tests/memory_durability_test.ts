/**
 * A memory's write is all or nothing after a crash (embedded mode): main.ts is killed with
 * SIGKILL while a 64 MiB write lands in the memory's file, and after a restart the memory
 * holds the old bytes or the new ones, never a mix.
 */
import { ok, strictEqual } from "node:assert/strict";
import { startTestServer, withMainProcess } from "./server_fixture.ts";

const SIZE = 64 * 1024 * 1024;

/** The first byte of the memory's file, or undefined while it cannot be read. */
async function firstByte(path: string): Promise<number | undefined> {
  try {
    using file = await Deno.open(path, { read: true });
    const byte = new Uint8Array(1);
    return (await file.read(byte)) === 1 ? byte[0] : undefined;
  } catch {
    return undefined;
  }
}

Deno.test("SIGKILL in the middle of a memory write leaves the old bytes or the new, never a mix", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "nnserve-test-" });
  try {
    let id = "";
    await withMainProcess({ dataDir }, async ({ url, child }) => {
      const created = await fetch(`${url}/v1/memories`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ size: SIZE }),
      });
      strictEqual(created.status, 201);
      id = (await created.json()).id;
      const file = `${dataDir}/memories/${id}.bin`;
      const writing = fetch(`${url}/v1/memories/${id}?offset=0`, {
        method: "PUT",
        headers: { "content-type": "application/octet-stream" },
        body: new Uint8Array(SIZE).fill(0xab),
      }).then((r) => r.body?.cancel(), () => {});
      // Killed as soon as the new bytes start to land in the memory's file.
      while (await firstByte(file) !== 0xab) await new Promise((r) => setTimeout(r, 1));
      child.kill("SIGKILL");
      await child.status;
      await writing;
    });
    await withMainProcess({ dataDir }, async ({ url }) => {
      const read = await fetch(`${url}/v1/memories/${id}`);
      strictEqual(read.status, 200);
      const bytes = new Uint8Array(await read.arrayBuffer());
      strictEqual(bytes.byteLength, SIZE);
      const value = bytes[0];
      ok(value === 0 || value === 0xab, `the memory starts with ${value}`);
      const other = bytes.findIndex((b) => b !== value);
      ok(other < 0, `byte ${other} is ${bytes[other]} where byte 0 is ${value}: a torn write`);
    });
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("temporary files a crash left are removed at start: the data dir's all, a shared blob dir's once old", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "nnserve-test-" });
  const blobDir = await Deno.makeTempDir({ prefix: "nnserve-blobs-" });
  try {
    await Deno.mkdir(`${dataDir}/memories`, { recursive: true });
    await Deno.mkdir(`${blobDir}/memories/x`, { recursive: true });
    const leftovers = {
      data: `${dataDir}/memories/m.bin.1234.tmp`,
      old: `${blobDir}/memories/x/y.5678.tmp`,
      young: `${blobDir}/memories/x/z.9012.tmp`,
    };
    for (const path of Object.values(leftovers)) await Deno.writeFile(path, new Uint8Array(8));
    const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000);
    await Deno.utime(leftovers.old, twoHoursAgo, twoHoursAgo);
    const exists = (path: string) => Deno.stat(path).then(() => true, () => false);
    const server = await startTestServer({ dataDir, blobs: { dir: blobDir } });
    try {
      ok(!await exists(leftovers.data), "the data dir's temporary file is removed before serving");
      // The shared directory is swept beside serving: wait for it (bounded).
      for (let k = 0; k < 200 && await exists(leftovers.old); k++) {
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      ok(!await exists(leftovers.old), "an hour-old temporary file in the blob dir is removed");
      ok(await exists(leftovers.young), "a fresh one may be another replica's write: kept");
    } finally {
      await server.close();
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true });
    await Deno.remove(blobDir, { recursive: true });
  }
});
