/**
 * The model repository (NNSERVE_MODEL_REPOSITORY): every `<name>/<version>` is registered and
 * compiled for every client before `/readyz` answers 200 (503 with Retry-After until then);
 * `config.json` sets preference and warm-up; broken entries are reported by name and do not
 * stop the others; a restart reuses unchanged entries' models and compilations, replaces
 * changed ones and deletes removed ones; an unreadable repository stops the start with one line.
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict";
import { StartupError } from "../server.ts";
import { onnxBytes } from "../tools/onnx_graphs.ts";
import { addModel, startTestServer, type TestServer, writeTree } from "./server_fixture.ts";

const KEYS = new Map([["key-a", "alice"], ["key-b", "bob"]]);
const ALICE = { authorization: "Bearer key-a" };
const BOB = { authorization: "Bearer key-b" };

const ONNX_ADD = onnxBytes({
  inputs: [{ name: "a", dims: [2] }, { name: "b", dims: [2] }],
  outputs: [{ name: "sum", dims: [2] }],
  nodes: [{ op: "Add", inputs: ["a", "b"], outputs: ["sum"] }],
  initializers: [],
});

interface Entry {
  name: string;
  version: string;
  state: string;
  error?: string;
  clients: { client: string; model: string; compilation: string }[];
}

/**
 * Every entry, with every client's ids, once `/readyz` answers 200 (whose answer without a
 * key holds only counts: the whole list is the server's own).
 */
async function readyEntries(server: TestServer): Promise<Entry[]> {
  const entries = await server.ready;
  ok(entries, "the repository loaded");
  const { status, body } = await server.request("GET", "/readyz");
  strictEqual(status, 200, JSON.stringify(body));
  strictEqual(body.status, "ready");
  const failed = entries.filter((e) => e.state === "failed").length;
  deepStrictEqual(body.entries, { ready: entries.length - failed, failed });
  return entries;
}

function entry(entries: Entry[], name: string, version: string): Entry {
  const found = entries.find((e) => e.name === name && e.version === version);
  ok(found, `entry ${name}/${version} in ${JSON.stringify(entries.map((e) => e.name))}`);
  return found;
}

async function add(server: TestServer, compilation: string, headers: HeadersInit, n: number) {
  const a = Array.from({ length: n }, (_, i) => i), b = a.map((v) => 10 * v);
  const { status, body } = await server.request(
    "POST",
    `/v1/compilations/${compilation}/executions`,
    { inputs: [{ data: a }, { data: b }] },
    headers,
  );
  strictEqual(status, 200, JSON.stringify(body));
  return (body.outputs as { data: number[] }[])[0].data;
}

