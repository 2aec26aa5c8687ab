/**
 * What a burst holds and for how long, against a real server: the in-flight window
 * (RESOURCE_EXHAUSTED_TRANSIENT for the excess, in order; close 1008 far beyond it), a client
 * that stops reading (the server holds results back instead of buffering them), a peer that
 * vanishes without a close frame (found by ping/pong and released), and the burst gauges of
 * `/metrics` back at zero after each.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { NnClient } from "../client/mod.ts";
import { encodeRequest } from "../driver/burst_protocol.ts";
import {
  burstGauges,
  burstGaugesAtZero,
  burstUrl,
  MessageSocket,
  metric,
  pollUntil,
  RawWebSocket,
} from "./burst_fixture.ts";
import { addModel, startTestServer, type TestServer } from "./server_fixture.ts";

async function withServer(
  options: Parameters<typeof startTestServer>[0],
  fn: (server: TestServer) => Promise<void>,
): Promise<void> {
  const server = await startTestServer(options);
  try {
    await fn(server);
  } finally {
    await server.close();
    await Deno.remove(server.dataDir, { recursive: true });
  }
}

/** Registers and compiles the fixture's ADD of two float32[n]; returns the compilation id. */
async function compileAdd(server: TestServer, n: number): Promise<string> {
  return (await compileAddModel(server, n)).compilation;
}

async function compileAddModel(
  server: TestServer,
  n: number,
): Promise<{ model: string; compilation: string }> {
  const model = await server.request("POST", "/v1/models", addModel(n));
  const compilation = await server.request("POST", "/v1/compilations", { model: model.body.id });
  return { model: model.body.id as string, compilation: compilation.body.id as string };
}

async function createMemory(server: TestServer, bytes: Uint8Array): Promise<string> {
  const response = await fetch(`${server.url}/v1/memories`, {
    method: "POST",
    headers: { "content-type": "application/octet-stream" },
    body: bytes as Uint8Array<ArrayBuffer>,
  });
  return (await response.json()).id;
}

function f32(...values: number[]): Uint8Array {
  return new Uint8Array(new Float32Array(values).buffer);
}

/** A request of ADD[2] whose first input is in `slot` (which may be unmapped). */
function slotRequest(id: number, slot: number) {
  return encodeRequest({
    id,
    measureTiming: false,
    deadlineUs: 0,
    inputs: [{ kind: "slot", slot, offset: 0, length: 8 }, { kind: "inline", bytes: f32(1, 1) }],
    outputs: [],
  });
}

function inlineRequest(id: number) {
  return encodeRequest({
    id,
    measureTiming: false,
    deadlineUs: 0,
    inputs: [{ kind: "inline", bytes: f32(id, id) }, { kind: "inline", bytes: f32(1, 1) }],
    outputs: [],
  });
}

const WINDOW = 2;

Deno.test("burst: requests beyond the window get RESOURCE_EXHAUSTED_TRANSIENT in order", async () => {
  await withServer({ burst: { maxInFlight: WINDOW } }, async (server) => {
    const compilation = await compileAdd(server, 2);
    const memory = await createMemory(server, f32(10, 20));
    const { socket, ready } = await MessageSocket.open(burstUrl(server.url, compilation));
    strictEqual(ready.maxInFlight, WINDOW);
    // Request 1 needs slot 7, which the client has not mapped: the burst waits for the
    // client's answer, so nothing completes while the next requests arrive.
    socket.send(slotRequest(1, 7));
    deepStrictEqual(await socket.control(), { type: "getMemories", requestId: 1, slots: [7] });
    // The window counts running and queued requests: WINDOW - 1 more fit; the excess is
    // refused, in order.
    for (let id = 2; id <= WINDOW + 4; id++) socket.send(inlineRequest(id));
    const inFlight = await pollUntil(
      () => metric(server.url, "nnserve_burst_requests_in_flight"),
      (n) => n === WINDOW + 4,
    );
    strictEqual(
      inFlight,
      WINDOW + 4,
      "1 running, WINDOW - 1 queued, 4 refusals waiting their turn",
    );
    socket.sendControl({ type: "map", slot: 7, memory });
    deepStrictEqual(await socket.control(), { type: "mapped", slot: 7, size: 8 });
    const answers = [];
    for (let id = 1; id <= WINDOW + 4; id++) {
      const result = await socket.result();
      answers.push([result.id, result.status]);
    }
    deepStrictEqual(answers, [
      [1, "NONE"],
      [2, "NONE"],
      [3, "RESOURCE_EXHAUSTED_TRANSIENT"],
      [4, "RESOURCE_EXHAUSTED_TRANSIENT"],
      [5, "RESOURCE_EXHAUSTED_TRANSIENT"],
      [6, "RESOURCE_EXHAUSTED_TRANSIENT"],
    ]);
    // The window is free again: the burst goes on.
    socket.send(inlineRequest(7));
    deepStrictEqual((await socket.result()).status, "NONE");
    await socket.close();
    deepStrictEqual(await burstGaugesAtZero(server.url), { active: 0, slots: 0, inFlight: 0 });
  });
});

