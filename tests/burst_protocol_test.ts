/**
 * The burst wire protocol (driver/burst/protocol.ts, docs/burst-protocol.md) end to end,
 * with frames written by hand over a real WebSocket to a real server: every frame type and
 * control message, malformed frames (answered as that request's status, or an `error`
 * control message when no request id is readable, the burst and the server working on),
 * unknown slots through the `getMemories` callback, slot free, the slot cap, and in-order
 * pipelining.
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict";
import {
  type BurstArgument,
  type BurstRequest,
  encodeRequest,
  EXECUTE_FRAME,
  FLAG_MEASURE_TIMING,
  NO_DIMENSIONS,
  RESULT_FRAME,
} from "../driver/burst/protocol.ts";
import { burstGauges, burstGaugesAtZero, burstUrl, MessageSocket } from "./burst_fixture.ts";
import { addModel, startTestServer, type TestServer } from "./server_fixture.ts";

interface Context {
  server: TestServer;
  /** A compilation of the fixture's ADD of two float32[2]. */
  compilation: string;
  /** Opens a raw burst socket on the compilation and reads `ready`. */
  open(): Promise<MessageSocket>;
  /** Creates a memory holding the bytes; returns its id. */
  memory(bytes: Uint8Array): Promise<string>;
}

async function withBurst(
  fn: (context: Context) => Promise<void>,
  options: Parameters<typeof startTestServer>[0] = {},
): Promise<void> {
  const server = await startTestServer(options);
  const sockets: MessageSocket[] = [];
  try {
    const model = await server.request("POST", "/v1/models", addModel(2));
    const compilation = await server.request("POST", "/v1/compilations", { model: model.body.id });
    const id = compilation.body.id as string;
    await fn({
      server,
      compilation: id,
      async open() {
        const { socket, ready } = await MessageSocket.open(burstUrl(server.url, id));
        strictEqual(ready.compilation, id);
        sockets.push(socket);
        return socket;
      },
      async memory(bytes) {
        const response = await fetch(`${server.url}/v1/memories`, {
          method: "POST",
          headers: { "content-type": "application/octet-stream" },
          body: bytes as Uint8Array<ArrayBuffer>,
        });
        return (await response.json()).id;
      },
    });
    for (const socket of sockets) await socket.close();
    deepStrictEqual(await burstGaugesAtZero(server.url), { active: 0, slots: 0, inFlight: 0 });
  } finally {
    for (const socket of sockets) await socket.close();
    await server.close();
    await Deno.remove(server.dataDir, { recursive: true });
  }
}

function f32(...values: number[]): Uint8Array {
  return new Uint8Array(new Float32Array(values).buffer);
}

function inline(bytes: Uint8Array, dimensions?: number[]): BurstArgument {
  return { kind: "inline", bytes, ...(dimensions ? { dimensions } : {}) };
}

/** A valid request of the ADD model: [a0, a1] + [1, 1]. */
function addRequest(id: number, a: [number, number], extra: Partial<BurstRequest> = {}) {
  return encodeRequest({
    id,
    measureTiming: false,
    deadlineUs: 0,
    inputs: [inline(f32(...a)), inline(f32(1, 1))],
    outputs: [],
    ...extra,
  });
}

function floatsOf(bytes: Uint8Array): number[] {
  return Array.from(new Float32Array(bytes.slice().buffer));
}

/** Sends a valid request and checks its result: the burst still works. */
async function stillWorks(socket: MessageSocket, id: number): Promise<void> {
  socket.send(addRequest(id, [id, 2 * id]));
  const result = await socket.result();
  deepStrictEqual([result.id, result.status], [id, "NONE"]);
  deepStrictEqual(floatsOf(result.outputs[0].bytes), [id + 1, 2 * id + 1]);
}

