import { deepStrictEqual, match, notStrictEqual, ok, strictEqual } from "node:assert/strict";
import { metric, startTestServer, type TestServer } from "./server_fixture.ts";
import { cacheToken, compile, convModel, register, run } from "./cache_fixture.ts";

function cacheFiles(server: TestServer, suffix: ".model" | ".data"): string[] {
  return [...Deno.readDirSync(`${server.dataDir}/cache`)]
    .filter((e) => e.name.endsWith(suffix))
    .map((e) => `${server.dataDir}/cache/${e.name}`)
    .sort();
}

function flipBit(path: string, at = 0.5): void {
  const bytes = Deno.readFileSync(path);
  bytes[Math.floor(bytes.length * at)] ^= 0x10;
  Deno.writeFileSync(path, bytes);
}

/** A cache counter (declared at zero, so always present). */
async function cacheCount(server: TestServer, result: string): Promise<number> {
  const value = await metric(server.url, `nnserve_compilation_cache_total{result="${result}"}`);
  strictEqual(typeof value, "number", `nnserve_compilation_cache_total{result="${result}"}`);
  return value!;
}

Deno.test("a cache token gives miss then hit; no token gives none; outputs agree", async () => {
  const server = await startTestServer();
  try {
    const model = await register(server);
    const none = await compile(server, model);
    strictEqual(none.cache, "none");
    const expected = await run(server, none.id);
    strictEqual(cacheFiles(server, ".model").length, 0, "no token writes no files");
    const miss = await compile(server, model, cacheToken(1));
    strictEqual(miss.cache, "miss");
    strictEqual(cacheFiles(server, ".model").length, 1);
    strictEqual(cacheFiles(server, ".data").length, 1);
    const hit = await compile(server, model, cacheToken(1));
    strictEqual(hit.cache, "hit");
    deepStrictEqual(await run(server, hit.id), expected);
    deepStrictEqual(await run(server, miss.id), expected);
    const otherToken = await compile(server, model, cacheToken(2));
    strictEqual(otherToken.cache, "miss");
    strictEqual(await cacheCount(server, "hit"), 1);
    strictEqual(await cacheCount(server, "miss"), 2);
    strictEqual(await cacheCount(server, "none"), 1);
    const devices = await server.request("GET", "/v1/devices");
    deepStrictEqual(
      (devices.body.devices as { numberOfCacheFilesNeeded: unknown }[])[0].numberOfCacheFilesNeeded,
      { modelCache: 1, dataCache: 1 },
    );
  } finally {
    await server.close();
  }
});

for (
  const [what, tamper, reason] of [
    [
      "a flipped bit in the model cache",
      (s: TestServer) => flipBit(cacheFiles(s, ".model")[0]),
      /model cache/,
    ],
    ["a truncated data cache", (s: TestServer) => {
      const path = cacheFiles(s, ".data")[0];
      Deno.writeFileSync(path, Deno.readFileSync(path).subarray(1));
    }, /recorded size and header/],
    ["a truncated model cache", (s: TestServer) => {
      const path = cacheFiles(s, ".model")[0];
      Deno.writeFileSync(path, Deno.readFileSync(path).subarray(0, 10));
    }, /model cache/],
    [
      "a deleted data cache file",
      (s: TestServer) => Deno.removeSync(cacheFiles(s, ".data")[0]),
      /data cache/,
    ],
  ] as const
) {
  Deno.test(`${what} is detected: prepared anew, answered miss, counted rejected`, async () => {
    const server = await startTestServer();
    try {
      const model = await register(server);
      const expected = await run(server, (await compile(server, model)).id);
      strictEqual((await compile(server, model, cacheToken(7))).cache, "miss");
      tamper(server);
      const again = await compile(server, model, cacheToken(7));
      strictEqual(again.cache, "miss");
      match(String(again.cacheRejected), reason);
      deepStrictEqual(await run(server, again.id), expected);
      strictEqual(await cacheCount(server, "rejected"), 1);
      const healed = await compile(server, model, cacheToken(7));
      strictEqual(healed.cache, "hit", "the rewritten cache is used next time");
      deepStrictEqual(await run(server, healed.id), expected);
    } finally {
      await server.close();
    }
  });
}

