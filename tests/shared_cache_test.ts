/**
 * The compilation cache shared by replicas: PostgreSQL holds the map, a blob store every
 * replica reads holds the model and data caches. Real servers with their own data dirs on
 * one database and one blob directory, and the cache itself opened on several connections
 * to one database (each one replica) over a directory or an S3 bucket (s3rver). What one
 * replica prepared is a hit on the other, with the same outputs; one model+options+token
 * compiled on both at once is prepared once; a changed or missing blob is rejected and
 * prepared again, never an error; a replica of another driver version leaves the shared map
 * alone; entries replaced while other replicas read them are never rejections (the readers
 * look at the map again); eviction keeps the budget and deletes the blobs it evicts.
 */
import { deepStrictEqual, match, ok, strictEqual } from "node:assert/strict";
import { CompilationCache } from "../cache/compilation_cache.ts";
import type { ServerConfig } from "../server.ts";
import { DirectoryBlobStore } from "../store/blob_store.ts";
import { PostgresStateStore } from "../store/postgres_state.ts";
import { S3BlobStore } from "../store/s3_blob_store.ts";
import { startPostgres, type TestPostgres } from "./postgres_fixture.ts";
import { startS3 } from "./s3_fixture.ts";
import {
  metric,
  SLOW_INPUT_ELEMENTS,
  slowConvModel,
  startTestServer,
  type TestServer,
} from "./server_fixture.ts";
import { cacheToken, compile, register, run } from "./cache_fixture.ts";

/** Two replicas on one database and one blob directory, each with its own data dir. */
interface Pair {
  a: TestServer;
  b: TestServer;
  blobDir: string;
  databaseUrl: string;
  /** Another replica on the same stores. */
  start(options: Partial<ServerConfig>): Promise<TestServer>;
  close(): Promise<void>;
}

async function replicas(postgres: TestPostgres, name: string): Promise<Pair> {
  const databaseUrl = await postgres.database(name);
  const blobDir = await Deno.makeTempDir({ prefix: "nnserve-blobs-" });
  const started: TestServer[] = [];
  const start = async (options: Partial<ServerConfig>) => {
    const server = await startTestServer({ databaseUrl, blobs: { dir: blobDir }, ...options });
    started.push(server);
    return server;
  };
  const a = await start({ replica: "a" });
  const b = await start({ replica: "b" });
  return {
    a,
    b,
    blobDir,
    databaseUrl,
    start,
    async close() {
      for (const server of started) {
        await server.close();
        await Deno.remove(server.dataDir, { recursive: true });
      }
      await Deno.remove(blobDir, { recursive: true });
    },
  };
}

/** A cache counter of one replica (declared at zero, so always present). */
async function cacheCount(server: TestServer, result: string): Promise<number> {
  const series = `nnserve_compilation_cache_total{result="${result}"}`;
  const value = await metric(server.url, series);
  strictEqual(typeof value, "number", series);
  return value!;
}

/** Hits, misses and rejections summed over replicas. */
async function counts(...servers: TestServer[]) {
  const sum = async (result: string) =>
    (await Promise.all(servers.map((s) => cacheCount(s, result)))).reduce((x, y) => x + y, 0);
  return { hit: await sum("hit"), miss: await sum("miss"), rejected: await sum("rejected") };
}

/** The cache's blob files under the blob directory: each entry's model and data cache. */
function cacheBlobs(blobDir: string): { model: string; data: string }[] {
  const root = `${blobDir}/cache`;
  let dirs: Deno.DirEntry[];
  try {
    dirs = [...Deno.readDirSync(root)];
  } catch {
    return [];
  }
  return dirs.map((dir) => {
    const files = [...Deno.readDirSync(`${root}/${dir.name}`)]
      .filter((f) => !f.name.endsWith(".tmp"))
      .map((f) => `${root}/${dir.name}/${f.name}`);
    strictEqual(files.length, 2, `${dir.name} holds a model and a data cache`);
    // The model cache is the plan as JSON after its 4-byte length.
    const isModel = (path: string) =>
      new TextDecoder().decode(Deno.readFileSync(path).subarray(4, 14)).startsWith('{"header"');
    const model = files.find(isModel)!;
    ok(model, `${dir.name} has a model cache`);
    return { model, data: files.find((f) => f !== model)! };
  });
}