Deno.test("burst: ready announces the window; EXECUTE gets a RESULT frame", async () => {
  await withBurst(async ({ open }) => {
    const socket = await open();
    socket.send(addRequest(7, [1, 2], { measureTiming: true }));
    const message = await socket.next();
    ok(message.kind === "result");
    strictEqual(message.bytes[0], RESULT_FRAME);
    strictEqual(message.bytes[1], 0, "status code NONE");
    const { result } = message;
    strictEqual(result.id, 7);
    strictEqual(result.message, "");
    deepStrictEqual(result.outputs.map((o) => [o.dimensions, o.isSufficient]), [[[2], true]]);
    deepStrictEqual(floatsOf(result.outputs[0].bytes), [2, 3]);
    ok(result.timing && result.timing.onDeviceUs >= 0 && result.timing.inDriverUs >= 0);
    // Without the timing flag, no timing.
    socket.send(addRequest(8, [1, 2]));
    strictEqual((await socket.result()).timing, undefined);
    // Inline outputs with expected dimensions are accepted like REST's `outputs`.
    socket.send(addRequest(9, [1, 2], { outputs: [inline(new Uint8Array(0), [2])] }));
    strictEqual((await socket.result()).status, "NONE");
    // The flag byte and type constants are what the format documents.
    strictEqual(addRequest(1, [0, 0], { measureTiming: true })[1], FLAG_MEASURE_TIMING);
    strictEqual(addRequest(1, [0, 0])[0], EXECUTE_FRAME);
  }, { burst: { maxInFlight: 3 } });
});

Deno.test("burst: each argument kind (inline, slot, omitted) and dimensions", async () => {
  await withBurst(async ({ open, memory, server }) => {
    const socket = await open();
    const input = await memory(f32(10, 20, 30, 40));
    const output = await memory(new Uint8Array(16));
    socket.sendControl({ type: "map", slot: 1, memory: input });
    deepStrictEqual(await socket.control(), { type: "mapped", slot: 1, size: 16 });
    socket.sendControl({ type: "map", slot: 2, memory: output });
    deepStrictEqual(await socket.control(), { type: "mapped", slot: 2, size: 16 });
    strictEqual((await burstGauges(server.url)).slots, 2);
    socket.send(encodeRequest({
      id: 1,
      measureTiming: false,
      deadlineUs: 0,
      inputs: [
        { kind: "slot", slot: 1, offset: 8, length: 8, dimensions: [2] },
        inline(f32(1, 2), [2]),
      ],
      outputs: [{ kind: "slot", slot: 2, offset: 4, length: 8 }],
    }));
    const written = await socket.result();
    deepStrictEqual([written.status, written.outputs[0].dimensions], ["NONE", [2]]);
    strictEqual(written.outputs[0].bytes.byteLength, 0, "an output written to a slot has no data");
    const bytes = new Uint8Array(
      await (await fetch(`${server.url}/v1/memories/${output}`)).arrayBuffer(),
    );
    deepStrictEqual(floatsOf(bytes), [0, 31, 42, 0]);
    // Omitted: parsed as such, refused because ADD needs the value.
    socket.send(encodeRequest({
      id: 2,
      measureTiming: false,
      deadlineUs: 0,
      inputs: [inline(f32(1, 2)), { kind: "omitted" }],
      outputs: [],
    }));
    const omitted = await socket.result();
    deepStrictEqual([omitted.id, omitted.status], [2, "INVALID_ARGUMENT"]);
    ok(/input 1/.test(omitted.message), omitted.message);
    // Dimensions that contradict the model.
    socket.send(addRequest(3, [1, 2], { inputs: [inline(f32(1, 2), [3]), inline(f32(1, 1))] }));
    strictEqual((await socket.result()).status, "INVALID_ARGUMENT");
    // A slot region outside its memory.
    socket.send(addRequest(4, [1, 2], {
      inputs: [{ kind: "slot", slot: 1, offset: 12, length: 8 }, inline(f32(1, 1))],
    }));
    strictEqual((await socket.result()).status, "INVALID_ARGUMENT");
    // An output slot region too small: OUTPUT_INSUFFICIENT_SIZE with the needed shape.
    socket.send(
      addRequest(5, [1, 2], { outputs: [{ kind: "slot", slot: 2, offset: 0, length: 4 }] }),
    );
    const small = await socket.result();
    strictEqual(small.status, "OUTPUT_INSUFFICIENT_SIZE");
    deepStrictEqual(small.outputs.map((o) => [o.dimensions, o.isSufficient]), [[[2], false]]);
    await stillWorks(socket, 6);
  });
});