Deno.test("the model repository is compiled for every client before /readyz, broken entries reported by name", async () => {
  const repository = await Deno.makeTempDir({ prefix: "nnserve-repository-" });
  await writeTree(repository, {
    "adder/1/model.json": JSON.stringify(addModel(2)),
    "adder/2/model.json": JSON.stringify(addModel(3)),
    "adder/config.json": JSON.stringify({ preference: "LOW_POWER", warmup: 2 }),
    "onnx-add/1/model.onnx": ONNX_ADD,
    "broken/1/model.json": "{not json",
    "bad-config/config.json": JSON.stringify({ preference: "FASTEST" }),
    "bad-config/1/model.json": JSON.stringify(addModel(2)),
    "empty/1/notes.txt": "no model here",
    // Slow to warm up: /readyz says 503 meanwhile.
    "slow/1/model.json": JSON.stringify(addModel(1 << 18)),
    "slow/config.json": JSON.stringify({ warmup: 40 }),
  });
  let server = await startTestServer({ apiKeys: KEYS, modelRepository: repository });
  try {
    const early = await fetch(`${server.url}/readyz`);
    const earlyBody = await early.json();
    strictEqual(early.status, 503, JSON.stringify(earlyBody));
    strictEqual(early.headers.get("retry-after"), "1");
    strictEqual(earlyBody.status, "RESOURCE_EXHAUSTED_TRANSIENT");
    strictEqual((await server.request("GET", "/livez")).status, 200, "live while loading");
    const entries = await readyEntries(server);
    for (const [name, version] of [["adder", "1"], ["adder", "2"], ["onnx-add", "1"]]) {
      const e = entry(entries, name, version);
      strictEqual(e.state, "ready", JSON.stringify(e));
      deepStrictEqual(e.clients.map((c) => c.client).sort(), ["alice", "bob"]);
    }
    ok(/^model\.json is not JSON/.test(entry(entries, "broken", "1").error!), "names its fault");
    ok(/config\.json: preference/.test(entry(entries, "bad-config", "").error!));
    ok(/no model\.json or model\.onnx/.test(entry(entries, "empty", "1").error!));
    // Each client has its own copy, named and versioned, compiled and executable.
    const adder1 = entry(entries, "adder", "1").clients;
    const forAlice = adder1.find((c) => c.client === "alice")!;
    const forBob = adder1.find((c) => c.client === "bob")!;
    ok(forAlice.model !== forBob.model);
    deepStrictEqual(await add(server, forAlice.compilation, ALICE, 2), [0, 11]);
    deepStrictEqual(await add(server, forBob.compilation, BOB, 2), [0, 11]);
    const other = await server.request("GET", `/v1/models/${forBob.model}`, undefined, ALICE);
    strictEqual(other.status, 404, "alice cannot see bob's copy");
    const listed = await server.request("GET", "/v1/models?name=adder", undefined, ALICE);
    deepStrictEqual(
      (listed.body.models as { version: string; repository?: string }[])
        .map((m) => [m.version, typeof m.repository]).sort(),
      [["1", "string"], ["2", "string"]],
    );
    const compilation = await server.request(
      "GET",
      `/v1/compilations/${forAlice.compilation}`,
      undefined,
      ALICE,
    );
    strictEqual(compilation.body.preference, "LOW_POWER", "config.json's preference");
    // Warm-up: 2 executions per client and version of adder, 40 per client of slow.
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    const executions = Number(/nnserve_executions_total\{status="NONE"\} (\d+)/.exec(metrics)?.[1]);
    strictEqual(executions, 2 * 2 * 2 + 2 * 40 + 2, "warm-up executions (and the two above)");

    // A restart reuses what is unchanged, replaces what changed, deletes what is gone.
    await server.close();
    await writeTree(repository, { "adder/2/model.json": JSON.stringify(addModel(4)) });
    await Deno.remove(`${repository}/onnx-add`, { recursive: true });
    await Deno.remove(`${repository}/slow`, { recursive: true });
    server = await startTestServer({
      apiKeys: KEYS,
      modelRepository: repository,
      dataDir: server.dataDir,
    });
    const again = await readyEntries(server);
    deepStrictEqual(entry(again, "adder", "1").clients, adder1, "unchanged: same ids");
    const changed = entry(again, "adder", "2").clients.find((c) => c.client === "alice")!;
    const before = entry(entries, "adder", "2").clients.find((c) => c.client === "alice")!;
    ok(changed.model !== before.model, "changed: a new model");
    deepStrictEqual(await add(server, changed.compilation, ALICE, 4), [0, 11, 22, 33]);
    const models = await server.request("GET", "/v1/models", undefined, ALICE);
    deepStrictEqual(
      (models.body.models as { name: string; version: string }[])
        .map((m) => `${m.name}/${m.version}`).sort(),
      ["adder/1", "adder/2"],
      "removed entries are deleted, none duplicated",
    );
  } finally {
    await server.close();
    await Deno.remove(server.dataDir, { recursive: true });
    await Deno.remove(repository, { recursive: true });
  }
});

Deno.test("a repository path that is not a readable directory stops the start with one line", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "nnserve-test-" });
  try {
    await rejects(
      startTestServer({ dataDir, modelRepository: `${dataDir}/missing` }),
      (error: Error) =>
        error instanceof StartupError && /NNSERVE_MODEL_REPOSITORY .*missing/.test(error.message),
    );
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});
