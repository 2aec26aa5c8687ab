/**
 * End-to-end tests of the SDK's `Burst` (client/burst.ts) against a real server: compute and
 * its typed outputs, memory slots (mapped up front, answered through `getMemories`, freed),
 * per-request errors, pipelining beyond the service's window with results in order, and
 * the burst's lifetime (close, compilation deleted, authentication) with the burst gauges of
 * `/metrics` back at zero afterwards; inputs and outputs longer than a frame carries refused
 * each on its own, the burst going on. Every test runs over the SDK's own Deno socket and
 * over the standard WebSocket.
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict";
import {
  Burst,
  type BurstInput,
  CLOSE_COMPILATION_DELETED,
  Compilation,
  type ExecutionResult,
  NnapiError,
  NnClient,
} from "../client/mod.ts";
import { Transport } from "../client/http.ts";
import type { ServerConfig } from "../server.ts";
import { burstGauges, burstGaugesAtZero } from "./burst_fixture.ts";
import { addModel, startTestServer, type TestServer } from "./server_fixture.ts";

/** Runs `fn` with a fresh server and an SDK client of it; stops the server afterwards. */
async function withServer(
  fn: (server: TestServer, client: NnClient) => Promise<void>,
  options: Partial<ServerConfig> = {},
): Promise<void> {
  const server = await startTestServer(options);
  try {
    await fn(server, new NnClient({ baseUrl: server.url }));
  } finally {
    await server.close();
    await Deno.remove(server.dataDir, { recursive: true });
  }
}

/** Compiles the float32 ADD model of the fixture (`dimensions` [0] makes it dynamic). */
async function compileAdd(client: NnClient, n: number, dynamic = false): Promise<Compilation> {
  const model = client.model();
  const dimensions = [dynamic ? 0 : n];
  const a = model.addOperand({ type: "TENSOR_FLOAT32", dimensions });
  const b = model.addOperand({ type: "TENSOR_FLOAT32", dimensions });
  const act = model.addOperand({ type: "INT32" });
  const out = model.addOperand({ type: "TENSOR_FLOAT32", dimensions });
  model.setOperandValue(act, 0);
  model.addOperation("ADD", [a, b, act], [out]);
  model.identifyInputsAndOutputs([a, b], [out]);
  return await client.compile(model);
}

function floats(...values: number[]): Float32Array {
  return new Float32Array(values);
}

function bytesOf(...values: number[]): Uint8Array {
  return new Uint8Array(floats(...values).buffer);
}

/** Each test runs over both sockets the SDK offers (client/burst_socket.ts). */
const SOCKETS = ["deno", "websocket"] as const;