/** Hand-made malformed frames, each with what it must produce. */
function malformedFrames(): { name: string; frame: Uint8Array<ArrayBuffer>; id?: number }[] {
  const valid = addRequest(100, [1, 2]);
  const header = (id: number, inputs: number, outputs: number, type = EXECUTE_FRAME) => {
    const bytes = new Uint8Array(16);
    const view = new DataView(bytes.buffer);
    view.setUint8(0, type);
    view.setUint16(2, inputs, true);
    view.setUint32(4, id, true);
    view.setUint16(8, outputs, true);
    return bytes;
  };
  const join = (...parts: Uint8Array[]) => {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.byteLength;
    }
    return out;
  };
  const argument = (kind: number, rank: number, length: number) => {
    const bytes = new Uint8Array(16);
    const view = new DataView(bytes.buffer);
    view.setUint8(0, kind);
    view.setUint8(1, rank);
    view.setUint32(4, length, true);
    return bytes;
  };
  const inlineArg = join(argument(0, NO_DIMENSIONS, 8), f32(1, 2));
  const badKind = valid.slice();
  badKind[16] = 9;
  return [
    { name: "empty frame", frame: new Uint8Array(0) },
    { name: "too short to hold an id", frame: new Uint8Array([EXECUTE_FRAME, 0, 0]) },
    { name: "header cut short", frame: header(201, 2, 0).slice(0, 12), id: 201 },
    { name: "unknown frame type", frame: header(202, 0, 0, 0x42), id: 202 },
    { name: "a RESULT frame sent to the server", frame: header(203, 0, 0, RESULT_FRAME), id: 203 },
    {
      name: "truncated argument",
      frame: join(header(204, 2, 0), inlineArg, new Uint8Array(8)),
      id: 204,
    },
    {
      name: "bad argument kind",
      frame: (() => {
        const f = badKind;
        new DataView(f.buffer).setUint32(4, 205, true);
        return f;
      })(),
      id: 205,
    },
    {
      name: "announced length past the end",
      frame: join(header(206, 2, 0), inlineArg, argument(0, NO_DIMENSIONS, 1000), f32(1, 2)),
      id: 206,
    },
    {
      name: "dimensions past the end",
      frame: join(header(207, 2, 0), inlineArg, argument(0, 4, 8)),
      id: 207,
    },
    {
      name: "output marked omitted",
      frame: join(header(208, 2, 1), inlineArg, inlineArg, argument(2, NO_DIMENSIONS, 0)),
      id: 208,
    },
    { name: "too few inputs", frame: join(header(209, 1, 0), inlineArg), id: 209 },
    {
      name: "too many inputs",
      frame: join(header(210, 3, 0), inlineArg, inlineArg, inlineArg),
      id: 210,
    },
    {
      name: "too many outputs",
      frame: join(
        header(211, 2, 2),
        inlineArg,
        inlineArg,
        argument(0, NO_DIMENSIONS, 0),
        argument(0, NO_DIMENSIONS, 0),
      ),
      id: 211,
    },
    {
      name: "inline data of the wrong size",
      frame: join(header(212, 2, 0), inlineArg, argument(0, NO_DIMENSIONS, 4), new Uint8Array(8)),
      id: 212,
    },
  ];
}

Deno.test("burst: malformed frames fail alone; the burst and the server keep working", async () => {
  await withBurst(async ({ open, server, compilation }) => {
    const socket = await open();
    let check = 1;
    for (const { name, frame, id } of malformedFrames()) {
      socket.send(frame);
      if (id === undefined) {
        const error = await socket.control();
        strictEqual(error.type, "error", name);
        strictEqual(error.status, "INVALID_ARGUMENT", name);
        ok(typeof error.message === "string" && error.message.length > 0, name);
      } else {
        const result = await socket.result();
        deepStrictEqual([result.id, result.status], [id, "INVALID_ARGUMENT"], name);
        ok(result.message.length > 0, name);
        deepStrictEqual(result.outputs, [], name);
      }
      await stillWorks(socket, check++);
    }
    const rest = await server.request("POST", `/v1/compilations/${compilation}/executions`, {
      inputs: [{ data: [1, 2] }, { data: [3, 4] }],
    });
    strictEqual(rest.status, 200);
    strictEqual((await server.request("GET", "/healthz")).status, 200);
  });
});