/**
 * The outputs of a compilation without a token, deleted afterwards so that its own cache
 * entry leaves only the entries a step counts.
 */
async function plainOutputs(
  server: TestServer,
  model: string,
  outputs: (server: TestServer, compilation: string) => Promise<number[]>,
): Promise<number[]> {
  const { id } = await compile(server, model);
  const result = await outputs(server, id);
  strictEqual((await server.request("DELETE", `/v1/compilations/${id}`)).status, 204);
  return result;
}

/** Files in a replica's own cache directory (none: the shared cache is not kept there). */
function localCacheFiles(server: TestServer): string[] {
  try {
    return [...Deno.readDirSync(`${server.dataDir}/cache`)].map((e) => e.name);
  } catch {
    return [];
  }
}

Deno.test("replicas on one database and blob store share the compilation cache", async (t) => {
  const postgres = await startPostgres();
  try {
    await t.step("what one replica prepared is a hit on the other, same outputs", async () => {
      const { a, b, blobDir, close } = await replicas(postgres, "hit_across");
      try {
        const model = await register(a);
        const expected = await run(a, (await compile(a, model)).id);
        const miss = await compile(a, model, cacheToken(1));
        strictEqual(miss.cache, "miss");
        // The token's entry, and the tokenless compilation's own.
        strictEqual(cacheBlobs(blobDir).length, 2, "two entries' blobs in the blob store");
        const hit = await compile(b, model, cacheToken(1));
        strictEqual(hit.cache, "hit", "b found a's entry");
        deepStrictEqual(await run(b, hit.id), expected);
        deepStrictEqual(await run(a, miss.id), expected);
        deepStrictEqual(await counts(b), { hit: 1, miss: 0, rejected: 0 });
        deepStrictEqual([...localCacheFiles(a), ...localCacheFiles(b)], [], "nothing local");
      } finally {
        await close();
      }
    });

    await t.step(
      "a compilation without a token is loaded, not prepared, by the replica that takes it over; deleting it drops its entry",
      async () => {
        const { a, b, blobDir, close } = await replicas(postgres, "own_entry");
        try {
          const model = await register(a);
          const compiled = await compile(a, model);
          strictEqual(compiled.cache, "none", "no token: the answer says none");
          strictEqual(cacheBlobs(blobDir).length, 1, "its own entry is in the blob store");
          const expected = await run(a, compiled.id);
          deepStrictEqual(await counts(b), { hit: 0, miss: 0, rejected: 0 });
          // b never saw it: its first execution there loads a's plan from the shared cache.
          deepStrictEqual(await run(b, compiled.id), expected);
          deepStrictEqual(await counts(b), { hit: 1, miss: 0, rejected: 0 });
          const deleted = await b.request("DELETE", `/v1/compilations/${compiled.id}`);
          strictEqual(deleted.status, 204);
          deepStrictEqual(cacheBlobs(blobDir), [], "its entry went with it");
        } finally {
          await close();
        }
      },
    );

    await t.step("one key compiled on both replicas at once is prepared once", async () => {
      const { a, b, blobDir, close } = await replicas(postgres, "prepared_once");
      try {
        // Profile-guided partitioning runs the model to measure it: preparing takes long
        // enough that, without the lock, every replica would prepare.
        const registered = await a.request("POST", "/v1/models", slowConvModel(2));
        strictEqual(registered.status, 201);
        const model = registered.body.id as string;
        const input = Array.from({ length: SLOW_INPUT_ELEMENTS }, (_, i) => (i % 9) - 4);
        const outputs = async (server: TestServer, compilation: string) => {
          const r = await server.request("POST", `/v1/compilations/${compilation}/executions`, {
            inputs: [{ data: input }],
          });
          strictEqual(r.status, 200, JSON.stringify(r.body));
          return (r.body.outputs as { data: number[] }[])[0].data;
        };
        const expected = await plainOutputs(a, model, outputs);
        const results = await Promise.all(Array.from({ length: 8 }, async (_, i) => {
          const r = await (i % 2 === 0 ? a : b).request("POST", "/v1/compilations", {
            model,
            partitioning: "profile",
            cache: { token: cacheToken(2) },
          });
          strictEqual(r.status, 201, JSON.stringify(r.body));
          return r.body as { id: string; cache: string };
        }));
        deepStrictEqual(await counts(a, b), { hit: 7, miss: 1, rejected: 0 });
        strictEqual(results.filter((r) => r.cache === "miss").length, 1);
        strictEqual(results.filter((r) => r.cache === "hit").length, 7);
        for (const [i, r] of results.entries()) {
          deepStrictEqual(await outputs(i % 2 === 0 ? a : b, r.id), expected);
        }
        strictEqual(cacheBlobs(blobDir).length, 1, "one entry, no stray blobs");
      } finally {
        await close();
      }
    });

    await t.step("a changed or missing blob is rejected and prepared again", async () => {
      const { a, b, blobDir, close } = await replicas(postgres, "tampered");
      try {
        const model = await register(a);
        const expected = await plainOutputs(a, model, run);
        strictEqual((await compile(a, model, cacheToken(3))).cache, "miss");
        const [first] = cacheBlobs(blobDir);
        const bytes = Deno.readFileSync(first.model);
        bytes[Math.floor(bytes.length / 2)] ^= 0x10;
        Deno.writeFileSync(first.model, bytes);
        const again = await compile(b, model, cacheToken(3));
        strictEqual(again.cache, "miss");
        match(String(again.cacheRejected), /model cache blob.*does not match its hash/);
        deepStrictEqual(await run(b, again.id), expected);
        strictEqual((await compile(a, model, cacheToken(3))).cache, "hit", "b's entry serves a");

        const [second] = cacheBlobs(blobDir);
        // The weights too are checked against their hash (unlike an embedded data cache).
        const weights = Deno.readFileSync(second.data);
        weights[weights.length - 1] ^= 0x80;
        Deno.writeFileSync(second.data, weights);
        const changed = await compile(a, model, cacheToken(3));
        strictEqual(changed.cache, "miss");
        match(String(changed.cacheRejected), /data cache blob.*does not match its hash/);
        deepStrictEqual(await run(a, changed.id), expected);

        const [third] = cacheBlobs(blobDir);
        Deno.removeSync(third.data);
        const missing = await compile(b, model, cacheToken(3));
        strictEqual(missing.cache, "miss");
        match(String(missing.cacheRejected), /data cache blob.*no blob/);
        deepStrictEqual(await run(b, missing.id), expected);
        strictEqual((await counts(a, b)).rejected, 3);
        strictEqual((await compile(a, model, cacheToken(3))).cache, "hit", "healed");
        strictEqual(cacheBlobs(blobDir).length, 1, "rejected entries' blobs are gone");
      } finally {
        await close();
      }
    });

    await t.step("a replica of another driver version leaves the shared map alone", async () => {
      const { a, blobDir, start, close } = await replicas(postgres, "versions");
      try {
        const model = await register(a);
        strictEqual((await compile(a, model, cacheToken(4))).cache, "miss");
        const next = await start({ replica: "next", driverVersion: "next" });
        strictEqual(
          (await compile(a, model, cacheToken(4))).cache,
          "hit",
          "a's entry is still there",
        );
        strictEqual((await compile(next, model, cacheToken(4))).cache, "miss", "its own key");
        strictEqual((await compile(next, model, cacheToken(4))).cache, "hit");
        strictEqual(cacheBlobs(blobDir).length, 2, "both versions' entries");
      } finally {
        await close();
      }
    });

    await t.step("an entry replaced while another replica reads it is never rejected", async () => {
      const url = await postgres.database("replaced");
      // S3 (s3rver): a read takes a request, so replacements land between map and blob reads.
      const s3 = await startS3("replaced");
      const blobs = new S3BlobStore({
        bucket: s3.bucket,
        endpoint: s3.endpoint,
        credentials: s3.credentials,
      });
      const stores = await Promise.all(
        Array.from({ length: 4 }, () => PostgresStateStore.open(url)),
      );
      try {
        const [writer, ...readers] = await Promise.all(stores.map((kv) =>
          CompilationCache.open({
            kv,
            blobs,
            dir: "/nonexistent/unused",
            budgetBytes: 1024 ** 2,
            version: "v",
          })
        ));
        const key = await writer.key({ model: "m" });
        const payload = (n: number) => new Uint8Array(4096).fill(n);
        await writer.save(key, payload(0), payload(100));
        let saving = true;
        const saves = (async () => {
          for (let n = 1; n <= 30; n++) {
            await new Promise((resolve) => setTimeout(resolve, 50));
            await writer.save(key, payload(n), payload(100 + n));
          }
          saving = false;
        })();
        const seen: string[] = [];
        await Promise.all(readers.map(async (reader) => {
          while (saving) {
            const lookup = await reader.load(key);
            seen.push(lookup.kind === "rejected" ? lookup.reason : lookup.kind);
            if (lookup.kind === "hit") {
              // Model and data of one entry, never a mix.
              strictEqual(lookup.data.read()![0], lookup.model[0] + 100);
            }
          }
        }));
        await saves;
        deepStrictEqual(new Set(seen), new Set(["hit"]), "only hits while entries are replaced");
        ok(seen.length > 30, `${seen.length} lookups`);
        const left = await Array.fromAsync(blobs.list("cache/"));
        strictEqual(left.length, 2, "the replaced entries' blobs are deleted");
        deepStrictEqual(await readers[0].stats(), { entries: 1, bytes: 8192 });
      } finally {
        for (const kv of stores) await kv.close();
        await s3.stop();
      }
    });

    await t.step("eviction keeps the shared budget and deletes what it evicts", async () => {
      const url = await postgres.database("evicted");
      const blobDir = await Deno.makeTempDir({ prefix: "nnserve-blobs-" });
      const blobs = new DirectoryBlobStore(blobDir);
      const stores = [await PostgresStateStore.open(url), await PostgresStateStore.open(url)];
      try {
        const [one, two] = await Promise.all(stores.map((kv) =>
          CompilationCache.open({
            kv,
            blobs,
            dir: `${blobDir}/unused`,
            budgetBytes: 2500,
            version: "v",
          })
        ));
        const keys = await Promise.all([1, 2, 3].map((n) => one.key({ n })));
        await one.save(keys[0], new Uint8Array(500).fill(1), new Uint8Array(500).fill(2));
        await new Promise((resolve) => setTimeout(resolve, 5)); // a later last use
        await two.save(keys[1], new Uint8Array(500).fill(3), new Uint8Array(500).fill(4));
        await new Promise((resolve) => setTimeout(resolve, 5));
        await one.save(keys[2], new Uint8Array(500).fill(5), new Uint8Array(500).fill(6));
        deepStrictEqual(await two.stats(), { entries: 2, bytes: 2000 });
        strictEqual((await two.load(keys[0])).kind, "miss", "the least recently used went");
        strictEqual((await one.load(keys[1])).kind, "hit", "two's entry serves one");
        strictEqual((await Array.fromAsync(blobs.list("cache/"))).length, 4);
        ok(!(await Array.fromAsync(blobs.list("cache/"))).some((k) => k.includes(keys[0])));
      } finally {
        for (const kv of stores) await kv.close();
        await Deno.remove(blobDir, { recursive: true });
      }
    });
  } finally {
    await postgres.stop();
  }
});
