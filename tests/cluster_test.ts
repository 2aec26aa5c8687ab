/**
 * Cluster mode on one machine (issue #16): PostgreSQL, s3rver, three `main.ts` replica
 * processes and Debian's haproxy with `deploy/haproxy.cfg`. Through the balancer: models
 * registered and compiled (with cache tokens), every compilation executing alike on every
 * replica; a cache entry written by one replica found by the others, and one model compiled
 * at once through every replica prepared once; memories read
 * alike everywhere, and used by an execution on another replica; deletes seen by every
 * replica within a second; a burst and a stream of executions that keep working while a
 * replica is SIGKILLed; that replica restarted on an empty disk serving the same
 * compilations from the shared cache; and nothing registered lost.
 *
 * One cluster, one test; each behaviour is a step, so a step that fails (the ones that need
 * shared memories or the shared cache, say) does not hide how the others fare.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { type Compilation, NnClient } from "../client/mod.ts";
import { executeVia, type ReplicaProcess, startCluster } from "./cluster_fixture.ts";
import { addModel, metric, mulModel } from "./server_fixture.ts";

const NAMES = ["r1", "r2", "r3"];

/** The models, their execution inputs and the outputs they must give. */
const MODELS = [
  { json: addModel(4), inputs: [[1, 2, 3, 4], [10, 20, 30, 40]], expected: [11, 22, 33, 44] },
  { json: mulModel(4), inputs: [[1, 2, 3, 4], [10, 20, 30, 40]], expected: [10, 40, 90, 160] },
  { json: addModel(2), inputs: [[0.5, -1], [2, 3]], expected: [2.5, 2] },
];

/** A compilation made through the balancer, and where the balancer sends it. */
interface Compiled {
  sdk: Compilation;
  id: string;
  model: string;
  /** The base64 cache token it was compiled with. */
  token: string;
  inputs: number[][];
  expected: number[];
  /** The replica its executions reach through the balancer (before any kill). */
  owner: string;
}

/** A memory and the bytes it must hold. */
interface KnownMemory {
  id: string;
  bytes: Uint8Array;
  /** The replica that created it. */
  creator: string;
}

/** One request of the load, timed with `performance.now()`. */
interface Sent {
  compilation: string;
  owner: string;
  start: number;
  end: number;
  /** HTTP status; 0 when no answer came (connection failed). */
  status: number;
  replica: string | null;
  ok: boolean;
  error?: string;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function token(): string {
  return crypto.getRandomValues(new Uint8Array(32)).toBase64();
}

function randomBytes(n: number): Uint8Array<ArrayBuffer> {
  return crypto.getRandomValues(new Uint8Array(n));
}

function float32Bytes(values: number[]): Uint8Array<ArrayBuffer> {
  return new Uint8Array(Float32Array.from(values).buffer);
}

/** A JSON request to `base`: status, answering replica and parsed body. */
async function call(base: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    replica: response.headers.get("x-nnserve-replica"),
    // deno-lint-ignore no-explicit-any
    body: (text ? JSON.parse(text) : {}) as any,
  };
}

/** A memory's bytes (a range of them with `range`) read through `base`. */
async function readMemory(base: string, id: string, range?: string) {
  const response = await fetch(`${base}/v1/memories/${id}`, {
    headers: range ? { range } : {},
  });
  const bytes = new Uint8Array(await response.arrayBuffer());
  return {
    status: response.status,
    replica: response.headers.get("x-nnserve-replica"),
    bytes,
    text: () => new TextDecoder().decode(bytes),
  };
}

/** Creates a memory through `base` from bytes; its id and the replica that created it. */
async function createMemory(base: string, bytes: Uint8Array<ArrayBuffer>) {
  const response = await fetch(`${base}/v1/memories`, {
    method: "POST",
    headers: { "content-type": "application/octet-stream" },
    body: bytes,
  });
  const body = await response.json();
  strictEqual(response.status, 201, JSON.stringify(body));
  strictEqual(body.size, bytes.byteLength);
  return { id: body.id as string, creator: response.headers.get("x-nnserve-replica")! };
}

