/**
 * A compilation racing its model's delete, against a real server and a restart: whatever
 * order they land in, no compilation is left without its model, every compilation stays
 * executable and deletable, and once all are deleted the model's files are gone.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { DirectoryBlobStore } from "../store/blob_store.ts";
import { addModel, startTestServer, type TestServer } from "./server_fixture.ts";

/** The blobs of models in the data dir (document and weights of each). */
async function modelFiles(dataDir: string): Promise<string[]> {
  return await Array.fromAsync(new DirectoryBlobStore(`${dataDir}/blobs`).list("models/"));
}

async function execute(server: TestServer, compilation: string) {
  return await server.request("POST", `/v1/compilations/${compilation}/executions`, {
    inputs: [{ data: [1, 2, 3, 4] }, { data: [10, 20, 30, 40] }],
  });
}

Deno.test("a compilation racing its model's delete never outlives the model's document", async () => {
  let server = await startTestServer();
  const dataDir = server.dataDir;
  try {
    const compilations: string[] = [];
    let refused = 0;
    for (let round = 0; round < 30; round++) {
      const model = await server.request("POST", "/v1/models", addModel(4));
      const [compiled, deleted] = await Promise.all([
        server.request("POST", "/v1/compilations", { model: model.body.id }),
        // Land the delete at a different point of the preparation each round.
        new Promise((resolve) => setTimeout(resolve, round % 3)).then(() =>
          server.request("DELETE", `/v1/models/${model.body.id}`)
        ),
      ]);
      strictEqual(deleted.status, 204);
      if (compiled.status === 201) compilations.push(compiled.body.id as string);
      else {
        strictEqual(compiled.status, 404, JSON.stringify(compiled.body));
        refused++;
      }
    }
    ok(compilations.length > 0 || refused > 0);
    await server.close();
    server = await startTestServer({ dataDir });
    for (const id of compilations) {
      const result = await execute(server, id);
      strictEqual(result.status, 200, JSON.stringify(result.body));
      deepStrictEqual(result.body.outputs, [{ dimensions: [4], data: [11, 22, 33, 44] }]);
      strictEqual((await server.request("DELETE", `/v1/compilations/${id}`)).status, 204);
    }
    deepStrictEqual(await modelFiles(dataDir), [], "every deleted model's files are gone");
  } finally {
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("of concurrent deletes of one compilation exactly one succeeds, and then its model goes", async () => {
  const server = await startTestServer();
  try {
    const model = await server.request("POST", "/v1/models", addModel(4));
    const compilation = await server.request("POST", "/v1/compilations", { model: model.body.id });
    strictEqual((await server.request("DELETE", `/v1/models/${model.body.id}`)).status, 204);
    const statuses = await Promise.all(
      [1, 2, 3].map(async () =>
        (await server.request("DELETE", `/v1/compilations/${compilation.body.id}`)).status
      ),
    );
    deepStrictEqual(statuses.sort(), [204, 404, 404]);
    deepStrictEqual(await modelFiles(server.dataDir), []);
  } finally {
    await server.close();
    await Deno.remove(server.dataDir, { recursive: true });
  }
});

Deno.test("a compilation whose model's record is gone can still be deleted", async () => {
  let server = await startTestServer();
  const dataDir = server.dataDir;
  try {
    const model = await server.request("POST", "/v1/models", addModel(4));
    const compilation = await server.request("POST", "/v1/compilations", { model: model.body.id });
    await server.close();
    // A data dir written by an earlier version that let the race orphan compilations.
    const kv = await Deno.openKv(`${dataDir}/nnserve.kv`);
    await kv.delete(["model", "anonymous", model.body.id as string]);
    kv.close();
    server = await startTestServer({ dataDir });
    strictEqual((await execute(server, compilation.body.id as string)).status, 404);
    const deleted = await server.request("DELETE", `/v1/compilations/${compilation.body.id}`);
    strictEqual(deleted.status, 204, JSON.stringify(deleted.body));
    strictEqual(
      (await server.request("DELETE", `/v1/compilations/${compilation.body.id}`)).status,
      404,
    );
  } finally {
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});