Deno.test("a flipped bit in the data cache changes weights, never the plan (NNAPI's rule)", async () => {
  const server = await startTestServer();
  try {
    const model = await register(server);
    const expected = await run(server, (await compile(server, model)).id);
    strictEqual((await compile(server, model, cacheToken(8))).cache, "miss");
    const [data] = cacheFiles(server, ".data");
    const bytes = Deno.readFileSync(data);
    // After the 128-byte header: flip the sign of every float (raw and packed weights).
    for (let i = 128 + 3; i < bytes.length; i += 4) bytes[i] ^= 0x80;
    Deno.writeFileSync(data, bytes);
    const tampered = await compile(server, model, cacheToken(8));
    strictEqual(tampered.cache, "hit", "the data cache is not hash-checked, as in NNAPI");
    const outputs = await run(server, tampered.id);
    strictEqual(outputs.length, expected.length, "shapes come from the protected model cache");
    notStrictEqual(JSON.stringify(outputs), JSON.stringify(expected));
  } finally {
    await server.close();
  }
});

Deno.test("weights read on first use: a data cache broken after the hit is prepared anew", async () => {
  const server = await startTestServer();
  try {
    const model = await register(server);
    const expected = await run(server, (await compile(server, model)).id);
    strictEqual((await compile(server, model, cacheToken(6))).cache, "miss");
    const hit = await compile(server, model, cacheToken(6));
    strictEqual(hit.cache, "hit");
    const [data] = cacheFiles(server, ".data");
    Deno.writeFileSync(data, Deno.readFileSync(data).subarray(0, 200));
    deepStrictEqual(await run(server, hit.id), expected, "the execution still gets right outputs");
    strictEqual(await cacheCount(server, "rejected"), 1);
    strictEqual(
      (await compile(server, model, cacheToken(6))).cache,
      "hit",
      "the entry was rewritten",
    );
  } finally {
    await server.close();
  }
});

Deno.test("cache files swapped between two tokens are rejected for both", async () => {
  const server = await startTestServer();
  try {
    const a = await register(server, convModel(1));
    const b = await register(server, convModel(-2));
    const expectedA = await run(server, (await compile(server, a)).id);
    const expectedB = await run(server, (await compile(server, b)).id);
    notStrictEqual(JSON.stringify(expectedA), JSON.stringify(expectedB));
    strictEqual((await compile(server, a, cacheToken(1))).cache, "miss");
    strictEqual((await compile(server, b, cacheToken(2))).cache, "miss");
    for (const suffix of [".model", ".data"] as const) {
      const [first, second] = cacheFiles(server, suffix);
      const firstBytes = Deno.readFileSync(first);
      Deno.writeFileSync(first, Deno.readFileSync(second));
      Deno.writeFileSync(second, firstBytes);
    }
    const againA = await compile(server, a, cacheToken(1));
    const againB = await compile(server, b, cacheToken(2));
    strictEqual(againA.cache, "miss");
    strictEqual(againB.cache, "miss");
    deepStrictEqual(await run(server, againA.id), expectedA);
    deepStrictEqual(await run(server, againB.id), expectedB);
  } finally {
    await server.close();
  }
});

Deno.test("a deleted KV entry makes the files unusable; the cache is rebuilt", async () => {
  const server = await startTestServer();
  try {
    const model = await register(server);
    strictEqual((await compile(server, model, cacheToken(3))).cache, "miss");
    await server.close();
    const kv = await Deno.openKv(`${server.dataDir}/nnserve.kv`);
    for await (const entry of kv.list({ prefix: ["cache"] })) await kv.delete(entry.key);
    kv.close();
    const files = [...cacheFiles(server, ".model"), ...cacheFiles(server, ".data")];
    const bytes = files.map((path) => Deno.readFileSync(path));
    const restarted = await startTestServer({ dataDir: server.dataDir });
    try {
      // Files no map entry names are a crash's leftovers: the start removes them.
      deepStrictEqual(cacheFiles(restarted, ".model"), []);
      // The same files appearing while it runs are refused, not used.
      files.forEach((path, i) => Deno.writeFileSync(path, bytes[i]));
      const again = await compile(restarted, model, cacheToken(3));
      strictEqual(again.cache, "miss");
      match(String(again.cacheRejected), /without a map entry/);
      strictEqual((await compile(restarted, model, cacheToken(3))).cache, "hit");
    } finally {
      await restarted.close();
    }
  } catch (error) {
    await server.close().catch(() => {});
    throw error;
  }
});

