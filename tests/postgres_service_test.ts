/**
 * The service with its state in PostgreSQL (NNSERVE_DATABASE_URL) instead of Deno KV: a real
 * cluster, a real server. Models, names and versions, compilations (the cache token hits
 * after a restart), executions, memories and regions, limits counted exactly under
 * concurrent requests, and everything still there after a restart on the same database;
 * a database that cannot be reached stops the start with one line naming the host only.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { NnClient } from "../client/mod.ts";
import { configFromEnv, startServer, StartupError } from "../server.ts";
import { DirectoryBlobStore } from "../store/blob_store.ts";
import { startPostgres } from "./postgres_fixture.ts";
import { startS3 } from "./s3_fixture.ts";
import { addModel, mainProcess, startTestServer } from "./server_fixture.ts";
import { OutputTail } from "./output_tail.ts";

Deno.test("the service keeps its state in PostgreSQL and finds it again after a restart", async () => {
  const postgres = await startPostgres();
  const dataDir = await Deno.makeTempDir({ prefix: "nnserve-test-" });
  try {
    const databaseUrl = await postgres.database("service");
    const token = btoa(String.fromCharCode(...new Uint8Array(32).fill(9)));
    let server = await startTestServer({
      dataDir,
      databaseUrl,
      modelLimits: { maxModelsPerClient: 3 },
    });
    let compilation: string, memory: string;
    try {
      // Limits count exactly: of 6 concurrent registrations, 3 pass.
      const attempts = await Promise.all(
        Array.from(
          { length: 6 },
          (_, i) => server.request("POST", `/v1/models?name=calc&version=${i + 1}`, addModel(2)),
        ),
      );
      deepStrictEqual(attempts.map((a) => a.status).sort(), [201, 201, 201, 429, 429, 429]);
      const model = attempts.find((a) => a.status === 201)!.body;
      const compiled = await server.request("POST", "/v1/compilations", {
        model: model.id,
        cache: { token },
      });
      strictEqual(compiled.body.cache, "miss");
      compilation = compiled.body.id as string;
      const run = await server.request("POST", `/v1/compilations/${compilation}/executions`, {
        inputs: [{ data: [1, 2] }, { data: [10, 20] }],
      });
      deepStrictEqual((run.body.outputs as { data: number[] }[])[0].data, [11, 22]);
      const client = new NnClient({ baseUrl: server.url });
      const created = await client.createMemory(new Uint8Array(new Float32Array([3, 4]).buffer));
      memory = created.id;
      await client.v2.registerSystemSharedMemory("in", memory, 8);
      const listed = await server.request("GET", "/v1/models?name=calc");
      strictEqual((listed.body.models as unknown[]).length, 3);
    } finally {
      await server.close();
    }

    server = await startTestServer({ dataDir, databaseUrl });
    try {
      const run = await server.request("POST", `/v1/compilations/${compilation}/executions`, {
        inputs: [{ data: [5, 6] }, { data: [1, 1] }],
      });
      strictEqual(run.status, 200, JSON.stringify(run.body));
      deepStrictEqual((run.body.outputs as { data: number[] }[])[0].data, [6, 7]);
      const described = await server.request("GET", `/v1/compilations/${compilation}`);
      const again = await server.request("POST", "/v1/compilations", {
        model: described.body.model,
        cache: { token },
      });
      strictEqual(again.body.cache, "hit", "the token->hash map lives in the database");
      const v2 = new NnClient({ baseUrl: server.url }).v2;
      deepStrictEqual(await v2.systemSharedMemoryStatus(), [
        { name: "in", key: memory, offset: 0, byte_size: 8 },
      ]);
      const result = await v2.infer("calc", [
        {
          name: "input0",
          datatype: "FP32",
          shape: [2],
          sharedMemory: { region: "in", byteSize: 8 },
        },
        { name: "input1", datatype: "FP32", shape: [2], data: [1, 1] },
      ]); // the one compiled version serves
      deepStrictEqual([...result.outputs[0].data as Float32Array], [4, 5]);
    } finally {
      await server.close();
    }
    // Without a shared blob store the process says at start that its blobs are its own.
    const child = mainProcess(dataDir, { NNSERVE_DATABASE_URL: databaseUrl, NNSERVE_GPU: "0" });
    const output = new OutputTail(child.stdout);
    try {
      await output.waitFor(/listening on/, { timeoutMs: 30_000 });
      const said = output.tail();
      ok(/blobs .* stay in .*other replicas cannot read: set NNSERVE_BLOB_DIR/.test(said), said);
    } finally {
      child.kill("SIGKILL");
      await child.status;
      await child.stderr.cancel();
      await output.done;
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true });
    await postgres.stop();
  }
});

Deno.test("two replicas on one database and one S3 bucket: a model one registers and compiles runs on the other, with its own empty disk", async () => {
  const postgres = await startPostgres();
  const s3 = await startS3("blobs");
  const databaseUrl = await postgres.database("replicas");
  const blobs = {
    s3: {
      bucket: "blobs",
      endpoint: s3.endpoint,
      credentials: s3.credentials,
    },
  };
  const a = await startTestServer({ databaseUrl, blobs });
  const b = await startTestServer({ databaseUrl, blobs });
  try {
    const model = await a.request("POST", "/v1/models?name=shared", addModel(3));
    const compiled = await a.request("POST", "/v1/compilations", { model: model.body.id });
    strictEqual(compiled.status, 201);
    const inputs = { inputs: [{ data: [1, 2, 3] }, { data: [0.5, 0.5, 0.5] }] };
    const path = `/v1/compilations/${compiled.body.id}/executions`;
    const onA = await a.request("POST", path, inputs);
    const onB = await b.request("POST", path, inputs);
    strictEqual(onB.status, 200, JSON.stringify(onB.body));
    deepStrictEqual(onB.body.outputs, onA.body.outputs);
    deepStrictEqual((await b.request("GET", `/v1/models/${model.body.id}`)).body.name, "shared");
    // /v2 on B serves version 1; A adds version 2; B serves it within about a second.
    const request = [
      { name: "input0", datatype: "FP32", shape: [3], data: [1, 2, 3] },
      { name: "input1", datatype: "FP32", shape: [3], data: [1, 1, 1] },
    ];
    const v2 = new NnClient({ baseUrl: b.url }).v2;
    strictEqual((await v2.infer("shared", request)).modelVersion, "1");
    const second = await a.request("POST", "/v1/models?name=shared&version=2", addModel(3));
    await a.request("POST", "/v1/compilations", { model: second.body.id });
    const changed = performance.now();
    let version = "1";
    while (version === "1" && performance.now() - changed < 3000) {
      version = (await v2.infer("shared", request)).modelVersion!;
    }
    strictEqual(version, "2", "B sees A's new version");
    ok(
      performance.now() - changed < 1500,
      `within about a second: ${performance.now() - changed} ms`,
    );
    // Nothing of the model is on either replica's disk: its blobs are in the bucket.
    for (const server of [a, b]) {
      const local = await Array.fromAsync(
        new DirectoryBlobStore(`${server.dataDir}/blobs`).list(""),
      );
      deepStrictEqual(local, []);
    }
    // Deleted through B, gone for A within a second, though A holds it prepared in memory.
    strictEqual((await a.request("POST", path, inputs)).status, 200);
    strictEqual((await b.request("DELETE", `/v1/compilations/${compiled.body.id}`)).status, 204);
    const deleted = performance.now();
    let status = 200;
    while (status === 200 && performance.now() - deleted < 3000) {
      status = (await a.request("POST", path, inputs)).status;
    }
    strictEqual(status, 404, "A stops serving the deleted compilation");
    ok(performance.now() - deleted < 1000, `within a second: ${performance.now() - deleted} ms`);
    // Removed for good through B (no compilation of it left): A drops the version's
    // execution series too (the other version's stay).
    const versionSeries = async (version: string, on = a) =>
      (await (await fetch(`${on.url}/metrics`)).text())
        .includes(`model="shared",version="${version}"`);
    ok(await versionSeries("1"), "A ran version 1");
    await b.request("DELETE", `/v1/models/${model.body.id}`);
    strictEqual((await a.request("GET", `/v1/models/${model.body.id}`)).status, 404);
    const removed = performance.now();
    while (await versionSeries("1") && performance.now() - removed < 3000) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    ok(!await versionSeries("1"), "A forgets the removed version's series");
    ok(await versionSeries("2", b), "B keeps the version 2 it ran");
  } finally {
    for (const server of [a, b]) {
      await server.close();
      await Deno.remove(server.dataDir, { recursive: true });
    }
    await s3.stop();
    await postgres.stop();
  }
});

Deno.test("a database that cannot be reached stops the start with one line, no password", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "nnserve-test-" });
  try {
    let error: unknown;
    try {
      await (await startServer({
        hostname: "127.0.0.1",
        port: 0,
        dataDir,
        databaseUrl: "postgres://nnserve:secret-password@127.0.0.1:1/none",
        gpu: false,
      })).close();
    } catch (e) {
      error = e;
    }
    ok(error instanceof StartupError, String(error));
    ok(/cannot open the database at 127\.0\.0\.1:1/.test(error.message), error.message);
    ok(!error.message.includes("secret-password"), error.message);
    const before = Deno.env.get("NNSERVE_DATABASE_URL");
    Deno.env.set("NNSERVE_DATABASE_URL", "postgres://db.example:5432/x");
    try {
      strictEqual(configFromEnv().databaseUrl, "postgres://db.example:5432/x");
    } finally {
      if (before === undefined) Deno.env.delete("NNSERVE_DATABASE_URL");
      else Deno.env.set("NNSERVE_DATABASE_URL", before);
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});