for (const socket of SOCKETS) {
  Deno.test(`Burst.compute returns outputs as typed arrays of the output type (${socket})`, async () => {
    await withServer(async (_server, client) => {
      const compilation = await compileAdd(client, 4);
      await using burst = await compilation.burst({ socket });
      ok(burst.maxInFlight >= 1);
      const result = await burst.compute([[1, 2, 3, 4], new Float64Array([10, 20, 30, 40])], {
        measureTiming: true,
      });
      ok(result.outputs[0].data instanceof Float32Array);
      deepStrictEqual(result.outputs[0].data, floats(11, 22, 33, 44));
      deepStrictEqual(result.outputs[0].dimensions, [4]);
      deepStrictEqual(result.outputShapes, [{ dimensions: [4], isSufficient: true }]);
      ok(result.timing && result.timing.onDeviceUs >= 0 && result.timing.inDriverUs >= 0);
      const untimed = await burst.compute([floats(1, 1, 1, 1), floats(2, 2, 2, 2)]);
      strictEqual(untimed.timing, undefined);
      deepStrictEqual(untimed.outputs[0].data, floats(3, 3, 3, 3));
    });
  });

  Deno.test(`Burst.compute completes unknown dimensions from the inputs' dimensions (${socket})`, async () => {
    await withServer(async (_server, client) => {
      const compilation = await compileAdd(client, 0, true);
      await using burst = await compilation.burst({ socket });
      const result = await burst.compute([
        { data: [1, 2, 3, 4, 5, 6], dimensions: [6] },
        { data: floats(1, 1, 1, 1, 1, 1), dimensions: [6] },
      ]);
      deepStrictEqual(result.outputs[0].dimensions, [6]);
      deepStrictEqual(result.outputs[0].data, floats(2, 3, 4, 5, 6, 7));
    });
  });

  Deno.test(`Burst.mapMemory maps a slot up front; inputs and outputs use slot regions (${socket})`, async () => {
    await withServer(async (server, client) => {
      const compilation = await compileAdd(client, 2);
      const input = await client.createMemory(bytesOf(1, 2, 3, 4));
      const output = await client.createMemory({ size: 16 });
      await using burst = await compilation.burst({ socket });
      await burst.mapMemory(0, input);
      await burst.mapMemory(1, output);
      strictEqual((await burstGauges(server.url)).slots, 2);
      const result = await burst.compute(
        [{ slot: 0, offset: 0, length: 8 }, { slot: 0, offset: 8, length: 8 }],
        { outputs: [{ slot: 1, offset: 8, length: 8 }] },
      );
      deepStrictEqual(result.outputs, [{ dimensions: [2] }]);
      deepStrictEqual(new Float32Array((await output.read()).buffer), floats(0, 0, 4, 6));
      // The slot reads the memory as it is now: a write is seen by the next request.
      await input.write(0, bytesOf(10, 20));
      const again = await burst.compute([{ slot: 0, offset: 0, length: 8 }, [1, 1]]);
      deepStrictEqual(again.outputs[0].data, floats(11, 21));
    });
  });

  Deno.test(`Burst.setSlot answers the service's getMemories callback (${socket})`, async () => {
    await withServer(async (server, client) => {
      const compilation = await compileAdd(client, 2);
      const memory = await client.createMemory(bytesOf(5, 6));
      await using burst = await compilation.burst({ socket });
      burst.setSlot(42, memory);
      // Registered locally only: the service does not know the slot yet.
      strictEqual((await burstGauges(server.url)).slots, 0);
      const result = await burst.compute([{ slot: 42, offset: 0, length: 8 }, [1, 2]]);
      deepStrictEqual(result.outputs[0].data, floats(6, 8));
      strictEqual((await burstGauges(server.url)).slots, 1);
    });
  });

  Deno.test(`Burst.freeSlot evicts a slot; a request using it then fails (${socket})`, async () => {
    await withServer(async (server, client) => {
      const compilation = await compileAdd(client, 2);
      const memory = await client.createMemory(bytesOf(5, 6));
      await using burst = await compilation.burst({ socket });
      await burst.mapMemory(3, memory);
      await burst.freeSlot(3);
      strictEqual((await burstGauges(server.url)).slots, 0);
      const error = await burst.compute([{ slot: 3, offset: 0, length: 8 }, [1, 2]]).then(
        () => undefined,
        (e) => e,
      );
      ok(error instanceof NnapiError);
      strictEqual(error.status, "INVALID_ARGUMENT");
      ok(/slot 3/.test(error.message), error.message);
      // Mapping it again makes it usable again.
      await burst.mapMemory(3, memory);
      deepStrictEqual(
        (await burst.compute([{ slot: 3, offset: 0, length: 8 }, [0, 0]])).outputs[0]
          .data,
        floats(5, 6),
      );
    });
  });

  Deno.test(`Burst.mapMemory rejects an unknown memory with NOT_FOUND (${socket})`, async () => {
    await withServer(async (server, client) => {
      const compilation = await compileAdd(client, 2);
      const memory = await client.createMemory({ size: 8 });
      await memory.delete();
      await using burst = await compilation.burst({ socket });
      await rejects(
        burst.mapMemory(1, memory),
        (e) => e instanceof NnapiError && e.status === "NOT_FOUND",
      );
      strictEqual((await burstGauges(server.url)).slots, 0);
      deepStrictEqual((await burst.compute([[1, 2], [3, 4]])).outputs[0].data, floats(4, 6));
    });
  });

  Deno.test(`a failed burst request rejects with its status; the burst keeps working (${socket})`, async () => {
    await withServer(async (_server, client) => {
      const compilation = await compileAdd(client, 2);
      const output = await client.createMemory({ size: 4 });
      await using burst = await compilation.burst({ socket });
      const failures = await Promise.allSettled([
        burst.compute([[1, 2, 3], [1, 2]]),
        burst.compute([[1, 2], null]),
        burst.compute([[1, 2], [1, 2]], { outputs: [{ slot: 9, offset: 0, length: 4 }] }),
      ]);
      await burst.mapMemory(9, output);
      const small = await burst.compute([[1, 2], [1, 2]], {
        outputs: [{ slot: 9, offset: 0, length: 4 }],
      }).then(() => undefined, (e) => e);
      const statuses = failures.map((f) =>
        f.status === "rejected" && f.reason instanceof NnapiError ? f.reason.status : f.status
      );
      deepStrictEqual(statuses, ["INVALID_ARGUMENT", "INVALID_ARGUMENT", "INVALID_ARGUMENT"]);
      ok(small instanceof NnapiError);
      strictEqual(small.status, "OUTPUT_INSUFFICIENT_SIZE");
      deepStrictEqual(small.outputShapes, [{ dimensions: [2], isSufficient: false }]);
      deepStrictEqual((await burst.compute([[1, 2], [3, 4]])).outputs[0].data, floats(4, 6));
      // Misuse of the SDK is caught before anything is sent.
      await rejects(burst.compute([[1, 2]]), RangeError);
      await rejects(burst.compute([[1, 2], [1, 2]], { deadlineMs: -1 }), RangeError);
    });
  });

  Deno.test(`Burst.compute queues beyond the window and resolves in call order (${socket})`, async () => {
    await withServer(async (_server, client) => {
      const compilation = await compileAdd(client, 1);
      await using burst = await compilation.burst({ socket });
      strictEqual(burst.maxInFlight, 2);
      const order: number[] = [];
      const all = Array.from({ length: 40 }, (_, i) =>
        burst.compute([[i], [1000]]).then((r) => {
          order.push(i);
          return r.outputs[0].data![0];
        }));
      ok(burst.inFlight <= 40);
      deepStrictEqual(await Promise.all(all), Array.from({ length: 40 }, (_, i) => i + 1000));
      deepStrictEqual(order, Array.from({ length: 40 }, (_, i) => i));
      strictEqual(burst.inFlight, 0);
    }, { burst: { maxInFlight: 2 } });
  });

  Deno.test(`Burst.computePipelined streams frames and delivers results in order (${socket})`, async () => {
    await withServer(async (_server, client) => {
      const compilation = await compileAdd(client, 2);
      await using burst = await compilation.burst({ socket });
      async function* frames(): AsyncGenerator<BurstInput[]> {
        for (let i = 0; i < 100; i++) yield [[i, -i], [1, 1]];
      }
      const seen: number[] = [];
      const count = await burst.computePipelined(frames(), async (result, index) => {
        // A slow consumer does not reorder results.
        if (index % 10 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
        deepStrictEqual(result.outputs[0].data, floats(index + 1, 1 - index));
        seen.push(index);
      });
      strictEqual(count, 100);
      deepStrictEqual(seen, Array.from({ length: 100 }, (_, i) => i));
      // A failure stops the stream and is thrown once the requests sent have settled.
      const broken = [[[1, 1], [1, 1]], [[1], [1, 1]], [[2, 2], [2, 2]]];
      const delivered: number[] = [];
      await rejects(
        burst.computePipelined(broken, (_r, i) => void delivered.push(i)),
        (e) => e instanceof NnapiError && e.status === "INVALID_ARGUMENT",
      );
      deepStrictEqual(delivered, [0]);
      strictEqual(burst.inFlight, 0);
    }, { burst: { maxInFlight: 4 } });
  });

  Deno.test(`closing a burst rejects what is pending and releases everything it held (${socket})`, async () => {
    await withServer(async (server, client) => {
      const compilation = await compileAdd(client, 2);
      const memory = await client.createMemory(bytesOf(1, 2));
      const burst = await compilation.burst({ socket });
      await burst.mapMemory(0, memory);
      await burst.mapMemory(1, memory);
      const gauges = await burstGauges(server.url);
      deepStrictEqual([gauges.active, gauges.slots], [1, 2]);
      const pending = Array.from(
        { length: 10 },
        () =>
          burst.compute([{ slot: 0, offset: 0, length: 8 }, [1, 1]]).then(() => "done", (e) => e),
      );
      const closed = await burst.close();
      strictEqual(closed.code, 1000);
      for (const outcome of await Promise.all(pending)) {
        ok(
          outcome === "done" ||
            (outcome instanceof NnapiError && outcome.status === "DEVICE_UNAVAILABLE"),
        );
      }
      await rejects(burst.compute([[1, 2], [1, 2]]), NnapiError);
      deepStrictEqual(await burstGaugesAtZero(server.url), { active: 0, slots: 0, inFlight: 0 });
      // The memory is the client's, not the burst's: it is still there.
      deepStrictEqual(await memory.read(), bytesOf(1, 2));
    });
  });

  Deno.test(`deleting the compilation ends its bursts with close code 4410 (${socket})`, async () => {
    await withServer(async (server, client) => {
      const compilation = await compileAdd(client, 2);
      const other = await compileAdd(client, 2);
      const memory = await client.createMemory(bytesOf(1, 2));
      const burst = await compilation.burst({ socket });
      const survivor = await other.burst({ socket });
      await burst.mapMemory(0, memory);
      await burst.compute([[1, 2], [3, 4]]);
      await compilation.delete();
      const closed = await burst.closed;
      strictEqual(closed.code, CLOSE_COMPILATION_DELETED);
      ok(closed.reason.length > 0);
      const error = await burst.compute([[1, 2], [3, 4]]).then(() => undefined, (e) => e);
      ok(error instanceof NnapiError);
      strictEqual(error.status, "NOT_FOUND");
      // Only that compilation's bursts end.
      deepStrictEqual((await survivor.compute([[1, 2], [3, 4]])).outputs[0].data, floats(4, 6));
      await survivor.close();
      deepStrictEqual(await burstGaugesAtZero(server.url), { active: 0, slots: 0, inFlight: 0 });
      await rejects(
        compilation.burst({ socket }),
        (e) => e instanceof NnapiError && e.status === "NOT_FOUND",
      );
    });
  });

  Deno.test(`a burst authenticates with the client's API key; other clients' ids are 404 (${socket})`, async () => {
    const apiKeys = new Map([["key-a", "alice"], ["key-b", "bob"]]);
    await withServer(async (server) => {
      const alice = new NnClient({ baseUrl: server.url, apiKey: "key-a" });
      const compilation = await compileAdd(alice, 2);
      const burst = await compilation.burst({ socket });
      deepStrictEqual((await burst.compute([[1, 2], [3, 4]])).outputs[0].data, floats(4, 6));
      await burst.close();
      const bob = new Transport({ baseUrl: server.url, apiKey: "key-b" });
      const stolen = new Compilation(bob, compilation.info, compilation.signature);
      await rejects(
        stolen.burst({ apiKey: "key-b", socket }),
        (e) => e instanceof NnapiError && e.status === "NOT_FOUND",
      );
      const anonymous = new Compilation(
        new Transport({ baseUrl: server.url }),
        compilation.info,
        compilation.signature,
      );
      await rejects(
        anonymous.burst({ socket }),
        (e) => e instanceof NnapiError && e.status === "UNAUTHORIZED",
      );
      const upgrade = await fetch(`${server.url}/v1/compilations/${compilation.id}/burst`, {
        headers: { authorization: "Bearer key-a" },
      });
      strictEqual(upgrade.status, 400);
      await upgrade.body?.cancel();
    }, { apiKeys });
  });

  Deno.test(`Burst frames of every WebSocket length encoding round-trip (${socket})`, async () => {
    await withServer(async (_server, client) => {
      // Frames of < 126 bytes, 16-bit and 64-bit lengths, around each boundary.
      for (const n of [1, 20, 16370, 16390, 100_000]) {
        const compilation = await compileAdd(client, n);
        await using burst = await compilation.burst({ socket });
        const a = Float32Array.from({ length: n }, (_, i) => i);
        const b = Float32Array.from({ length: n }, (_, i) => -2 * i);
        const results = await Promise.all([0, 1, 2].map(() => burst.compute([a, b])));
        for (const result of results) {
          const sum = result.outputs[0].data as Float32Array;
          strictEqual(sum.length, n);
          strictEqual(sum[n - 1], 1 - n);
          strictEqual(sum[n >> 1], 0 - (n >> 1));
        }
      }
    });
  });

  Deno.test(`Burst outputs are views of one result frame per request (${socket})`, async () => {
    await withServer(async (_server, client) => {
      const compilation = await compileAdd(client, 3);
      await using burst = await compilation.burst({ socket });
      const results: ExecutionResult[] = await Promise.all([
        burst.compute([[1, 2, 3], [0, 0, 0]]),
        burst.compute([[4, 5, 6], [0, 0, 0]]),
      ]);
      // Each result owns its data: a later request does not overwrite an earlier one's.
      deepStrictEqual(results.map((r) => Array.from(r.outputs[0].data!)), [[1, 2, 3], [4, 5, 6]]);
      ok(burst instanceof Burst);
    });
  });

  /** The fixture's JSON ADD model, registered over REST, runs the same through a burst. */
  Deno.test(`a burst runs a model registered by id (${socket})`, async () => {
    await withServer(async (server, client) => {
      const { body } = await server.request("POST", "/v1/models", addModel(3));
      const compilation = await client.compile(body.id as string);
      await using burst = await compilation.burst({ socket });
      const [rest, fast] = await Promise.all([
        compilation.compute([[1, 2, 3], [4, 5, 6]]),
        burst.compute([[1, 2, 3], [4, 5, 6]]),
      ]);
      deepStrictEqual(fast.outputs, rest.outputs);
    });
  });
}

for (const socket of SOCKETS) {
  Deno.test(`tensors longer than a burst frame are refused alone; slots carry them (${socket})`, async () => {
    await withServer(async (_server, client) => {
      const compilation = await compileAdd(client, 0, true);
      await using burst = await compilation.burst({ socket });
      await burst.ready();
      // Two inputs of 33.6 MB: an EXECUTE frame past 64 MiB, which would end the connection.
      const half = 8_400_000;
      const large = { data: new Float32Array(half), dimensions: [half] };
      await rejects(burst.compute([large, large]), (error: NnapiError) => {
        strictEqual(error.status, "INVALID_ARGUMENT");
        ok(/more than a burst frame carries \(67108864\)/.test(error.message), error.message);
        return true;
      });
      // Larger inputs from a slot: their 68 MB of outputs would take a RESULT frame past it too.
      const elements = 17_000_000;
      const bytes = elements * 4;
      const memory = await client.createMemory({ size: 2 * bytes });
      await memory.write(bytes - 8, bytesOf(1.5, 2.5));
      await burst.mapMemory(0, memory);
      const region = { slot: 0, offset: 0, length: bytes, dimensions: [elements] };
      await rejects(burst.compute([region, region]), (error: NnapiError) => {
        strictEqual(error.status, "INVALID_ARGUMENT");
        ok(/write them to memories/.test(error.message), error.message);
        return true;
      });
      // Written to the slot, they fit; small requests go on as before.
      const written = await burst.compute([region, region], {
        outputs: [{ slot: 0, offset: bytes, length: bytes }],
      });
      deepStrictEqual(written.outputs, [{ dimensions: [elements] }]);
      const tail = new Float32Array((await memory.read()).buffer, 2 * bytes - 8, 2);
      deepStrictEqual(tail, floats(3, 5));
      const small = await burst.compute([
        { data: [1, 2], dimensions: [2] },
        { data: [3, 4], dimensions: [2] },
      ]);
      deepStrictEqual(small.outputs[0].data, floats(4, 6));
    });
  });
}
