/**
 * The Open Inference Protocol's extensions at `/v2`, driven by the SDK's protocol client:
 * system shared memory over memories (regions registered, used for inputs and outputs at
 * offsets, status, unregister; CUDA refused), the model repository (index, unload, load
 * re-reading a changed entry, failed entries with their reason) and statistics (counts and
 * durations from the same series as `/metrics`). Results are compared with `/v1`.
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict";
import { NnClient, V2Error } from "../client/mod.ts";
import {
  addModel,
  mulModel,
  type TestServer,
  withTestServer,
  writeTree,
} from "./server_fixture.ts";

const KEYS = new Map([["key-a", "alice"], ["key-b", "bob"]]);
const ALICE = { authorization: "Bearer key-a" };

const isV2Error = (status: number) => (e: unknown) =>
  e instanceof V2Error && e.httpStatus === status;

Deno.test("v2 shared memory: regions over memories feed inputs and take outputs at offsets", async () => {
  await withTestServer({ apiKeys: KEYS }, async (server: TestServer) => {
    const registered = await server.request("POST", "/v1/models?name=calc", addModel(2), ALICE);
    const compiled = await server.request("POST", "/v1/compilations", {
      model: registered.body.id,
    }, ALICE);
    strictEqual(compiled.status, 201);
    const client = new NnClient({ baseUrl: server.url, apiKey: "key-a" });
    // One memory: 8 bytes of padding, input0, input1, then room for the output.
    const memory = await client.createMemory({ size: 40 });
    await memory.write(8, new Uint8Array(new Float32Array([1.5, 2, 10, -4]).buffer));
    const v2 = client.v2;
    await v2.registerSystemSharedMemory("io", memory.id, 32, 8);
    deepStrictEqual(await v2.systemSharedMemoryStatus(), [
      { name: "io", key: memory.id, offset: 8, byte_size: 32 },
    ]);
    await rejects(
      v2.registerSystemSharedMemory("io", memory.id, 8),
      isV2Error(400),
      "a name is registered once",
    );
    await rejects(v2.registerSystemSharedMemory("big", memory.id, 41), isV2Error(400));
    const malformed = await fetch(`${server.url}/v2/systemsharedmemory/region/m/register`, {
      method: "POST",
      headers: ALICE,
      body: JSON.stringify({ key: memory.id, byte_size: -1 }),
    });
    strictEqual(malformed.status, 400);
    ok(/byte_size/.test((await malformed.json()).error));
    await rejects(v2.registerSystemSharedMemory("x", "no-such-memory", 8), isV2Error(404));
    const result = await v2.infer("calc", [
      { name: "input0", datatype: "FP32", shape: [2], sharedMemory: { region: "io", byteSize: 8 } },
      {
        name: "input1",
        datatype: "FP32",
        shape: [2],
        sharedMemory: { region: "io", byteSize: 8, offset: 8 },
      },
    ], { outputs: [{ name: "output0", sharedMemory: { region: "io", byteSize: 8, offset: 16 } }] });
    deepStrictEqual(result.outputs, [{
      name: "output0",
      datatype: "FP32",
      shape: [2],
      parameters: { shared_memory_region: "io", shared_memory_byte_size: 8 },
    }]);
    const written = new Float32Array((await memory.read({ offset: 24, length: 8 })).slice().buffer);
    const v1 = await server.request(
      "POST",
      `/v1/compilations/${compiled.body.id}/executions`,
      { inputs: [{ data: [1.5, 2] }, { data: [10, -4] }] },
      ALICE,
    );
    deepStrictEqual([...written], (v1.body.outputs as { data: number[] }[])[0].data);
    deepStrictEqual([...written], [11.5, -2]);
    // A span past the region's end, an unknown region, another client's region.
    await rejects(
      v2.infer("calc", [
        {
          name: "input0",
          datatype: "FP32",
          shape: [2],
          sharedMemory: { region: "io", byteSize: 8, offset: 28 },
        },
        { name: "input1", datatype: "FP32", shape: [2], data: [1, 1] },
      ]),
      (e) =>
        e instanceof V2Error && e.httpStatus === 400 &&
        /outside shared memory region/.test(e.message),
    );
    await rejects(
      v2.infer("calc", [
        {
          name: "input0",
          datatype: "FP32",
          shape: [2],
          sharedMemory: { region: "nope", byteSize: 8 },
        },
        { name: "input1", datatype: "FP32", shape: [2], data: [1, 1] },
      ]),
      isV2Error(404),
    );
    const bob = new NnClient({ baseUrl: server.url, apiKey: "key-b" }).v2;
    deepStrictEqual(await bob.systemSharedMemoryStatus(), [], "regions are per client");
    await rejects(bob.registerSystemSharedMemory("mine", memory.id, 8), isV2Error(404));
    await rejects(bob.systemSharedMemoryStatus("io"), isV2Error(404));
    // CUDA shared memory: no regions, registration refused.
    deepStrictEqual(
      await (await fetch(`${server.url}/v2/cudasharedmemory/status`, { headers: ALICE })).json(),
      [],
    );
    const cuda = await fetch(`${server.url}/v2/cudasharedmemory/region/g/register`, {
      method: "POST",
      headers: ALICE,
      body: JSON.stringify({ raw_handle: { b64: "" }, device_id: 0, byte_size: 8 }),
    });
    strictEqual(cuda.status, 400);
    ok(/CUDA/.test((await cuda.json()).error));
    // Unregistered: gone; the memory stays.
    await v2.unregisterSystemSharedMemory("io");
    deepStrictEqual(await v2.systemSharedMemoryStatus(), []);
    await rejects(v2.unregisterSystemSharedMemory("io"), isV2Error(404));
    await v2.registerSystemSharedMemory("a", memory.id, 4);
    await v2.registerSystemSharedMemory("b", memory.id, 4, 4);
    await v2.unregisterSystemSharedMemory();
    deepStrictEqual(await v2.systemSharedMemoryStatus(), []);
    strictEqual((await memory.read()).byteLength, 40);
  });
});

Deno.test("v2 repository: index, unload, load re-reading a changed entry, failed entries", async () => {
  const repository = await Deno.makeTempDir({ prefix: "nnserve-repo-" });
  try {
    await writeTree(repository, {
      "calc/1/model.json": JSON.stringify(addModel(2)),
      "broken/1/model.json": "{not json",
    });
    await withTestServer({ modelRepository: repository }, async (server) => {
      await server.ready;
      const named = await server.request("POST", "/v1/models?name=mine&version=3", addModel(2));
      strictEqual(named.status, 201);
      const v2 = new NnClient({ baseUrl: server.url }).v2;
      const index = await v2.repositoryIndex();
      deepStrictEqual(index.filter((e) => e.name !== "broken"), [
        { name: "calc", version: "1", state: "READY" },
        { name: "mine", version: "3", state: "UNAVAILABLE" },
      ]);
      const broken = index.find((e) => e.name === "broken")!;
      strictEqual(broken.state, "UNAVAILABLE");
      ok(/model.json is not JSON/.test(broken.reason!), broken.reason ?? "no reason");
      deepStrictEqual((await v2.repositoryIndex(true)).map((e) => e.name), ["calc"]);

      const request = [
        { name: "input0", datatype: "FP32", shape: [2], data: [2, 3] },
        { name: "input1", datatype: "FP32", shape: [2], data: [4, 5] },
      ];
      deepStrictEqual([...(await v2.infer("calc", request)).outputs[0].data as Float32Array], [
        6,
        8,
      ]);
      await v2.unloadModel("calc");
      ok(!(await v2.isModelReady("calc")));
      await rejects(v2.infer("calc", request), isV2Error(400));
      // The entry changed on disk: load reads it again (MUL now).
      await writeTree(repository, { "calc/1/model.json": JSON.stringify(mulModel(2)) });
      await v2.loadModel("calc");
      ok(await v2.isModelReady("calc"));
      deepStrictEqual([...(await v2.infer("calc", request)).outputs[0].data as Float32Array], [
        8,
        15,
      ]);
      // A named model outside the repository: load compiles it.
      await v2.loadModel("mine");
      ok(await v2.isModelReady("mine", "3"));
      await rejects(
        v2.loadModel("broken"),
        (e) => e instanceof V2Error && /failed to load 'broken'/.test(e.message),
      );
      await rejects(v2.loadModel("nothing"), isV2Error(404));
    });
  } finally {
    await Deno.remove(repository, { recursive: true });
  }
});

Deno.test("v2 statistics: counts and durations per version, from the /metrics series", async () => {
  await withTestServer({ inlineWork: 0 }, async (server) => {
    for (const [version, model] of [["1", addModel(2)], ["2", mulModel(2)]] as const) {
      const registered = await server.request(
        "POST",
        `/v1/models?name=calc&version=${version}`,
        model,
      );
      await server.request("POST", "/v1/compilations", { model: registered.body.id });
    }
    const v2 = new NnClient({ baseUrl: server.url }).v2;
    const request = [
      { name: "input0", datatype: "FP32", shape: [2], data: [2, 3] },
      { name: "input1", datatype: "FP32", shape: [2], data: [4, 5] },
    ];
    for (let i = 0; i < 3; i++) await v2.infer("calc", request, { version: "1" });
    await v2.infer("calc", request);
    // A failure the driver sees: the wrong element count for the shape.
    await rejects(
      v2.infer("calc", [{ ...request[0], data: [1, 2, 3] }, request[1]], { version: "1" }),
      isV2Error(400),
    );
    const [one, two] = await v2.inferenceStatistics("calc");
    deepStrictEqual([one.name, one.version, two.version], ["calc", "1", "2"]);
    deepStrictEqual([one.inference_count, one.execution_count, two.inference_count], [3, 3, 1]);
    const s = one.inference_stats;
    deepStrictEqual(
      [s.success.count, s.fail.count, s.queue.count, s.compute_infer.count],
      [3, 1, 3, 3],
    );
    ok(s.success.ns > 0 && s.compute_infer.ns > 0 && s.compute_input.ns > 0);
    ok(s.compute_infer.ns <= s.success.ns, "compute is part of the whole");
    ok(one.last_inference > Date.now() - 60_000 && one.last_inference <= Date.now());
    deepStrictEqual(await v2.inferenceStatistics("calc", "2"), [two]);
    const all = await v2.inferenceStatistics();
    deepStrictEqual(all.map((m) => `${m.name}/${m.version}`), ["calc/1", "calc/2"]);
    // The same numbers as /metrics: the compute histogram's count for version 1, by name.
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    const counted = [
      ...metrics.matchAll(
        /^nnserve_execution_compute_seconds_count\{[^}]*model="calc",version="1"[^}]*\} (\d+)$/gm,
      ),
    ].reduce((n, m) => n + Number(m[1]), 0);
    strictEqual(counted, 3);
    await rejects(v2.inferenceStatistics("nope"), isV2Error(404));
  });
});