Deno.test("hits survive a restart; a driver version change invalidates every entry", async () => {
  const first = await startTestServer();
  const model = await register(first);
  const cached = await compile(first, model, cacheToken(4));
  strictEqual(cached.cache, "miss");
  const expected = await run(first, cached.id);
  await first.close();
  const second = await startTestServer({ dataDir: first.dataDir });
  try {
    const hit = await compile(second, model, cacheToken(4));
    strictEqual(hit.cache, "hit");
    deepStrictEqual(await run(second, hit.id), expected);
    deepStrictEqual(await run(second, cached.id), expected, "the earlier compilation revives");
  } finally {
    await second.close();
  }
  const upgraded = await startTestServer({ dataDir: first.dataDir, driverVersion: "next" });
  try {
    strictEqual(cacheFiles(upgraded, ".model").length, 0, "old files are removed");
    const after = await compile(upgraded, model, cacheToken(4));
    strictEqual(after.cache, "miss");
    deepStrictEqual(await run(upgraded, after.id), expected);
  } finally {
    await upgraded.close();
  }
});

Deno.test("concurrent compilations with one token all succeed and leave one good entry", async () => {
  const server = await startTestServer();
  try {
    const model = await register(server);
    const expected = await run(server, (await compile(server, model)).id);
    const results = await Promise.all(
      Array.from({ length: 8 }, () => compile(server, model, cacheToken(5))),
    );
    ok(results.every((r) => r.cache === "miss" || r.cache === "hit"));
    strictEqual(results.filter((r) => r.cacheRejected).length, 0);
    for (const r of results) deepStrictEqual(await run(server, r.id), expected);
    strictEqual(cacheFiles(server, ".model").length, 1);
    strictEqual((await compile(server, model, cacheToken(5))).cache, "hit");
  } finally {
    await server.close();
  }
});

Deno.test("one client's token never selects another client's cache", async () => {
  const server = await startTestServer({
    apiKeys: new Map([["key-a", "alice"], ["key-b", "bob"]]),
  });
  const as = (key: string) => ({ authorization: `Bearer ${key}` });
  try {
    for (const key of ["key-a", "key-b"]) {
      const model = await server.request("POST", "/v1/models", convModel(), as(key));
      const c = await server.request("POST", "/v1/compilations", {
        model: model.body.id,
        cache: { token: cacheToken(9) },
      }, as(key));
      strictEqual(c.body.cache, "miss", `${key} gets its own entry`);
    }
  } finally {
    await server.close();
  }
});

Deno.test("the cache stays within its budget by evicting least recently used entries", async () => {
  const probe = await startTestServer();
  const model = await register(probe);
  await compile(probe, model, cacheToken(1));
  const entryBytes = cacheFiles(probe, ".model").concat(cacheFiles(probe, ".data"))
    .reduce((n, f) => n + Deno.statSync(f).size, 0);
  await probe.close();
  const server = await startTestServer({ cacheBytes: Math.floor(entryBytes * 2.5) });
  try {
    const id = await register(server);
    for (const t of [1, 2, 3, 4]) {
      strictEqual((await compile(server, id, cacheToken(t))).cache, "miss");
    }
    strictEqual(cacheFiles(server, ".model").length, 2, "two entries fit the budget");
    strictEqual((await compile(server, id, cacheToken(4))).cache, "hit");
    strictEqual((await compile(server, id, cacheToken(1))).cache, "miss", "the oldest was evicted");
  } finally {
    await server.close();
  }
});

Deno.test("cache files a crash left before the map named them are removed at start; named ones stay", async () => {
  const first = await startTestServer();
  const model = await register(first);
  const cached = await compile(first, model, cacheToken(6));
  strictEqual(cached.cache, "miss");
  await first.close();
  // A save a crash interrupted: both files written, the map never pointed at them.
  const key = "ab".repeat(32);
  const orphans = [".model", ".data"].map((suffix) =>
    `${first.dataDir}/cache/${key}-${Date.now()}-${crypto.randomUUID()}${suffix}`
  );
  for (const path of orphans) Deno.writeFileSync(path, new Uint8Array(16));
  const second = await startTestServer({ dataDir: first.dataDir });
  try {
    for (const path of orphans) {
      ok(!cacheFiles(second, path.endsWith(".model") ? ".model" : ".data").includes(path), path);
    }
    strictEqual(cacheFiles(second, ".model").length, 1, "the named entry's files stay");
    strictEqual((await compile(second, model, cacheToken(6))).cache, "hit");
  } finally {
    await second.close();
  }
});