Deno.test("burst: malformed control messages get an error message", async () => {
  await withBurst(async ({ open, memory }) => {
    const socket = await open();
    const cases: [string, Record<string, unknown>][] = [
      ["not json", { type: "error", status: "INVALID_ARGUMENT" }],
      [JSON.stringify({ type: "map" }), { type: "error", status: "INVALID_ARGUMENT" }],
      [JSON.stringify({ type: "map", slot: -1, memory: "x" }), {
        type: "error",
        status: "INVALID_ARGUMENT",
      }],
      [JSON.stringify({ type: "map", slot: 1.5, memory: "x" }), {
        type: "error",
        status: "INVALID_ARGUMENT",
      }],
      [JSON.stringify({ type: "map", slot: 3 }), {
        type: "error",
        status: "INVALID_ARGUMENT",
        slot: 3,
      }],
      [JSON.stringify({ type: "map", slot: 3, memory: "no-such-memory" }), {
        type: "error",
        status: "NOT_FOUND",
        slot: 3,
      }],
      [JSON.stringify({ type: "launch", slot: 4 }), {
        type: "error",
        status: "INVALID_ARGUMENT",
        slot: 4,
      }],
    ];
    for (const [text, expected] of cases) {
      socket.send(text);
      const { message, ...rest } = await socket.control();
      deepStrictEqual(rest, expected, text);
      ok(typeof message === "string" && message.length > 0, text);
    }
    // Freeing a slot that was never mapped is answered like any free.
    socket.sendControl({ type: "free", slot: 12 });
    deepStrictEqual(await socket.control(), { type: "freed", slot: 12 });
    socket.sendControl({ type: "map", slot: 0, memory: await memory(f32(1, 2)) });
    deepStrictEqual(await socket.control(), { type: "mapped", slot: 0, size: 8 });
    await stillWorks(socket, 1);
  });
});

Deno.test("burst: an unknown slot is resolved through getMemories, then the request runs", async () => {
  await withBurst(async ({ open, memory, server }) => {
    const socket = await open();
    const a = await memory(f32(5, 6));
    const b = await memory(f32(7, 8));
    socket.send(encodeRequest({
      id: 31,
      measureTiming: false,
      deadlineUs: 0,
      inputs: [
        { kind: "slot", slot: 4, offset: 0, length: 8 },
        { kind: "slot", slot: 9, offset: 0, length: 8 },
      ],
      outputs: [],
    }));
    const ask = await socket.control();
    strictEqual(ask.type, "getMemories");
    strictEqual(ask.requestId, 31);
    deepStrictEqual((ask.slots as number[]).toSorted(), [4, 9]);
    socket.sendControl({ type: "map", slot: 4, memory: a });
    deepStrictEqual(await socket.control(), { type: "mapped", slot: 4, size: 8 });
    socket.sendControl({ type: "map", slot: 9, memory: b });
    deepStrictEqual(await socket.control(), { type: "mapped", slot: 9, size: 8 });
    const result = await socket.result();
    deepStrictEqual([result.id, result.status], [31, "NONE"]);
    deepStrictEqual(floatsOf(result.outputs[0].bytes), [12, 14]);
    strictEqual((await burstGauges(server.url)).slots, 2);
    // Once mapped, the slot is not asked for again.
    socket.send(
      addRequest(32, [0, 0], {
        inputs: [{ kind: "slot", slot: 4, offset: 0, length: 8 }, inline(f32(1, 1))],
      }),
    );
    deepStrictEqual(floatsOf((await socket.result()).outputs[0].bytes), [6, 7]);
    // A client that cannot name the memory fails that request only.
    socket.send(
      addRequest(33, [0, 0], {
        inputs: [{ kind: "slot", slot: 77, offset: 0, length: 8 }, inline(f32(1, 1))],
      }),
    );
    deepStrictEqual(await socket.control(), { type: "getMemories", requestId: 33, slots: [77] });
    socket.sendControl({ type: "map", slot: 77 });
    strictEqual((await socket.control()).type, "error");
    const failed = await socket.result();
    deepStrictEqual([failed.id, failed.status], [33, "INVALID_ARGUMENT"]);
    ok(/slot 77/.test(failed.message), failed.message);
    await stillWorks(socket, 34);
  });
});

