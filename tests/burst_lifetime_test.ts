/**
 * What a burst holds and for how long, against a real server: the in-flight window (the
 * excess refused at once with RESOURCE_EXHAUSTED_TRANSIENT, holding no place; close 1008 once
 * refusals outrun accepted requests by four windows, even for a client that never stops
 * sending), a client that stops reading (the server holds results back instead of buffering
 * them), a peer that vanishes without a close frame (found by ping/pong and released), and the
 * burst gauges of `/metrics` back at zero after each.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { NnClient } from "../client/mod.ts";
import { encodeRequest } from "../driver/burst/protocol.ts";
import {
  burstGauges,
  burstGaugesAtZero,
  burstUrl,
  MessageSocket,
  pollUntil,
  RawWebSocket,
} from "./burst_fixture.ts";
import { addModel, metric, type TestServer, withTestServer } from "./server_fixture.ts";

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

/** Long enough for any test step, short enough that a regression fails instead of hanging. */
const SLOT_CALLBACK_MS = 10_000;

Deno.test("burst: a refused request is answered at once, ahead of earlier results, and holds no place", async () => {
  await withTestServer(
    { burst: { maxInFlight: 1, slotCallbackMs: SLOT_CALLBACK_MS } },
    async (server) => {
      const compilation = await compileAdd(server, 2);
      const memory = await createMemory(server, f32(10, 20));
      const { socket, ready } = await MessageSocket.open(burstUrl(server.url, compilation));
      strictEqual(ready.maxInFlight, 1);
      // Request 1 needs slot 7, which the client has not mapped: it fills the window while the
      // burst waits for the client's answer.
      socket.send(slotRequest(1, 7));
      deepStrictEqual(await socket.control(), { type: "getMemories", requestId: 1, slots: [7] });
      // Requests over the window are refused at once, ahead of request 1's result.
      socket.send(inlineRequest(2));
      socket.send(inlineRequest(3));
      for (const id of [2, 3]) {
        const refused = await socket.result();
        deepStrictEqual([refused.id, refused.status], [id, "RESOURCE_EXHAUSTED_TRANSIENT"]);
        ok(/in flight/.test(refused.message), refused.message);
      }
      // So is a malformed frame that carries an id (here its header is cut short).
      socket.send(inlineRequest(4).slice(0, 12));
      deepStrictEqual(
        ((r) => [r.id, r.status])(await socket.result()),
        [4, "INVALID_ARGUMENT"],
      );
      strictEqual(
        await metric(server.url, "nnserve_burst_requests_in_flight"),
        1,
        "only request 1 is held; what was refused holds nothing",
      );
      strictEqual(
        await metric(server.url, 'nnserve_refusals_total{limit="burst_window"}'),
        2,
        "the window's refusals are counted (the malformed frame is no refusal)",
      );
      socket.sendControl({ type: "map", slot: 7, memory });
      deepStrictEqual(await socket.control(), { type: "mapped", slot: 7, size: 8 });
      deepStrictEqual(((r) => [r.id, r.status])(await socket.result()), [1, "NONE"]);
      // The window is free as soon as request 1 is answered.
      socket.send(inlineRequest(5));
      deepStrictEqual(((r) => [r.id, r.status])(await socket.result()), [5, "NONE"]);
      await socket.close();
      deepStrictEqual(await burstGaugesAtZero(server.url), { active: 0, slots: 0, inFlight: 0 });
    },
  );
});

/**
 * Fills a window of WINDOW with request `first` (waiting for unmapped `slot`) and an inline
 * request behind it, then sends `refusals` more, each refused at once.
 */
async function fillAndOvershoot(
  socket: MessageSocket,
  first: number,
  slot: number,
  refusals: number,
): Promise<void> {
  socket.send(slotRequest(first, slot));
  deepStrictEqual(await socket.control(), {
    type: "getMemories",
    requestId: first,
    slots: [slot],
  });
  socket.send(inlineRequest(first + 1));
  for (let id = first + 2; id < first + 2 + refusals; id++) socket.send(inlineRequest(id));
  for (let id = first + 2; id < first + 2 + refusals; id++) {
    deepStrictEqual(
      ((r) => [r.id, r.status])(await socket.result()),
      [id, "RESOURCE_EXHAUSTED_TRANSIENT"],
    );
  }
}

