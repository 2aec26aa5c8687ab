/**
 * Limits. Back-pressure: with every worker busy, executions wait in a bounded queue; past its
 * bound in all (NNSERVE_MAX_QUEUED) or for one client (NNSERVE_MAX_QUEUED_PER_CLIENT) an
 * execution is refused at once with 429 RESOURCE_EXHAUSTED_TRANSIENT and `Retry-After`, and
 * what was admitted completes. Model size: operands, operations and one operand's elements
 * past NNSERVE_MAX_OPERANDS / _OPERATIONS / _TENSOR_ELEMENTS are 413s naming the limit.
 * Bursts: a client holding NNSERVE_MAX_BURSTS_PER_CLIENT open bursts gets 429 for another
 * until it closes one; other clients are not affected.
 */
import { ok, strictEqual } from "node:assert/strict";
import { seededFloats } from "../kernels/seeded_random.ts";
import { burstUrl } from "./burst_fixture.ts";
import {
  addModel,
  float32Tensor,
  int32Scalar,
  type TestServer,
  withTestServer,
} from "./server_fixture.ts";

const KEYS = new Map([["key-a", "alice"], ["key-b", "bob"]]);
const SIDE = 64, DEPTH = 32, LAYERS = 10;

/** Convolutions slow enough on the reference kernels (a few hundred ms) to keep a worker busy. */
function slowModel() {
  const operands: unknown[] = [float32Tensor([1, SIDE, SIDE, DEPTH], "MODEL_INPUT")];
  const operations: unknown[] = [];
  const scalars = [1, 1, 1, 0].map((v) => operands.push(int32Scalar(v)) - 1);
  let x = 0;
  for (let layer = 0; layer < LAYERS; layer++) {
    const filter = operands.push(float32Tensor(
      [DEPTH, 3, 3, DEPTH],
      "CONSTANT_COPY",
      [...seededFloats(DEPTH * 9 * DEPTH, layer + 1, 0.1)],
    )) - 1;
    const bias = operands.push(float32Tensor([DEPTH], "CONSTANT_COPY", Array(DEPTH).fill(0))) - 1;
    const last = layer === LAYERS - 1;
    const y = operands.push(
      float32Tensor([1, SIDE, SIDE, DEPTH], last ? "MODEL_OUTPUT" : "TEMPORARY_VARIABLE"),
    ) - 1;
    operations.push({ type: "CONV_2D", inputs: [x, filter, bias, ...scalars], outputs: [y] });
    x = y;
  }
  return { operands, operations, inputIndexes: [0], outputIndexes: [x] };
}

/** Registers the model, a memory holding its input and a compilation on the reference CPU. */
async function prepare(server: TestServer, key: string) {
  const headers = { authorization: `Bearer ${key}` };
  const model = await server.request("POST", "/v1/models", slowModel(), headers);
  strictEqual(model.status, 201, JSON.stringify(model.body));
  const compilation = await server.request("POST", "/v1/compilations", {
    model: model.body.id,
    devices: ["cpu-reference"],
  }, headers);
  strictEqual(compilation.status, 201, JSON.stringify(compilation.body));
  const bytes = new Uint8Array(seededFloats(SIDE * SIDE * DEPTH, 7, 2).buffer as ArrayBuffer);
  const memory = await fetch(`${server.url}/v1/memories`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/octet-stream" },
    body: new Uint8Array(bytes),
  });
  strictEqual(memory.status, 201);
  const { id } = await memory.json();
  return () =>
    fetch(`${server.url}/v1/compilations/${compilation.body.id}/executions`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({
        inputs: [{ memory: id, offset: 0, length: bytes.byteLength }],
        outputs: [{ memory: id, offset: 0, length: bytes.byteLength }],
      }),
    });
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function refusal(response: Response, message: RegExp) {
  const body = await response.json();
  strictEqual(response.status, 429, JSON.stringify(body));
  strictEqual(body.status, "RESOURCE_EXHAUSTED_TRANSIENT");
  strictEqual(response.headers.get("retry-after"), "1");
  ok(message.test(body.message), body.message);
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
    const started = performance.now();
    const running = alice(); // takes the one worker
    await pause(150);
    const waiting = alice(); // alice's one place in the queue
    await pause(150);
    await refusal(await alice(), /this client has 1 executions waiting/);
    const bobWaiting = bob(); // the queue's second place
    await pause(150);
    await refusal(await bob(), /execution queue is full \(2 executions waiting\)/);
    const admitted = await Promise.all([running, waiting, bobWaiting]);
    for (const response of admitted) {
      const text = await response.text();
      strictEqual(response.status, 200, text);
    }
    // The refusals came while the first execution was still running: the checks above were
    // made against a busy worker, not an idle one.
    ok(performance.now() - started > 450, "the executions took long enough to queue behind");
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
      ok(message.test(String(body.message)), String(body.message));
    }
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
    ok(/2 bursts open.*NNSERVE_MAX_BURSTS_PER_CLIENT/.test(refused.body.message));
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