Deno.test("burst: a getMemories left unanswered fails its request after the callback limit", async () => {
  await withBurst(async ({ open }) => {
    const socket = await open();
    socket.send(
      addRequest(41, [0, 0], {
        inputs: [{ kind: "slot", slot: 5, offset: 0, length: 8 }, inline(f32(1, 1))],
      }),
    );
    socket.send(addRequest(42, [1, 1]));
    deepStrictEqual(await socket.control(), { type: "getMemories", requestId: 41, slots: [5] });
    const failed = await socket.result();
    deepStrictEqual([failed.id, failed.status], [41, "INVALID_ARGUMENT"]);
    // The request behind it was held, not reordered, and runs now.
    const next = await socket.result();
    deepStrictEqual([next.id, next.status], [42, "NONE"]);
  }, { burst: { slotCallbackMs: 100 } });
});

Deno.test("burst: free evicts a slot; using it again asks the client again", async () => {
  await withBurst(async ({ open, memory, server }) => {
    const socket = await open();
    const a = await memory(f32(5, 6));
    socket.sendControl({ type: "map", slot: 2, memory: a });
    await socket.control();
    socket.sendControl({ type: "map", slot: 3, memory: a });
    await socket.control();
    strictEqual((await burstGauges(server.url)).slots, 2);
    socket.sendControl({ type: "free", slot: 2 });
    deepStrictEqual(await socket.control(), { type: "freed", slot: 2 });
    strictEqual((await burstGauges(server.url)).slots, 1);
    socket.send(
      addRequest(51, [0, 0], {
        inputs: [{ kind: "slot", slot: 2, offset: 0, length: 8 }, inline(f32(1, 1))],
      }),
    );
    deepStrictEqual(await socket.control(), { type: "getMemories", requestId: 51, slots: [2] });
    socket.sendControl({ type: "map", slot: 2, memory: a });
    await socket.control();
    deepStrictEqual(floatsOf((await socket.result()).outputs[0].bytes), [6, 7]);
    // Remapping a slot to another memory replaces it.
    const b = await memory(f32(-1, -2));
    socket.sendControl({ type: "map", slot: 2, memory: b });
    deepStrictEqual(await socket.control(), { type: "mapped", slot: 2, size: 8 });
    socket.send(
      addRequest(52, [0, 0], {
        inputs: [{ kind: "slot", slot: 2, offset: 0, length: 8 }, inline(f32(1, 1))],
      }),
    );
    deepStrictEqual(floatsOf((await socket.result()).outputs[0].bytes), [0, -1]);
    strictEqual((await burstGauges(server.url)).slots, 2);
  });
});

Deno.test("burst: maxSlots caps the slots of a burst; remapping a mapped slot still works", async () => {
  await withBurst(async ({ open, memory, server }) => {
    const socket = await open();
    const a = await memory(f32(5, 6));
    const b = await memory(f32(7, 8));
    for (let slot = 0; slot < 4; slot++) {
      socket.sendControl({ type: "map", slot, memory: a });
      deepStrictEqual(await socket.control(), { type: "mapped", slot, size: 8 });
    }
    // A fifth slot is refused and nothing of it is kept.
    socket.sendControl({ type: "map", slot: 4, memory: a });
    const { message, ...refusal } = await socket.control();
    deepStrictEqual(refusal, { type: "error", status: "RESOURCE_EXHAUSTED_PERSISTENT", slot: 4 });
    ok(typeof message === "string" && /4/.test(message), String(message));
    strictEqual((await burstGauges(server.url)).slots, 4);
    // A mapped slot may take another memory.
    socket.sendControl({ type: "map", slot: 2, memory: b });
    deepStrictEqual(await socket.control(), { type: "mapped", slot: 2, size: 8 });
    socket.send(
      addRequest(1, [0, 0], {
        inputs: [{ kind: "slot", slot: 2, offset: 0, length: 8 }, inline(f32(1, 1))],
      }),
    );
    deepStrictEqual(floatsOf((await socket.result()).outputs[0].bytes), [8, 9]);
    // A request naming a slot the burst has no room for fails alone.
    socket.send(
      addRequest(2, [0, 0], {
        inputs: [{ kind: "slot", slot: 9, offset: 0, length: 8 }, inline(f32(1, 1))],
      }),
    );
    deepStrictEqual(await socket.control(), { type: "getMemories", requestId: 2, slots: [9] });
    socket.sendControl({ type: "map", slot: 9, memory: a });
    strictEqual((await socket.control()).status, "RESOURCE_EXHAUSTED_PERSISTENT");
    deepStrictEqual(((r) => [r.id, r.status])(await socket.result()), [2, "INVALID_ARGUMENT"]);
    // Freeing a slot makes room for a new one.
    socket.sendControl({ type: "free", slot: 0 });
    deepStrictEqual(await socket.control(), { type: "freed", slot: 0 });
    socket.sendControl({ type: "map", slot: 4, memory: a });
    deepStrictEqual(await socket.control(), { type: "mapped", slot: 4, size: 8 });
    strictEqual((await burstGauges(server.url)).slots, 4);
    await stillWorks(socket, 3);
    // Many maps at once (each resolving its memory concurrently) still stop at the cap.
    const flood = await open();
    for (let slot = 100; slot < 140; slot++) flood.sendControl({ type: "map", slot, memory: a });
    const answers = [];
    for (let k = 0; k < 40; k++) answers.push((await flood.control()).type);
    deepStrictEqual(
      [answers.filter((t) => t === "mapped").length, answers.filter((t) => t === "error").length],
      [4, 36],
    );
    strictEqual((await burstGauges(server.url)).slots, 8, "4 slots in each burst");
  }, { burst: { maxSlots: 4 } });
});