Deno.test("burst: far more requests than the window closes the socket with 1008", async () => {
  await withServer({ burst: { maxInFlight: WINDOW } }, async (server) => {
    const compilation = await compileAdd(server, 2);
    const { socket } = await MessageSocket.open(burstUrl(server.url, compilation));
    socket.send(slotRequest(1, 7));
    await socket.control();
    // Request 1 runs (held by its slot callback); 4 x WINDOW - 1 more bring what the burst
    // holds (running and queued) to its hard limit; the next one ends the burst.
    for (let id = 2; id <= 4 * WINDOW + 1; id++) socket.send(inlineRequest(id));
    const closed = await socket.closed;
    strictEqual(closed.code, 1008);
    ok(closed.reason.length > 0);
    deepStrictEqual(await burstGaugesAtZero(server.url), { active: 0, slots: 0, inFlight: 0 });
    // The server is fine, and so is a new burst.
    const { socket: again } = await MessageSocket.open(burstUrl(server.url, compilation));
    again.send(inlineRequest(1));
    strictEqual((await again.result()).status, "NONE");
    await again.close();
  });
});

Deno.test("burst: a client that stops reading makes the server hold results back", async () => {
  const n = 1 << 20; // 4 MiB results: a few fill the socket buffers of any machine.
  const frames = 5;
  await withServer(
    { burst: { maxInFlight: frames - 1, maxBufferedBytes: 64 * 1024 } },
    async (server) => {
      const compilation = await compileAdd(server, n);
      const values = new Float32Array(2 * n).map((_, i) => i % 1000);
      const memory = await createMemory(server, new Uint8Array(values.buffer));
      const raw = await RawWebSocket.connect(server.port, `/v1/compilations/${compilation}/burst`);
      try {
        strictEqual((await raw.message()).kind, "control");
        await raw.sendText(JSON.stringify({ type: "map", slot: 1, memory }));
        await raw.message();
        for (let id = 1; id <= frames; id++) {
          await raw.sendBinary(encodeRequest({
            id,
            measureTiming: false,
            deadlineUs: 0,
            inputs: [
              { kind: "slot", slot: 1, offset: 0, length: 4 * n },
              { kind: "slot", slot: 1, offset: 4 * n, length: 4 * n },
            ],
            outputs: [],
          }));
        }
        // Wait until the server stops making progress (executions and requests held stay
        // the same over several reads), then look at what it holds.
        const progress = async () =>
          `${await metric(server.url, 'nnserve_executions_total{status="NONE"}')}/${
            (await burstGauges(server.url)).inFlight
          }`;
        let last = "";
        let same = 0;
        await pollUntil(
          async () => {
            const now = await progress();
            same = now === last ? same + 1 : 0;
            last = now;
            return same;
          },
          (s) => s >= 5,
          { intervalMs: 100 },
        );
        const held = (await burstGauges(server.url)).inFlight;
        ok(held > 0, "results are held back, not all pushed into the socket");
        ok(held <= frames, "never more than the requests sent");
        strictEqual((await burstGauges(server.url)).active, 1, "the slow reader is not dropped");
        // Reading again releases everything, in order, intact.
        for (let id = 1; id <= frames; id++) {
          const message = await raw.message();
          ok(message.kind === "result");
          deepStrictEqual([message.result.id, message.result.status], [id, "NONE"]);
          const sums = new Float32Array(message.result.outputs[0].bytes.slice().buffer);
          strictEqual(sums.length, n);
          strictEqual(sums[n - 1], values[n - 1] + values[2 * n - 1]);
        }
        strictEqual((await burstGauges(server.url)).inFlight, 0);
      } finally {
        raw.close();
      }
      deepStrictEqual(await burstGaugesAtZero(server.url), { active: 0, slots: 0, inFlight: 0 });
    },
  );
});

Deno.test("burst: a peer that vanishes without a close frame is found by ping and released", async () => {
  await withServer({ burstIdleTimeoutSeconds: 1 }, async (server) => {
    const { model, compilation } = await compileAddModel(server, 2);
    const memory = await createMemory(server, f32(1, 2));
    // A live burst of the SDK, whose WebSocket answers pings, alongside.
    const client = new NnClient({ baseUrl: server.url });
    const live = await (await client.compile(model)).burst();
    const raw = await RawWebSocket.connect(server.port, `/v1/compilations/${compilation}/burst`);
    try {
      strictEqual((await raw.message()).kind, "control");
      await raw.sendText(JSON.stringify({ type: "map", slot: 1, memory }));
      strictEqual((await raw.message()).kind, "control");
      deepStrictEqual(
        [(await burstGauges(server.url)).active, (await burstGauges(server.url)).slots],
        [2, 1],
      );
      // From now on the raw peer neither reads nor answers pings, and never closes.
      const gauges = await pollUntil(
        () => burstGauges(server.url),
        (g) => g.active === 1,
        { attempts: 300 },
      );
      deepStrictEqual(gauges, { active: 1, slots: 0, inFlight: 0 });
      // The burst that answers pings lives on.
      const result = await live.compute([[1, 2], [3, 4]]);
      deepStrictEqual(result.outputs[0].data, new Float32Array([4, 6]));
    } finally {
      raw.close();
      await live.close();
    }
    deepStrictEqual(await burstGaugesAtZero(server.url), { active: 0, slots: 0, inFlight: 0 });
  });
});
