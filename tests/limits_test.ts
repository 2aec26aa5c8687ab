/**
 * Limits. Back-pressure: with every worker busy, executions wait in a bounded queue; past its
 * bound in all (NNSERVE_MAX_QUEUED) or for one client (NNSERVE_MAX_QUEUED_PER_CLIENT) an
 * execution is refused at once with 429 RESOURCE_EXHAUSTED_TRANSIENT and `Retry-After`, and
 * what was admitted completes. Model size: operands, operations and one operand's elements
 * past NNSERVE_MAX_OPERANDS / _OPERATIONS / _TENSOR_ELEMENTS are 413s naming the limit.
 * Bursts: a client holding NNSERVE_MAX_BURSTS_PER_CLIENT open bursts gets 429 for another
 * until it closes one; other clients are not affected. Models and compilations per client
 * (NNSERVE_MAX_MODELS_PER_CLIENT, NNSERVE_MAX_COMPILATIONS_PER_CLIENT): 429 past the limit,
 * room again after a delete, counted atomically under concurrent requests. Every refusal
 * names its limit (`limit` in the body) and is counted by it in `nnserve_refusals_total`.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { seededFloats } from "../kernels/seeded_random.ts";
import { burstUrl } from "./burst_fixture.ts";
import {
  addModel,
  float32Tensor,
  metric,
  registerCompiled,
  SLOW_INPUT_ELEMENTS,
  slowConvModel,
  type TestServer,
  withTestServer,
} from "./server_fixture.ts";

const KEYS = new Map([["key-a", "alice"], ["key-b", "bob"]]);

/** Registers the model, a memory holding its input and a compilation on the reference CPU. */
async function prepare(server: TestServer, key: string) {
  const headers = { authorization: `Bearer ${key}` };
  const { compilation } = await registerCompiled(server, slowConvModel(20), headers);
  const bytes = new Uint8Array(seededFloats(SLOW_INPUT_ELEMENTS, 7, 2).buffer as ArrayBuffer);
  const memory = await fetch(`${server.url}/v1/memories`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/octet-stream" },
    body: new Uint8Array(bytes),
  });
  strictEqual(memory.status, 201);
  const { id } = await memory.json();
  return () =>
    fetch(`${server.url}/v1/compilations/${compilation}/executions`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({
        inputs: [{ memory: id, offset: 0, length: bytes.byteLength }],
        outputs: [{ memory: id, offset: 0, length: bytes.byteLength }],
      }),
    });
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function refusal(response: Response, message: RegExp, limit: string) {
  const body = await response.json();
  strictEqual(response.status, 429, JSON.stringify(body));
  strictEqual(body.status, "RESOURCE_EXHAUSTED_TRANSIENT");
  strictEqual(body.limit, limit);
  strictEqual(response.headers.get("retry-after"), "1");
  ok(message.test(body.message), body.message);
}

/** `nnserve_refusals_total` of one limit. */
function refusals(server: TestServer, limit: string) {
  return metric(server.url, `nnserve_refusals_total{limit="${limit}"}`);
}

Deno.test("a full execution queue refuses at once with 429 and Retry-After, in all and per client", async () => {
  await withTestServer({
    apiKeys: KEYS,
    workers: 1,
    threads: 1,
    inlineWork: 0,
    queueLimits: { total: 2, perClient: 1 },
  }, async (server) => {
    const alice = await prepare(server, "key-a");
    const bob = await prepare(server, "key-b");
    // One execution alone sets the pace: requests go out a sixth of it apart, so each
    // reaches the queue while the first still runs.
    let started = performance.now();
    const first = await alice();
    strictEqual(first.status, 200, await first.text());
    const alone = performance.now() - started;
    ok(alone > 100, `one execution takes ${alone} ms: too fast to queue behind`);
    const gap = alone / 6;
    started = performance.now();
    const running = alice(); // takes the one worker
    await pause(gap);
    const waiting = alice(); // alice's one place in the queue
    await pause(gap);
    await refusal(await alice(), /this client has 1 executions waiting/, "client_queue");
    const bobWaiting = bob(); // the queue's second place
    await pause(gap);
    await refusal(await bob(), /execution queue is full \(2 executions waiting\)/, "queue");
    ok(performance.now() - started < alone, "the refusals came while the first still ran");
    const admitted = await Promise.all([running, waiting, bobWaiting]);
    for (const response of admitted) {
      const text = await response.text();
      strictEqual(response.status, 200, text);
    }
    deepStrictEqual(
      [await refusals(server, "client_queue"), await refusals(server, "queue")],
      [1, 1],
    );
    strictEqual(await refusals(server, "bursts"), 0, "the other limits are at zero");
    // Those that waited show it in the queue-wait histogram: above zero in all.
    const text = await (await fetch(`${server.url}/metrics`)).text();
    const waited = [...text.matchAll(/^nnserve_execution_queue_seconds_sum\{[^}]*\} (\S+)$/gm)]
      .reduce((sum, m) => sum + Number(m[1]), 0);
    ok(waited > (alone / 6) / 1000, `queued executions waited ${waited} s in all`);
  });
});