Deno.test("burst: ready announces the slot cap, 1024 unless configured", async () => {
  await withBurst(async ({ server, compilation }) => {
    const { socket, ready } = await MessageSocket.open(burstUrl(server.url, compilation));
    deepStrictEqual([ready.maxInFlight, ready.maxSlots], [32, 1024]);
    await socket.close();
  });
});

Deno.test("burst: pipelined requests are answered in arrival order", async () => {
  await withBurst(async ({ open }) => {
    const socket = await open();
    // Ids are the client's: arrival order, not id order, decides.
    const ids = [90, 3, 57, 12, 4000000000, 1, 2, 8, 64, 5];
    ids.forEach((id, i) => socket.send(addRequest(id, [i, -i])));
    for (const [i, id] of ids.entries()) {
      const result = await socket.result();
      deepStrictEqual([result.id, result.status], [id, "NONE"]);
      deepStrictEqual(floatsOf(result.outputs[0].bytes), [i + 1, 1 - i]);
    }
  }, { burst: { maxInFlight: 16 } });
});

Deno.test("burst: upgrade needs the compilation, a WebSocket and (with keys) a token", async () => {
  const server = await startTestServer({
    apiKeys: new Map([["key-a", "alice"], ["key-b", "bob"]]),
  });
  try {
    const auth = { authorization: "Bearer key-a" };
    const model = await server.request("POST", "/v1/models", addModel(2), auth);
    const compilation = await server.request(
      "POST",
      "/v1/compilations",
      { model: model.body.id },
      auth,
    );
    const id = compilation.body.id as string;
    // A refused upgrade closes the client's socket before any message.
    const refused = async (url: string) => {
      const socket = new MessageSocket(url);
      await rejects(socket.next(), /the socket closed/);
      await socket.close();
    };
    await refused(burstUrl(server.url, id));
    await refused(burstUrl(server.url, id, "wrong"));
    await refused(burstUrl(server.url, id, "key-b"));
    await refused(burstUrl(server.url, "no-such-compilation", "key-a"));
    // Over plain HTTP the reasons show.
    const get = async (path: string, headers: HeadersInit) => {
      const response = await fetch(`${server.url}${path}`, { headers });
      return [response.status, (await response.json()).status];
    };
    const path = `/v1/compilations/${id}/burst`;
    deepStrictEqual(await get(path, {}), [401, "UNAUTHORIZED"]);
    deepStrictEqual(await get(`${path}?access_token=key-a`, {}), [401, "UNAUTHORIZED"]);
    deepStrictEqual(await get(path, { authorization: "Bearer key-b" }), [404, "NOT_FOUND"]);
    deepStrictEqual(await get(path, auth), [400, "INVALID_ARGUMENT"]);
    const { socket, ready } = await MessageSocket.open(burstUrl(server.url, id, "key-a"));
    strictEqual(ready.maxInFlight, 32);
    await stillWorks(socket, 1);
    await socket.close();
    deepStrictEqual(await burstGaugesAtZero(server.url), { active: 0, slots: 0, inFlight: 0 });
  } finally {
    await server.close();
    await Deno.remove(server.dataDir, { recursive: true });
  }
});
