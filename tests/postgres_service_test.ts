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
import { startPostgres } from "./postgres_fixture.ts";
import { addModel, startTestServer } from "./server_fixture.ts";

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
  } finally {
    await Deno.remove(dataDir, { recursive: true });
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
