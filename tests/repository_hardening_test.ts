/**
 * A model repository built to hurt the service: model and config files that are FIFOs (an
 * open of one blocks until a writer comes), symlinks to devices (`/dev/zero` never ends),
 * directories, files past the size cap, and symlinks to files that are not the operator's to
 * show (`/etc/passwd`). Each such entry is reported failed with a reason that names the
 * problem (never the file's content) while the others load; `/readyz` tells a probe without
 * an API key whether the service is ready and how many entries are, and no more.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import type { RepositoryEntry } from "../serving/model_repository.ts";
import { onnxBytes } from "../tools/onnx_graphs.ts";
import { addModel, startTestServer, type TestServer, writeTree } from "./server_fixture.ts";

/** How long a repository of a few small entries may take to load: far more than it needs. */
const LOAD_BOUND_MS = 30_000;

const KEYS = new Map([["key-a", "alice"], ["key-b", "bob"]]);
const ALICE = { authorization: "Bearer key-a" };

/** What a file the repository must not show starts with (as `/etc/passwd` does). */
const SECRET_TEXT = "root:x:0:0:root:/root:/bin/bash\nsecret-token-7f3a9c\n";
/** A JSON file that is not a model, with a value that must not be shown. */
const SECRET_JSON = JSON.stringify({ password: "secret-token-7f3a9c", operands: "hunter2" });

const ONNX_ADD = onnxBytes({
  inputs: [{ name: "a", dims: [2] }, { name: "b", dims: [2] }],
  outputs: [{ name: "sum", dims: [2] }],
  nodes: [{ op: "Add", inputs: ["a", "b"], outputs: ["sum"] }],
  initializers: [],
});

/** `promise`, or a failure naming `what` past `ms` (so a hang fails instead of blocking). */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Makes a FIFO (named pipe) at `path`. */
async function mkfifo(path: string): Promise<void> {
  await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
  const made = await new Deno.Command("mkfifo", { args: [path] }).output();
  strictEqual(made.code, 0, new TextDecoder().decode(made.stderr));
}

/**
 * Takes the FIFOs out of the repository and gives any reader blocked on one its end of file
 * (an open for reading and writing never blocks on Linux; closing it leaves no writer), so
 * that a service that did block on one can still be closed.
 */
function releaseFifos(paths: string[]): void {
  const gone: string[] = [];
  for (const path of paths) {
    try {
      Deno.renameSync(path, `${path}.gone`);
      gone.push(`${path}.gone`);
    } catch {
      // Never made.
    }
  }
  for (const path of gone) Deno.openSync(path, { read: true, write: true }).close();
}

function entryOf(entries: RepositoryEntry[], name: string, version: string): RepositoryEntry {
  const found = entries.find((e) => e.name === name && e.version === version);
  ok(found, `entry ${name}/${version} in ${JSON.stringify(entries)}`);
  return found;
}

Deno.test("FIFOs, device symlinks, directories and files past the cap fail by name; the others load", async () => {
  const repository = await Deno.makeTempDir({ prefix: "nnserve-repository-" });
  const outside = await Deno.makeTempDir({ prefix: "nnserve-outside-" });
  const fifos = [
    `${repository}/fifo-model/1/model.onnx`,
    `${repository}/fifo-json/1/model.json`,
    `${repository}/fifo-config/config.json`,
  ];
  let server: TestServer | undefined;
  try {
    await writeTree(repository, {
      "good/1/model.json": JSON.stringify(addModel(2)),
      "onnx/1/model.onnx": ONNX_ADD,
      "fifo-config/1/model.json": JSON.stringify(addModel(2)),
      "big/1/model.onnx": new Uint8Array(4096),
    });
    for (const fifo of fifos) await mkfifo(fifo);
    await writeTree(outside, { "add.json": JSON.stringify(addModel(2)) });
    await Deno.mkdir(`${repository}/linked/1`, { recursive: true });
    await Deno.symlink(`${outside}/add.json`, `${repository}/linked/1/model.json`);
    await Deno.mkdir(`${repository}/null/1`, { recursive: true });
    await Deno.symlink("/dev/null", `${repository}/null/1/model.onnx`);
    // Read whole, /dev/zero took the process past 6 GiB.
    await Deno.mkdir(`${repository}/zero/1`, { recursive: true });
    await Deno.symlink("/dev/zero", `${repository}/zero/1/model.onnx`);
    await Deno.mkdir(`${repository}/folder/1/model.json`, { recursive: true });

    server = await startTestServer({
      modelRepository: repository,
      modelRepositoryMaxFileBytes: 2048,
    });
    const entries = await within(server.ready, LOAD_BOUND_MS, "loading the repository");
    ok(entries, "the repository loaded");
    for (const name of ["good", "onnx", "linked"]) {
      strictEqual(entryOf(entries, name, "1").state, "ready", JSON.stringify(entries));
    }
    const reasons: [string, string, RegExp][] = [
      ["fifo-model", "1", /^model\.onnx is not a regular file \(a FIFO\)$/],
      ["fifo-json", "1", /^model\.json is not a regular file \(a FIFO\)$/],
      ["fifo-config", "", /^config\.json is not a regular file \(a FIFO\)$/],
      ["null", "1", /^model\.onnx is not a regular file \(a character device\)$/],
      ["zero", "1", /^model\.onnx is not a regular file \(a character device\)$/],
      ["folder", "1", /^model\.json is not a regular file \(a directory\)$/],
      ["big", "1", /^model\.onnx is larger than 2048 bytes/],
    ];
    for (const [name, version, reason] of reasons) {
      const entry = entryOf(entries, name, version);
      strictEqual(entry.state, "failed", JSON.stringify(entry));
      ok(reason.test(entry.error ?? ""), `${name}: ${entry.error}`);
    }
    // Open mode: the one (anonymous) client sees its entries on /readyz.
    const probe = await server.request("GET", "/readyz");
    strictEqual(probe.status, 200, JSON.stringify(probe.body));
    strictEqual((probe.body.repository as unknown[]).length, entries.length);

    // Loading one of them again answers at once, with the same reason.
    const load = async (name: string) => {
      const response = await fetch(`${server!.url}/v2/repository/models/${name}/load`, {
        method: "POST",
        signal: AbortSignal.timeout(LOAD_BOUND_MS),
      });
      return { status: response.status, body: await response.json() };
    };
    const fifoLoad = await load("fifo-model");
    strictEqual(fifoLoad.status, 400, JSON.stringify(fifoLoad.body));
    ok(/model\.onnx is not a regular file/.test(fifoLoad.body.error), fifoLoad.body.error);
    strictEqual((await load("good")).status, 200);
  } finally {
    releaseFifos(fifos);
    await server?.close();
    if (server) await Deno.remove(server.dataDir, { recursive: true });
    await Deno.remove(repository, { recursive: true });
    await Deno.remove(outside, { recursive: true });
  }
});