Deno.test("models past the operand, operation or tensor size limits are 413s naming the limit", async () => {
  await withTestServer({
    modelLimits: { maxOperands: 4, maxOperations: 1, maxTensorElements: 100 },
  }, async (server) => {
    strictEqual((await server.request("POST", "/v1/models", addModel(100))).status, 201);
    const cases: [unknown, RegExp][] = [
      [addModel(101), /operand 0 of 101 elements.*NNSERVE_MAX_TENSOR_ELEMENTS=100/],
      [
        {
          ...addModel(2),
          operands: [...addModel(2).operands, float32Tensor([1], "TEMPORARY_VARIABLE")],
        },
        /5 operands.*NNSERVE_MAX_OPERANDS=4/,
      ],
      [
        {
          ...addModel(2),
          operations: [...addModel(2).operations, ...addModel(2).operations],
        },
        /2 operations.*NNSERVE_MAX_OPERATIONS=1/,
      ],
    ];
    for (const [model, message] of cases) {
      const { status, body } = await server.request("POST", "/v1/models", model);
      strictEqual(status, 413, JSON.stringify(body));
      strictEqual(body.status, "RESOURCE_EXHAUSTED_PERSISTENT");
      strictEqual(body.limit, "model_size");
      ok(message.test(String(body.message)), String(body.message));
    }
    strictEqual(await refusals(server, "model_size"), 3);
  });
});

/** Opens a burst WebSocket; resolves once it is open, rejects if it closes first. */
function openBurst(url: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    socket.onopen = () => resolve(socket);
    socket.onclose = () => reject(new Error("the burst closed before it opened"));
  });
}

/** The answer to a burst upgrade request sent as plain HTTP (refusals come before upgrading). */
async function burstRefusal(server: TestServer, compilation: string, key: string) {
  const response = await fetch(`${server.url}/v1/compilations/${compilation}/burst`, {
    headers: { authorization: `Bearer ${key}`, upgrade: "websocket" },
  });
  return { status: response.status, body: await response.json(), headers: response.headers };
}

Deno.test("a client holding its limit of open bursts gets 429 for another until it closes one", async () => {
  await withTestServer({ apiKeys: KEYS, maxBurstsPerClient: 2 }, async (server) => {
    const compile = async (key: string) => {
      const headers = { authorization: `Bearer ${key}` };
      const model = await server.request("POST", "/v1/models", addModel(2), headers);
      const c = await server.request("POST", "/v1/compilations", { model: model.body.id }, headers);
      return c.body.id as string;
    };
    const mine = await compile("key-a"), theirs = await compile("key-b");
    const sockets = [
      await openBurst(burstUrl(server.url, mine, "key-a")),
      await openBurst(burstUrl(server.url, mine, "key-a")),
    ];
    const refused = await burstRefusal(server, mine, "key-a");
    strictEqual(refused.status, 429, JSON.stringify(refused.body));
    strictEqual(refused.body.status, "RESOURCE_EXHAUSTED_TRANSIENT");
    strictEqual(refused.headers.get("retry-after"), "1");
    strictEqual(refused.body.limit, "bursts");
    ok(/2 bursts open.*NNSERVE_MAX_BURSTS_PER_CLIENT/.test(refused.body.message));
    strictEqual(await refusals(server, "bursts"), 1);
    // Another client has its own places: its plain request fails later, at the handshake.
    const incomplete = await burstRefusal(server, theirs, "key-b");
    strictEqual(incomplete.status, 400, JSON.stringify(incomplete.body));
    ok(/handshake is incomplete/.test(incomplete.body.message));
    const bobs = await openBurst(burstUrl(server.url, theirs, "key-b"));
    // Closing one gives its place back.
    const closed = new Promise((resolve) => sockets[0].onclose = resolve);
    sockets[0].close();
    await closed;
    let again: WebSocket | undefined;
    for (let attempt = 0; attempt < 50 && !again; attempt++) {
      again = await openBurst(burstUrl(server.url, mine, "key-a")).catch(() => undefined);
      if (!again) await pause(20);
    }
    ok(again, "a burst opens again once one is closed");
    for (const socket of [sockets[1], again, bobs]) {
      const done = new Promise((resolve) => socket.onclose = resolve);
      socket.close();
      await done;
    }
  });
});

Deno.test("models and compilations per client: 429 past the limit, room after a delete, exact under concurrency", async () => {
  await withTestServer({
    apiKeys: KEYS,
    modelLimits: { maxModelsPerClient: 3 },
    maxCompilationsPerClient: 2,
  }, async (server) => {
    const alice = { authorization: "Bearer key-a" }, bob = { authorization: "Bearer key-b" };
    // Eight concurrent registrations: exactly three succeed.
    const attempts = await Promise.all(
      Array.from({ length: 8 }, () => server.request("POST", "/v1/models", addModel(2), alice)),
    );
    const created = attempts.filter((a) => a.status === 201);
    strictEqual(created.length, 3, JSON.stringify(attempts.map((a) => a.status)));
    for (const refused of attempts.filter((a) => a.status !== 201)) {
      strictEqual(refused.status, 429, JSON.stringify(refused.body));
      strictEqual(refused.body.limit, "models");
      ok(
        /3 models, its limit \(NNSERVE_MAX_MODELS_PER_CLIENT\)/.test(String(refused.body.message)),
      );
    }
    strictEqual((await server.request("POST", "/v1/models", addModel(2), bob)).status, 201);
    const id = created[0].body.id as string;
    strictEqual((await server.request("DELETE", `/v1/models/${id}`, undefined, alice)).status, 204);
    const again = await server.request("POST", "/v1/models", addModel(2), alice);
    strictEqual(again.status, 201, "a delete makes room");
    // Compilations: two, then 429, then room after a delete.
    const model = again.body.id as string;
    const compile = () => server.request("POST", "/v1/compilations", { model }, alice);
    const first = await compile(), second = await compile(), third = await compile();
    deepStrictEqual([first.status, second.status, third.status], [201, 201, 429]);
    ok(/NNSERVE_MAX_COMPILATIONS_PER_CLIENT/.test(String(third.body.message)));
    strictEqual(third.body.limit, "compilations");
    deepStrictEqual(
      [await refusals(server, "models"), await refusals(server, "compilations")],
      [5, 1],
    );
    await server.request("DELETE", `/v1/compilations/${first.body.id}`, undefined, alice);
    strictEqual((await compile()).status, 201);
  });
});
