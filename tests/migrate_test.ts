/**
 * `deno task migrate` moves an embedded data dir into PostgreSQL and an S3 bucket (s3rver):
 * the same service then starts on them and serves every model (one stored before blobs, as
 * files), compilation, name, memory and region as before; a second migration into the
 * now-full database is refused and changes nothing; the data dir is locked while it runs.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { NnClient } from "../client/mod.ts";
import { DirectoryBlobStore } from "../store/blob_store.ts";
import type { ModelRecord } from "../store/model_store.ts";
import { startPostgres } from "./postgres_fixture.ts";
import { startS3 } from "./s3_fixture.ts";
import { addModel, mulModel, runDeno, startTestServer } from "./server_fixture.ts";

/** `deno task migrate` with the service's variables; its exit code and output. */
function runMigrate(env: Record<string, string>) {
  return runDeno(["task", "-q", "migrate"], env);
}

Deno.test("deno task migrate moves a data dir into PostgreSQL and S3, and the service runs on them", async () => {
  const postgres = await startPostgres();
  const s3 = await startS3("cluster");
  const first = await startTestServer({});
  const dataDir = first.dataDir;
  try {
    const adder = await first.request("POST", "/v1/models?name=calc&version=1", addModel(2));
    const older = await first.request("POST", "/v1/models?name=calc&version=2", mulModel(2));
    const token = new Uint8Array(32).fill(4).toBase64();
    const compiled = await first.request("POST", "/v1/compilations", {
      model: adder.body.id,
      cache: { token },
    });
    strictEqual(compiled.body.cache, "miss");
    await first.request("POST", "/v1/compilations", { model: older.body.id });
    const client = new NnClient({ baseUrl: first.url });
    const memory = await client.createMemory(new Uint8Array(new Float32Array([7, 8]).buffer));
    await client.v2.registerSystemSharedMemory("in", memory.id, 8);
    await first.close();
    // Version 2 as a model stored before blobs: its files in models/, no blobs in its record.
    const kv = await Deno.openKv(`${dataDir}/nnserve.kv`);
    const entry = await kv.get<ModelRecord>(["model", "anonymous", older.body.id as string]);
    const blobs = new DirectoryBlobStore(`${dataDir}/blobs`);
    await Deno.mkdir(`${dataDir}/models`, { recursive: true });
    await Deno.writeFile(
      `${dataDir}/models/${older.body.id}.json`,
      await blobs.get(entry.value!.blobs!.document),
    );
    await Deno.writeFile(
      `${dataDir}/models/${older.body.id}.weights`,
      await blobs.get(entry.value!.blobs!.weights),
    );
    await blobs.delete(entry.value!.blobs!.document);
    await blobs.delete(entry.value!.blobs!.weights);
    const { blobs: _gone, ...legacy } = entry.value!;
    await kv.set(entry.key, legacy);
    kv.close();

    const databaseUrl = await postgres.database("migrated");
    const env = {
      NNSERVE_DATA_DIR: dataDir,
      NNSERVE_DATABASE_URL: databaseUrl,
      NNSERVE_S3_BUCKET: "cluster",
      NNSERVE_S3_ENDPOINT: s3.endpoint,
      AWS_ACCESS_KEY_ID: "S3RVER",
      AWS_SECRET_ACCESS_KEY: "S3RVER",
      AWS_REGION: "us-east-1",
    };
    const migrated = await runMigrate(env);
    strictEqual(migrated.code, 0, migrated.text);
    ok(/model blobs \(1 models from files\)/.test(migrated.text), migrated.text);
    ok(/1 memories and 1 compilation cache entries moved/.test(migrated.text), migrated.text);
    const again = await runMigrate(env);
    strictEqual(again.code, 1, again.text);
    ok(/already holds state/.test(again.text), again.text);

    // Memories and the cache now read from the bucket: their files are not needed any more.
    await Deno.remove(`${dataDir}/memories`, { recursive: true });
    await Deno.remove(`${dataDir}/cache`, { recursive: true });
    const second = await startTestServer({
      dataDir,
      databaseUrl,
      blobs: {
        s3: {
          bucket: "cluster",
          endpoint: s3.endpoint,
          credentials: s3.credentials,
        },
      },
    });
    try {
      const run = await second.request("POST", `/v1/compilations/${compiled.body.id}/executions`, {
        inputs: [{ data: [1, 2] }, { data: [3, 4] }],
      });
      deepStrictEqual((run.body.outputs as { data: number[] }[])[0].data, [4, 6]);
      const v2 = new NnClient({ baseUrl: second.url }).v2;
      // Version 2 came from files: it serves from the bucket now.
      const result = await v2.infer("calc", [
        {
          name: "input0",
          datatype: "FP32",
          shape: [2],
          sharedMemory: { region: "in", byteSize: 8 },
        },
        { name: "input1", datatype: "FP32", shape: [2], data: [2, 2] },
      ]);
      deepStrictEqual([result.modelVersion, [...result.outputs[0].data as Float32Array]], ["2", [
        14,
        16,
      ]]);
      // The cache entry came along: the same model and token is a hit.
      const again = await second.request("POST", "/v1/compilations", {
        model: adder.body.id,
        cache: { token },
      });
      strictEqual(again.body.cache, "hit", JSON.stringify(again.body));
      const listed = await second.request("GET", "/v1/models?name=calc");
      strictEqual((listed.body.models as unknown[]).length, 2);
    } finally {
      await second.close();
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true });
    await s3.stop();
    await postgres.stop();
  }
});