Deno.test("/readyz without a key says ready and counts; reasons name the fault, never the file's text", async () => {
  const repository = await Deno.makeTempDir({ prefix: "nnserve-repository-" });
  const outside = await Deno.makeTempDir({ prefix: "nnserve-outside-" });
  const server = await (async () => {
    await writeTree(outside, { "passwd": SECRET_TEXT, "secret.json": SECRET_JSON });
    await writeTree(repository, {
      "good/1/model.json": JSON.stringify(addModel(2)),
      "passwd-config/1/model.json": JSON.stringify(addModel(2)),
      "broken/1/model.json": '{"operands": [1, 2,\n  oops]}',
    });
    const link = async (target: string, path: string) => {
      await Deno.mkdir(`${repository}/${path.slice(0, path.lastIndexOf("/"))}`, {
        recursive: true,
      });
      await Deno.symlink(target, `${repository}/${path}`);
    };
    await link(`${outside}/passwd`, "passwd-model/1/model.json");
    await link(`${outside}/passwd`, "passwd-config/config.json");
    await link(`${outside}/secret.json`, "secret-json/1/model.json");
    return await startTestServer({ apiKeys: KEYS, modelRepository: repository });
  })();
  try {
    const entries = await within(server.ready, LOAD_BOUND_MS, "loading the repository");
    ok(entries, "the repository loaded");

    // Without a key (or with a wrong one): ready, the replica, and counts. Nothing else.
    const probes: Record<string, string>[] = [{}, { authorization: "Bearer not-a-key" }];
    for (const headers of probes) {
      const response = await fetch(`${server.url}/readyz`, { headers });
      const text = await response.text();
      strictEqual(response.status, 200, text);
      const body = JSON.parse(text);
      deepStrictEqual(Object.keys(body).sort(), ["entries", "replica", "status"], text);
      deepStrictEqual(body.entries, { ready: 1, failed: 4 });
      ok(!/alice|bob|secret|root|not JSON/.test(text), text);
    }

    const reasons: [string, string, RegExp][] = [
      ["passwd-model", "1", /^model\.json is not JSON \(line 1, column 1\)$/],
      ["passwd-config", "", /^config\.json is not JSON \(line 1, column 1\)$/],
      ["broken", "1", /^model\.json is not JSON \(line 2, column 3\)$/],
      ["secret-json", "1", /^model\.json: /],
    ];
    for (const [name, version, reason] of reasons) {
      const entry = entryOf(entries, name, version);
      strictEqual(entry.state, "failed", JSON.stringify(entry));
      ok(reason.test(entry.error ?? ""), `${name}: ${entry.error}`);
    }
    const secrets = /root:x|secret-token|hunter2|bin\/bash/;

    // With a key: that client's own entries, and the failed ones with their reasons.
    const own = await server.request("GET", "/readyz", undefined, ALICE);
    strictEqual(own.status, 200, JSON.stringify(own.body));
    const listed = own.body.repository as RepositoryEntry[];
    strictEqual(listed.length, entries.length);
    const clients = listed.flatMap((e) => e.clients.map((c) => c.client));
    deepStrictEqual([...new Set(clients)], ["alice"], JSON.stringify(listed));
    ok(!secrets.test(JSON.stringify(own.body)), JSON.stringify(own.body));

    // The index every client may read names the faults the same way.
    const index = await server.request("POST", "/v2/repository/index", {}, ALICE);
    strictEqual(index.status, 200, JSON.stringify(index.body));
    const text = JSON.stringify(index.body);
    ok(/model\.json is not JSON \(line 1, column 1\)/.test(text), text);
    ok(!secrets.test(text), text);
  } finally {
    await server.close();
    await Deno.remove(server.dataDir, { recursive: true });
    await Deno.remove(repository, { recursive: true });
    await Deno.remove(outside, { recursive: true });
  }
});