/** A cache lookup counter of one replica (0 while the series is absent). */
async function cacheCount(base: string, result: "hit" | "miss" | "rejected"): Promise<number> {
  return await metric(base, `nnserve_compilation_cache_total{result="${result}"}`) ?? 0;
}

/**
 * Polls `base` until `path` answers 404 or `deadline` (performance.now()) passes; the last
 * status and when it was seen.
 */
async function until404(base: string, path: string, deadline: number) {
  for (;;) {
    const response = await fetch(`${base}${path}`);
    await response.body?.cancel();
    const at = performance.now();
    if (response.status === 404 || at > deadline) return { status: response.status, at };
    await pause(25);
  }
}

/** The execution request of a compilation's inputs. */
function request(compiled: Pick<Compiled, "inputs">) {
  return { inputs: compiled.inputs.map((data) => ({ data })) };
}

Deno.test("three replica processes behind haproxy share models, compilations, memories and the cache, and survive a SIGKILL", async (t) => {
  const started = performance.now();
  await using cluster = await startCluster(NAMES);
  const lb = cluster.balancer.url;
  const client = new NnClient({ baseUrl: lb });
  const compiled: Compiled[] = [];
  const models: string[] = [];
  const memories: KnownMemory[] = [];
  /** What was deleted, to be 404 for good. */
  const deleted = { compilations: [] as string[], memories: [] as string[] };
  /** Set by the kill step: the replica killed and restarted. */
  let victim: ReplicaProcess | undefined;
  const context = (what: string) => `${what}\n${cluster.output()}`;
  console.log(`cluster up in ${Math.round(performance.now() - started)} ms`);

  await t.step(
    "compilations made through the balancer execute alike on every replica",
    async () => {
      for (const model of MODELS) {
        const registered = await call(lb, "POST", "/v1/models", model.json);
        strictEqual(registered.status, 201, JSON.stringify(registered.body));
        models.push(registered.body.id);
      }
      // At least 12 compilations, and more until every replica owns two (hashing is random).
      const owned = (name: string) => compiled.filter((c) => c.owner === name).length;
      while (compiled.length < 12 || NAMES.some((name) => owned(name) < 2)) {
        ok(compiled.length < 40, `40 compilations and still a replica owns fewer than two`);
        const i = compiled.length % MODELS.length;
        const cacheToken = token();
        const sdk = await client.compile(models[i], { cache: { token: cacheToken } });
        strictEqual(sdk.cache, "miss", `a new token is a cache miss: ${JSON.stringify(sdk.info)}`);
        const first = await executeVia(lb, sdk.id, request(MODELS[i]));
        strictEqual(first.status, 200, JSON.stringify(first.body));
        ok(
          first.replica && NAMES.includes(first.replica),
          `answered by a replica: ${first.replica}`,
        );
        compiled.push({
          sdk,
          id: sdk.id,
          model: models[i],
          token: cacheToken,
          inputs: MODELS[i].inputs,
          expected: MODELS[i].expected,
          owner: first.replica,
        });
      }
      for (const c of compiled) {
        const viaBalancer = await executeVia(lb, c.id, request(c));
        strictEqual(viaBalancer.status, 200, JSON.stringify(viaBalancer.body));
        strictEqual(viaBalancer.replica, c.owner, `compilation ${c.id} stays on ${c.owner}`);
        deepStrictEqual(viaBalancer.body.outputs, [{
          dimensions: [c.expected.length],
          data: c.expected,
        }]);
        for (const replica of cluster.replicas) {
          const direct = await executeVia(replica.url, c.id, request(c));
          strictEqual(direct.status, 200, `${replica.name}: ${JSON.stringify(direct.body)}`);
          strictEqual(direct.replica, replica.name);
          deepStrictEqual(
            direct.body.outputs,
            viaBalancer.body.outputs,
            `${c.id} on ${replica.name}`,
          );
        }
      }
    },
  );

  await t.step("a cache entry one replica wrote is found by the others", async () => {
    // One after another, so nothing but the key decides: the first prepares, the others
    // find its entry (the key must not depend on anything a replica measures for itself).
    const cacheToken = token();
    const results: string[] = [];
    for (const replica of cluster.replicas) {
      const answer = await call(replica.url, "POST", "/v1/compilations", {
        model: models[0],
        cache: { token: cacheToken },
      });
      strictEqual(answer.status, 201, JSON.stringify(answer.body));
      results.push(`${replica.name}: ${answer.body.cache}`);
    }
    deepStrictEqual(results, NAMES.map((name, i) => `${name}: ${i === 0 ? "miss" : "hit"}`));
  });

  await t.step(
    "one model compiled with one token through every replica at once is prepared once",
    async () => {
      const cacheToken = token();
      const counts = () =>
        Promise.all(cluster.replicas.map(async (r) => ({
          hit: await cacheCount(r.url, "hit"),
          miss: await cacheCount(r.url, "miss"),
        })));
      const before = await counts();
      const answers = await Promise.all(
        cluster.replicas.map((r) =>
          call(r.url, "POST", "/v1/compilations", {
            model: models[0],
            cache: { token: cacheToken },
          })
        ),
      );
      for (const answer of answers) strictEqual(answer.status, 201, JSON.stringify(answer.body));
      const after = await counts();
      const misses = after.reduce((sum, c, i) => sum + c.miss - before[i].miss, 0);
      const hits = after.reduce((sum, c, i) => sum + c.hit - before[i].hit, 0);
      const results = answers.map((a) => `${a.replica}: ${a.body.cache}`).join(", ");
      strictEqual(misses, 1, `cache misses across the replicas (answers ${results})`);
      strictEqual(hits, 2, `cache hits across the replicas (answers ${results})`);
      deepStrictEqual(answers.map((a) => a.body.cache).sort(), ["hit", "hit", "miss"]);
      for (const [i, answer] of answers.entries()) {
        const run = await executeVia(cluster.replicas[i].url, answer.body.id, request(MODELS[0]));
        strictEqual(run.status, 200, JSON.stringify(run.body));
        deepStrictEqual(run.body.outputs[0].data, MODELS[0].expected);
      }
    },
  );

  await t.step(
    "memories made through the balancer read back the same bytes through every replica",
    async () => {
      for (let i = 0; i < 4; i++) {
        const initial = i % 2 === 0 ? randomBytes(256) : new Uint8Array(256);
        const made = i % 2 === 0
          ? await createMemory(lb, initial)
          : await call(lb, "POST", "/v1/memories", { size: 256 }).then((r) => {
            strictEqual(r.status, 201, JSON.stringify(r.body));
            return { id: r.body.id as string, creator: r.replica! };
          });
        memories.push({ id: made.id, bytes: initial, creator: made.creator });
      }
      for (const [i, memory] of memories.entries()) {
        const offset = 16 * i + 8;
        const region = randomBytes(32);
        const response = await fetch(`${lb}/v1/memories/${memory.id}?offset=${offset}`, {
          method: "PUT",
          headers: { "content-type": "application/octet-stream" },
          body: region,
        });
        const said = await response.text();
        ok(
          response.ok,
          `PUT ${memory.id} through ${
            response.headers.get("x-nnserve-replica")
          }: ${response.status} ${said}`,
        );
        memory.bytes.set(region, offset);
      }
      for (const memory of memories) {
        for (const base of [...cluster.replicas.map((r) => r.url), lb]) {
          const read = await readMemory(base, memory.id);
          strictEqual(
            read.status,
            200,
            `${memory.id} (made on ${memory.creator}) via ${base}: ${read.text()}`,
          );
          deepStrictEqual(read.bytes, memory.bytes, `${memory.id} via ${base}`);
        }
        const range = await readMemory(lb, memory.id, "bytes=8-39");
        strictEqual(range.status, 206, range.text());
        deepStrictEqual(range.bytes, memory.bytes.slice(8, 40));
      }
    },
  );

  await t.step(
    "an execution on another replica reads an input memory and writes an output memory a third replica reads",
    async () => {
      const add = MODELS[0];
      const input = new Uint8Array(32);
      input.set(float32Bytes(add.inputs[0]), 16);
      const source = await createMemory(lb, input);
      const target = await createMemory(lb, new Uint8Array(32));
      memories.push({ id: source.id, bytes: input, creator: source.creator });
      const output: KnownMemory = {
        id: target.id,
        bytes: new Uint8Array(32),
        creator: target.creator,
      };
      memories.push(output);
      const executor = cluster.replicas.find((r) => r.name !== source.creator)!;
      const reader = cluster.replicas.find((r) => r.name !== source.creator && r !== executor)!;
      const compilation =
        compiled.find((c) => c.model === models[0] && c.owner === executor.name) ??
          compiled.find((c) => c.model === models[0])!;
      const run = await executeVia(executor.url, compilation.id, {
        inputs: [{ memory: source.id, offset: 16, length: 16 }, { data: add.inputs[1] }],
        outputs: [{ memory: target.id, offset: 8, length: 16 }],
      });
      strictEqual(
        run.status,
        200,
        `on ${executor.name} (memories made on ${source.creator}): ${JSON.stringify(run.body)}`,
      );
      deepStrictEqual(run.body.outputs, [{ dimensions: [4] }]);
      output.bytes.set(float32Bytes(add.expected), 8);
      for (const base of [reader.url, lb]) {
        const read = await readMemory(base, target.id);
        strictEqual(read.status, 200, `${target.id} via ${base}: ${read.text()}`);
        deepStrictEqual(read.bytes, output.bytes, `the output memory via ${base}`);
      }
    },
  );

  await t.step(
    "a buffer allocated through the balancer is used through it where its compilation is",
    async () => {
      const add = MODELS[0];
      const c = compiled.find((c) => c.model === models[0])!;
      const allocated = await call(lb, "POST", `/v1/compilations/${c.id}/buffers`, {
        roles: [{ io: "output", index: 0 }, { io: "input", index: 0 }],
      });
      strictEqual(allocated.status, 201, JSON.stringify(allocated.body));
      strictEqual(allocated.replica, c.owner, "allocated where the compilation is");
      const token = allocated.body.token as string;
      // Written by an execution, read by the next as its input, copied out to a memory: every
      // request reaches the one replica that holds the buffer.
      const first = await executeVia(lb, c.id, {
        inputs: add.inputs.map((data) => ({ data })),
        outputs: [{ buffer: token }],
      });
      strictEqual(first.status, 200, JSON.stringify(first.body));
      const second = await executeVia(lb, c.id, {
        inputs: [{ buffer: token }, { data: add.inputs[1] }],
      });
      strictEqual(second.status, 200, JSON.stringify(second.body));
      const doubled = add.expected.map((v, i) => v + add.inputs[1][i]);
      deepStrictEqual(second.body.outputs[0].data, doubled);
      const target = await createMemory(lb, new Uint8Array(16));
      const copied = await call(lb, "POST", `/v1/buffers/${token}/copy-to`, {
        memory: target.id,
      });
      strictEqual(copied.status, 204, JSON.stringify(copied.body));
      strictEqual(copied.replica, c.owner, "the buffer's requests go where its compilation is");
      deepStrictEqual((await readMemory(lb, target.id)).bytes, float32Bytes(add.expected));
      memories.push({ id: target.id, bytes: float32Bytes(add.expected), creator: target.creator });
      const freed = await call(lb, "DELETE", `/v1/buffers/${token}`);
      deepStrictEqual([freed.status, freed.replica], [204, c.owner]);
    },
  );

  await t.step(
    "a compilation deleted through one replica is gone on the others within a second",
    async () => {
      const sdk = await client.compile(models[1]);
      const path = `/v1/compilations/${sdk.id}`;
      // Live on every replica first, so each has something to forget.
      for (const replica of cluster.replicas) {
        const run = await executeVia(replica.url, sdk.id, request(MODELS[1]));
        strictEqual(run.status, 200, `${replica.name}: ${JSON.stringify(run.body)}`);
      }
      const [deleter, ...others] = cluster.replicas;
      const answer = await call(deleter.url, "DELETE", path);
      strictEqual(answer.status, 204, JSON.stringify(answer.body));
      deleted.compilations.push(sdk.id);
      const deadline = performance.now() + 1000;
      for (const replica of others) {
        const seen = await until404(replica.url, path, deadline);
        strictEqual(seen.status, 404, `${replica.name} still has compilation ${sdk.id} after 1 s`);
        const run = await executeVia(replica.url, sdk.id, request(MODELS[1]));
        strictEqual(
          run.status,
          404,
          `${replica.name} executes the deleted compilation: ${JSON.stringify(run.body)}`,
        );
      }
    },
  );

  await t.step(
    "a memory deleted through one replica is gone on the others within a second",
    async () => {
      const made = await createMemory(lb, randomBytes(64));
      const path = `/v1/memories/${made.id}`;
      // Read on every replica first (what a replica holds in memory must go too).
      for (const replica of cluster.replicas) await readMemory(replica.url, made.id);
      // Deleted through another replica than the one that made (and holds) it.
      const deleter = cluster.replicas.find((r) => r.name !== made.creator)!;
      const answer = await call(deleter.url, "DELETE", path);
      strictEqual(answer.status, 204, JSON.stringify(answer.body));
      deleted.memories.push(made.id);
      const deadline = performance.now() + 1000;
      for (const replica of cluster.replicas.filter((r) => r !== deleter)) {
        const seen = await until404(replica.url, path, deadline);
        strictEqual(
          seen.status,
          404,
          `${replica.name} (creator ${made.creator}) still serves memory ${made.id} after 1 s`,
        );
      }
    },
  );

  await t.step(
    "a burst and a stream of executions keep working while another replica is SIGKILLed",
    async () => {
      ok(compiled.length > 0, "compilations from the first step");
      const burstOn = compiled[0];
      const x = burstOn.owner;
      // The replica to kill: not the burst's; preferably the one holding the memories made
      // through the balancer, so that losing its disk tests that they outlive it.
      const candidates = NAMES.filter((n) => n !== x && compiled.some((c) => c.owner === n));
      const y = candidates.find((n) => memories.some((m) => m.creator === n)) ?? candidates[0];
      ok(y, "a replica other than the burst's owns compilations");
      victim = cluster.replica(y);
      const server = cluster.serverOf(y);
      await using burst = await burstOn.sdk.burst();
      const burstInputs = burstOn.inputs.map((v) => Float32Array.from(v));

      const sent: Sent[] = [];
      const bursts: Sent[] = [];
      let stop = false;
      const stream = async (loop: number, loops: number) => {
        for (let i = loop; !stop; i += loops) {
          const c = compiled[i % compiled.length];
          const start = performance.now();
          let answer;
          let error: string | undefined;
          try {
            answer = await executeVia(lb, c.id, request(c));
          } catch (e) {
            error = (e as Error).message;
          }
          const fine = answer?.status === 200 &&
            JSON.stringify(answer.body.outputs?.[0]?.data) === JSON.stringify(c.expected);
          sent.push({
            compilation: c.id,
            owner: c.owner,
            start,
            end: performance.now(),
            status: answer?.status ?? 0,
            replica: answer?.replica ?? null,
            ok: fine,
            ...(fine ? {} : { error: error ?? JSON.stringify(answer?.body).slice(0, 200) }),
          });
        }
      };
      const burstLoop = async () => {
        while (!stop) {
          const start = performance.now();
          let fine = false;
          let error: string | undefined;
          try {
            const result = await burst.compute(burstInputs);
            fine = JSON.stringify([...result.outputs[0].data as Float32Array]) ===
              JSON.stringify(burstOn.expected);
            if (!fine) error = `wrong result ${result.outputs[0].data}`;
          } catch (e) {
            error = (e as Error).message;
          }
          bursts.push({
            compilation: burstOn.id,
            owner: x,
            start,
            end: performance.now(),
            status: fine ? 200 : 0,
            replica: x,
            ok: fine,
            ...(error ? { error } : {}),
          });
        }
      };
      const loops = [0, 1, 2].map((k) => stream(k, 3));
      const burstRun = burstLoop();
      await pause(1500);
      const mark = cluster.balancer.stderr.count;
      const killAt = performance.now();
      const status = await victim.kill("SIGKILL");
      const killed = performance.now();
      strictEqual(status.signal, "SIGKILL");
      const down = await cluster.balancer.waitForServer(server, "DOWN", {
        from: mark,
        timeoutMs: 10_000,
      });
      await pause(1500);
      stop = true;
      await Promise.all([...loops, burstRun]);

      const at = (ms: number) => `${Math.round(ms - killAt)} ms`;
      const describe = (s: Sent) =>
        `${s.compilation} (owner ${s.owner}) ${at(s.start)}..${
          at(s.end)
        }: ${s.status} from ${s.replica}: ${s.error}`;
      const failed = sent.filter((s) => !s.ok);
      const beforeDown = sent.filter((s) => s.owner === y && s.start > killed && s.start < down.at);
      console.log(
        `load: ${sent.length} executions, ${bursts.length} burst requests; ${y} SIGKILLed at 0 ms, ` +
          `its exit seen at ${at(killed)}, marked down by haproxy at ${at(down.at)}; ` +
          `${beforeDown.length} executions of its compilations started in between, slowest ` +
          `${Math.round(Math.max(0, ...beforeDown.map((s) => s.end - s.start)))} ms; ` +
          `${failed.length} failed${failed.map((s) => `\n  ${describe(s)}`).join("")}`,
      );
      // The burst (on another replica) never fails.
      deepStrictEqual(bursts.filter((s) => !s.ok).map(describe), [], "burst failures");
      ok(bursts.some((s) => s.start > down.at), "the burst ran on after the kill");
      // What fails: only executions of the killed replica's compilations that haproxy had
      // already handed to it, i.e. started before its exit was seen; haproxy answers those
      // 502 (the connection broke mid-request, and it does not resend a POST). Executions
      // that reach haproxy after the exit are not tolerated to fail, even before the checks
      // mark the replica down: its refused connection is retried (`retries 2`), the last try
      // on another replica (`option redispatch`), after a turn-around of about a second.
      const tolerated = (s: Sent) => s.owner === y && s.start < killed && s.end > killAt;
      deepStrictEqual(
        failed.filter((s) => !tolerated(s)).map(describe),
        [],
        context("failures beyond the killed replica's in-flight requests"),
      );
      // Once the balancer marked it down, its compilations answer from the others, alike.
      const afterDown = sent.filter((s) => s.owner === y && s.start > down.at);
      ok(
        afterDown.length > 0,
        "the stream reached the killed replica's compilations after it was marked down",
      );
      for (const s of afterDown) ok(s.ok && s.replica !== y, describe(s));
      for (const c of compiled.filter((c) => c.owner === y)) {
        const run = await executeVia(lb, c.id, request(c));
        strictEqual(run.status, 200, JSON.stringify(run.body));
        ok(run.replica !== y && run.replica !== null, `${c.id} answered by ${run.replica}`);
        deepStrictEqual(run.body.outputs[0].data, c.expected);
      }
    },
  );

  await t.step({
    name: "the killed replica restarted on an empty disk serves its compilations again",
    // Its new process's output is read in the background until the cluster is disposed.
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async () => {
      ok(victim, "a replica was killed");
      const mark = cluster.balancer.stderr.count;
      await victim.restart();
      await cluster.balancer.waitForServer(cluster.serverOf(victim.name), "UP", {
        from: mark,
        timeoutMs: 15_000,
      });
      const own = compiled.filter((c) => c.owner === victim!.name);
      ok(own.length > 0);
      for (const c of own) {
        const run = await executeVia(lb, c.id, request(c));
        strictEqual(run.status, 200, JSON.stringify(run.body));
        strictEqual(run.replica, victim.name, `${c.id} is routed back to ${victim.name}`);
        deepStrictEqual(run.body.outputs[0].data, c.expected);
      }
    },
  });

  await t.step("the restarted replica took its compilations from the shared cache", async () => {
    ok(victim?.running, "the replica was restarted");
    const own = compiled.filter((c) => c.owner === victim!.name).length;
    const counts = {
      hit: await cacheCount(victim.url, "hit"),
      miss: await cacheCount(victim.url, "miss"),
      rejected: await cacheCount(victim.url, "rejected"),
    };
    deepStrictEqual(
      { ...counts, hit: Math.min(counts.hit, own) },
      { hit: own, miss: 0, rejected: 0 },
      `cache lookups of ${victim.name} after serving its ${own} compilations`,
    );
  });

  await t.step("nothing registered is lost: models and compilations", async () => {
    const listed = new Set<string>();
    let cursor: string | undefined;
    do {
      const page = await client.listModels({ limit: 100, cursor });
      for (const m of page.models) listed.add(m.id);
      cursor = page.next;
    } while (cursor);
    for (const id of models) ok(listed.has(id), `model ${id} is listed`);
    for (const c of compiled) {
      const run = await executeVia(lb, c.id, request(c));
      strictEqual(run.status, 200, `${c.id}: ${JSON.stringify(run.body)}`);
      deepStrictEqual(run.body.outputs[0].data, c.expected);
    }
    for (const id of deleted.compilations) {
      for (const base of [lb, ...cluster.replicas.map((r) => r.url)]) {
        const run = await executeVia(base, id, request(MODELS[1]));
        strictEqual(run.status, 404, `deleted compilation ${id} via ${base}`);
      }
    }
  });

  await t.step("nothing registered is lost: memories", async () => {
    ok(memories.length > 0, "memories from the earlier steps");
    for (const memory of memories) {
      const read = await readMemory(lb, memory.id);
      strictEqual(read.status, 200, `${memory.id} (made on ${memory.creator}): ${read.text()}`);
      deepStrictEqual(read.bytes, memory.bytes, memory.id);
    }
    for (const id of deleted.memories) {
      strictEqual((await readMemory(lb, id)).status, 404, `deleted memory ${id}`);
    }
  });

  await t.step("nothing registered is lost: cache entries", async () => {
    // Compiling again with each token through the balancer finds the entry the first
    // compilation wrote, whichever replica answers (and whichever was killed).
    const results: string[] = [];
    for (const c of compiled) {
      const again = await call(lb, "POST", "/v1/compilations", {
        model: c.model,
        cache: { token: c.token },
      });
      strictEqual(again.status, 201, JSON.stringify(again.body));
      results.push(`token of ${c.id}: ${again.body.cache} on ${again.replica}`);
    }
    deepStrictEqual(results, results.map((r) => r.replace(/: \w+ on /, ": hit on ")));
  });
  console.log(`cluster test body took ${Math.round(performance.now() - started)} ms`);
});
