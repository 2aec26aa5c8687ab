import { deepStrictEqual, match, strictEqual } from "node:assert/strict";
import { DirectoryBlobStore } from "../store/blob_store.ts";
import { addModel, startTestServer } from "./server_fixture.ts";

Deno.test("a restart keeps registered models and compilations", async () => {
  const first = await startTestServer();
  const model = await first.request("POST", "/v1/models", addModel(3));
  strictEqual(model.status, 201);
  const compilation = await first.request("POST", "/v1/compilations", { model: model.body.id });
  strictEqual(compilation.status, 201);
  await first.close();

  const second = await startTestServer({ dataDir: first.dataDir });
  try {
    const again = await second.request("GET", `/v1/models/${model.body.id}`);
    strictEqual(again.status, 200);
    strictEqual(again.body.checksum, model.body.checksum);
    const run = await second.request("POST", `/v1/compilations/${compilation.body.id}/executions`, {
      inputs: [{ data: [1, 2, 3] }, { data: [10, 20, 30] }],
    });
    strictEqual(run.status, 200);
    deepStrictEqual(run.body.outputs, [{ dimensions: [3], data: [11, 22, 33] }]);
    const fresh = await second.request("POST", "/v1/compilations", { model: model.body.id });
    strictEqual(fresh.status, 201);
  } finally {
    await second.close();
  }
});

Deno.test("a deleted model's compilations keep running, also after a restart", async () => {
  const first = await startTestServer();
  const model = await first.request("POST", "/v1/models", addModel(2));
  const compilation = await first.request("POST", "/v1/compilations", { model: model.body.id });
  strictEqual((await first.request("DELETE", `/v1/models/${model.body.id}`)).status, 204);
  strictEqual((await first.request("GET", `/v1/models/${model.body.id}`)).status, 404);
  await first.close();

  const second = await startTestServer({ dataDir: first.dataDir });
  try {
    const run = await second.request("POST", `/v1/compilations/${compilation.body.id}/executions`, {
      inputs: [{ data: [1, 2] }, { data: [3, 4] }],
    });
    strictEqual(run.status, 200);
    deepStrictEqual(run.body.outputs, [{ dimensions: [2], data: [4, 6] }]);
    const del = await second.request("DELETE", `/v1/compilations/${compilation.body.id}`);
    strictEqual(del.status, 204);
    const blobs = await Array.fromAsync(
      new DirectoryBlobStore(`${first.dataDir}/blobs`).list("models/"),
    );
    strictEqual(blobs.length, 0, "the model's blobs are removed with its last compilation");
  } finally {
    await second.close();
  }
});

Deno.test("a tampered model document is not loaded after a restart", async () => {
  const first = await startTestServer();
  const model = await first.request("POST", "/v1/models", addModel(2));
  await first.close();
  const dir = `${first.dataDir}/blobs/models/${model.body.id}`;
  // Of the model's two blobs (document, weights), the document is the JSON.
  const path = Array.from(Deno.readDirSync(dir), (e) => `${dir}/${e.name}`)
    .find((p) => Deno.readTextFileSync(p).includes('"dimensions":[2]'))!;
  const text = await Deno.readTextFile(path);
  await Deno.writeTextFile(path, text.replace('"dimensions":[2]', '"dimensions":[4]'));
  const second = await startTestServer({ dataDir: first.dataDir });
  try {
    const compile = await second.request("POST", "/v1/compilations", { model: model.body.id });
    strictEqual(compile.status, 500);
    match(String(compile.body.message), /does not match its hash/);
    strictEqual(compile.body.status, "GENERAL_FAILURE");
  } finally {
    await second.close();
  }
});