Deno.test("burst: refusals that outrun accepted requests by four windows close the socket with 1008", async () => {
  await withTestServer(
    { burst: { maxInFlight: WINDOW, slotCallbackMs: SLOT_CALLBACK_MS } },
    async (server) => {
      const compilation = await compileAdd(server, 2);
      const memory = await createMemory(server, f32(10, 20));
      const { socket } = await MessageSocket.open(burstUrl(server.url, compilation));
      // 4 x WINDOW refusals are answered; the burst stays open.
      await fillAndOvershoot(socket, 1, 7, 4 * WINDOW);
      socket.sendControl({ type: "map", slot: 7, memory });
      deepStrictEqual(await socket.control(), { type: "mapped", slot: 7, size: 8 });
      deepStrictEqual((await socket.result()).id, 1);
      deepStrictEqual((await socket.result()).id, 2);
      // Each accepted request takes one refusal back: 2 here, 2 more in the next fill...
      for (const id of [20, 21]) {
        socket.send(inlineRequest(id));
        deepStrictEqual(((r) => [r.id, r.status])(await socket.result()), [id, "NONE"]);
      }
      // ...so 4 more refusals are answered too,
      await fillAndOvershoot(socket, 100, 8, 4);
      // and the next one ends the burst.
      socket.send(inlineRequest(200));
      const closed = await socket.closed;
      strictEqual(closed.code, 1008);
      ok(closed.reason.length > 0);
      deepStrictEqual(await burstGaugesAtZero(server.url), { active: 0, slots: 0, inFlight: 0 });
      // The server is fine, and so is a new burst.
      const { socket: again } = await MessageSocket.open(burstUrl(server.url, compilation));
      again.send(inlineRequest(1));
      strictEqual((await again.result()).status, "NONE");
      await again.close();
    },
  );
});

/** Resolves like `promise`, or rejects after `ms` (calling `onTimeout` first). */
function within<T>(promise: Promise<T>, ms: number, onTimeout: () => void): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onTimeout();
      reject(new Error(`nothing after ${ms} ms`));
    }, ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

Deno.test("burst: a client that keeps sending far past the window gets close 1008 and is released", async () => {
  await withTestServer(
    { burst: { maxInFlight: WINDOW, slotCallbackMs: SLOT_CALLBACK_MS } },
    async (server) => {
      const compilation = await compileAdd(server, 2);
      const raw = await RawWebSocket.connect(server.port, `/v1/compilations/${compilation}/burst`);
      try {
        strictEqual((await raw.message()).kind, "control");
        // Request 1 waits for slot 7 and fills the window; then frames come without pause,
        // far more than the burst refuses before it gives up, never reading in between.
        await raw.sendBinary(slotRequest(1, 7));
        let closeSeen = false;
        const closing = raw.closeFrame().finally(() => closeSeen = true);
        closing.catch(() => {});
        let sent = 1;
        const until = performance.now() + 2_000;
        while (!closeSeen && sent < 2_000 && performance.now() < until) {
          try {
            await raw.sendBinary(inlineRequest(++sent));
          } catch {
            break; // The server has closed the connection.
          }
        }
        ok(sent > 4 * WINDOW + 2, `only ${sent} frames sent`);
        const closed = await within(closing, 15_000, () => raw.close());
        strictEqual(closed.code, 1008);
        ok(closed.reason.length > 0);
      } finally {
        raw.close();
      }
      deepStrictEqual(await burstGaugesAtZero(server.url), { active: 0, slots: 0, inFlight: 0 });
    },
  );
});

Deno.test("burst: a client that stops reading makes the server hold results back", async () => {
  const n = 1 << 20; // 4 MiB results: a few fill the socket buffers of any machine.
  const frames = 5;
  // The window holds every frame, so none is refused however fast results go out; the raw
  // peer never answers pings, so the idle timeout is far longer than the test.
  await withTestServer(
    {
      burst: { maxInFlight: frames, maxBufferedBytes: 64 * 1024 },
      burstIdleTimeoutSeconds: 600,
    },
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
  await withTestServer({ burstIdleTimeoutSeconds: 1 }, async (server) => {
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
