/**
 * A full disk: the data directory on a small tmpfs (mounted here; CI runs as root) fills up.
 * Writes are refused with 503 and Retry-After naming the storage, nothing half-written is
 * left behind (no temporary files), and reads and executions go on.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { addModel, withTestServer } from "./server_fixture.ts";

/** Runs `fn` with a tmpfs of `megabytes` mounted on a new directory, unmounted after. */
async function withTmpfs(megabytes: number, fn: (dir: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "nnserve-full-" });
  const mount = await new Deno.Command("mount", {
    args: ["-t", "tmpfs", "-o", `size=${megabytes}m`, "tmpfs", dir],
    stderr: "piped",
  }).output();
  ok(mount.success, `mount a tmpfs (needs root): ${new TextDecoder().decode(mount.stderr)}`);
  try {
    await fn(dir);
  } finally {
    await new Deno.Command("umount", { args: [dir] }).output();
    await Deno.remove(dir, { recursive: true });
  }
}

/** Every file under `dir` whose name ends with `.tmp`. */
async function temporaries(dir: string): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) found.push(...await temporaries(path));
    else if (entry.name.endsWith(".tmp")) found.push(path);
  }
  return found;
}

Deno.test("a full disk refuses writes with 503 naming the storage, leaves no temporaries, and reads go on", async () => {
  await withTmpfs(24, async (dataDir) => {
    await withTestServer({ dataDir: `${dataDir}/data` }, async (server) => {
      const model = await server.request("POST", "/v1/models", addModel(2));
      strictEqual(model.status, 201, JSON.stringify(model.body));
      const compiled = await server.request("POST", "/v1/compilations", { model: model.body.id });
      strictEqual(compiled.status, 201, JSON.stringify(compiled.body));
      const create = (bytes: Uint8Array<ArrayBuffer>) =>
        fetch(`${server.url}/v1/memories`, {
          method: "POST",
          headers: { "content-type": "application/octet-stream" },
          body: bytes,
        });
      const first = new Uint8Array(1024 * 1024).map((_, i) => i % 251);
      const created = await create(first);
      strictEqual(created.status, 201, await created.clone().text());
      const { id } = await created.json();
      let refused: Response | undefined;
      for (let k = 0; k < 12 && !refused; k++) {
        const response = await create(new Uint8Array(4 * 1024 * 1024).fill(k + 1));
        if (response.status === 201) await response.body?.cancel();
        else refused = response;
      }
      ok(refused, "the 24 MiB disk took more than 48 MiB of memories");
      const body = await refused.json();
      strictEqual(refused.status, 503, JSON.stringify(body));
      strictEqual(body.status, "RESOURCE_EXHAUSTED_TRANSIENT");
      strictEqual(body.limit, "storage");
      ok(String(body.message).includes("storage is full"), body.message);
      ok(String(body.message).includes(dataDir), `the message names the path: ${body.message}`);
      strictEqual(refused.headers.get("retry-after"), "30");
      deepStrictEqual(await temporaries(dataDir), [], "no temporary file is left");
      // Reads and executions go on.
      const read = await fetch(`${server.url}/v1/memories/${id}`);
      strictEqual(read.status, 200);
      deepStrictEqual(new Uint8Array(await read.arrayBuffer()), first);
      const executed = await server.request(
        "POST",
        `/v1/compilations/${compiled.body.id}/executions`,
        { inputs: [{ data: [1, 2] }, { data: [3, 4] }] },
      );
      strictEqual(executed.status, 200, JSON.stringify(executed.body));
      deepStrictEqual((executed.body.outputs as { data: number[] }[])[0].data, [4, 6]);
    });
  });
});
