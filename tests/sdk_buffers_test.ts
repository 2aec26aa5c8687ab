/**
 * Driver-managed buffers (NNAPI memory domains) through the client SDK, against a real
 * server: `Compilation.allocateBuffer`, executions writing and reading a `DeviceBuffer`,
 * `copyFrom` / `copyTo` a `Memory`, `free`, and the service's refusals as `NnapiError`s.
 * Results are compared with plain JSON executions (`POST /v1/compilations/{id}/executions`
 * with `data` arguments, sent with fetch) and with the RNN cell computed here.
 */
import { rejectsWithStatus } from "./sdk_fixture.ts";
import { deepStrictEqual, ok, rejects, strictEqual, throws } from "node:assert/strict";
import { type Compilation, DeviceBuffer, NnClient } from "../client/mod.ts";
import { type TestServer, withTestServer } from "./server_fixture.ts";

const UNITS = 4;
const INPUT = 3;
/** NNAPI's activation code of tanh in recurrent operations. */
const TANH = 4;

/** Deterministic values in [-0.4, 0.4), exact in float32. */
function seeded(n: number, seed: number): number[] {
  let s = seed;
  return Array.from({ length: n }, () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return Math.fround(((s >>> 8) / 2 ** 24 - 0.5) * 0.8);
  });
}

const WEIGHTS = seeded(UNITS * INPUT, 1);
const RECURRENT = seeded(UNITS * UNITS, 2);
const BIAS = seeded(UNITS, 3);

/**
 * One RNN cell step built with the SDK: inputs (x [1,3], h_in [1,4]); outputs (h_out [1,4],
 * y [1,4]), h_out = y = tanh(W x + R h_in + b).
 */
function rnnCompilation(client: NnClient): Promise<Compilation> {
  const m = client.model();
  const f32 = (dimensions: number[]) => m.addOperand({ type: "TENSOR_FLOAT32", dimensions });
  const x = f32([1, INPUT]);
  const weights = f32([UNITS, INPUT]);
  const recurrent = f32([UNITS, UNITS]);
  const bias = f32([UNITS]);
  const hIn = f32([1, UNITS]);
  const activation = m.addOperand({ type: "INT32" });
  const hOut = f32([1, UNITS]);
  const y = f32([1, UNITS]);
  m.setOperandValue(weights, WEIGHTS);
  m.setOperandValue(recurrent, RECURRENT);
  m.setOperandValue(bias, BIAS);
  m.setOperandValue(activation, TANH);
  m.addOperation("RNN", [x, weights, recurrent, bias, hIn, activation], [hOut, y]);
  m.identifyInputsAndOutputs([x, hIn], [hOut, y]);
  return client.compile(m);
}

/** The RNN step computed here in float64: what the service's float32 result approximates. */
function rnnStep(x: readonly number[], h: readonly number[]): number[] {
  return Array.from({ length: UNITS }, (_, o) => {
    let acc = BIAS[o];
    for (let i = 0; i < INPUT; i++) acc += x[i] * WEIGHTS[o * INPUT + i];
    for (let j = 0; j < UNITS; j++) acc += h[j] * RECURRENT[o * UNITS + j];
    return Math.tanh(acc);
  });
}

function assertClose(actual: ArrayLike<number>, expected: readonly number[], what: string): void {
  strictEqual(actual.length, expected.length, what);
  for (let i = 0; i < expected.length; i++) {
    ok(
      Math.abs(actual[i] - expected[i]) <= 1e-5,
      `${what}[${i}]: ${actual[i]} is not within 1e-5 of ${expected[i]}`,
    );
  }
}

/**
 * The RNN step as a plain JSON execution, the state passed as data: the direct way, which
 * the buffer's chained executions must reproduce bit for bit. Returns [h_out, y].
 */
async function jsonStep(
  server: TestServer,
  compilation: string,
  x: readonly number[],
  h: readonly number[],
): Promise<[number[], number[]]> {
  const run = await server.request("POST", `/v1/compilations/${compilation}/executions`, {
    inputs: [{ data: x }, { data: h }],
  });
  strictEqual(run.status, 200, JSON.stringify(run.body));
  const [hOut, y] = run.body.outputs as { data: number[] }[];
  return [hOut.data, y.data];
}

function f32Bytes(values: readonly number[]): Uint8Array {
  return new Uint8Array(new Float32Array(values).buffer);
}

function f32Values(bytes: Uint8Array): number[] {
  return Array.from(new Float32Array(bytes.slice().buffer));
}

const STEPS = Array.from({ length: 6 }, (_, t) => seeded(INPUT, 100 + t));

Deno.test("an output-role buffer takes an execution's output; copyTo reads it as JSON computes it", async () => {
  await withTestServer({}, async (server) => {
    const client = new NnClient({ baseUrl: server.url });
    const compilation = await rnnCompilation(client);
    const buffer = await compilation.allocateBuffer({ roles: [{ io: "output", index: 0 }] });
    ok(buffer instanceof DeviceBuffer);
    strictEqual(typeof buffer.token, "string");
    deepStrictEqual(buffer.dimensions, [1, UNITS]);
    strictEqual(buffer.compilation, compilation.id);
    deepStrictEqual(buffer.roles, [{ io: "output", index: 0 }]);

    const x = STEPS[0];
    const h = seeded(UNITS, 7);
    const result = await compilation.execution()
      .setInput(0, new Float32Array(x))
      .setInput(1, h)
      .setOutputFromBuffer(0, buffer)
      .compute();
    // The buffered output comes back with its dimensions only; the other one inline.
    deepStrictEqual(result.outputs[0], { dimensions: [1, UNITS] });
    deepStrictEqual(result.outputShapes.map((s) => s.dimensions), [[1, UNITS], [1, UNITS]]);

    const [hOut, y] = await jsonStep(server, compilation.id, x, h);
    deepStrictEqual(Array.from(result.outputs[1].data!), y);
    const memory = await client.createMemory({ size: UNITS * 4 });
    await buffer.copyTo(memory);
    const copied = f32Values(await memory.read());
    deepStrictEqual(copied, hOut);
    assertClose(copied, rnnStep(x, h), "h_out");
    ok(copied.some((v) => v !== 0), "the output is not all zeros");

    // Allocated for output 0 only: as input 1 the service refuses it.
    const error = await rejectsWithStatus(
      compilation.execution().setInput(0, x).setInputFromBuffer(1, buffer).compute(),
      "INVALID_ARGUMENT",
      400,
    );
    ok(/not allocated for input 1/.test(error.message), error.message);
  });
});

Deno.test("a state buffer chains executions on the service and equals the JSON loop", async () => {
  await withTestServer({}, async (server) => {
    const client = new NnClient({ baseUrl: server.url });
    const compilation = await rnnCompilation(client);
    const state = await compilation.allocateBuffer({
      roles: [{ io: "output", index: 0 }, { io: "input", index: 1 }],
      dimensions: [1, UNITS],
    });
    deepStrictEqual(state.dimensions, [1, UNITS]);

    // The direct way: the state travels back and forth as JSON data.
    let h = new Array(UNITS).fill(0);
    let local = h;
    const ys: number[][] = [];
    for (const x of STEPS) {
      const [hOut, y] = await jsonStep(server, compilation.id, x, h);
      h = hOut;
      ys.push(y);
      local = rnnStep(x, local);
    }

    // Through the buffer: the first step writes it, every later one reads and rewrites it.
    for (const [t, x] of STEPS.entries()) {
      const execution = compilation.execution().setInput(0, x);
      if (t === 0) execution.setInput(1, new Array(UNITS).fill(0));
      else execution.setInputFromBuffer(1, state);
      const result = await execution.setOutputFromBuffer(0, state).compute();
      deepStrictEqual(result.outputs[0], { dimensions: [1, UNITS] });
      deepStrictEqual(Array.from(result.outputs[1].data!), ys[t], `y of step ${t}`);
    }

    const memory = await client.createMemory({ size: UNITS * 4 });
    await state.copyTo(memory);
    const final = f32Values(await memory.read());
    deepStrictEqual(final, h);
    assertClose(final, local, "final state");
    ok(final.some((v) => v !== 0), "the state moved");
  });
});

Deno.test("copyFrom fills a buffer from a memory that the next execution reads", async () => {
  await withTestServer({}, async (server) => {
    const client = new NnClient({ baseUrl: server.url });
    const compilation = await rnnCompilation(client);
    const state = await compilation.allocateBuffer({
      roles: [{ io: "input", index: 1 }, { io: "output", index: 0 }],
    });
    const initial = seeded(UNITS, 9);
    await state.copyFrom(await client.createMemory(f32Bytes(initial)));

    // copyFrom then copyTo gives the bytes back unchanged.
    const echo = await client.createMemory({ size: UNITS * 4 });
    await state.copyTo(echo);
    deepStrictEqual(f32Values(await echo.read()), initial);

    const x = STEPS[2];
    const result = await compilation.execution()
      .setInput(0, x)
      .setInputFromBuffer(1, state)
      .compute();
    const [hOut, y] = await jsonStep(server, compilation.id, x, initial);
    deepStrictEqual(Array.from(result.outputs[0].data!), hOut);
    deepStrictEqual(Array.from(result.outputs[1].data!), y);
    assertClose(result.outputs[1].data!, rnnStep(x, initial), "y");
  });
});

Deno.test("a freed buffer is NOT_FOUND; a memory of the wrong size and an unwritten buffer are INVALID_ARGUMENT", async () => {
  await withTestServer({}, async (server) => {
    const client = new NnClient({ baseUrl: server.url });
    const compilation = await rnnCompilation(client);
    const state = await compilation.allocateBuffer({
      roles: [{ io: "input", index: 1 }, { io: "output", index: 0 }],
    });
    const x = STEPS[0];

    const tooSmall = await client.createMemory({ size: UNITS * 4 - 4 });
    const wrongSize = await rejectsWithStatus(
      state.copyFrom(tooSmall),
      "INVALID_ARGUMENT",
      400,
    );
    ok(/has 12 bytes; buffer .* needs 16/.test(wrongSize.message), wrongSize.message);
    const unwritten = await rejectsWithStatus(
      compilation.execution().setInput(0, x).setInputFromBuffer(1, state).compute(),
      "INVALID_ARGUMENT",
      400,
    );
    ok(/before anything wrote it/.test(unwritten.message), unwritten.message);
    const memory = await client.createMemory({ size: UNITS * 4 });
    await rejectsWithStatus(state.copyTo(memory), "INVALID_ARGUMENT", 400);

    await state.free();
    await rejectsWithStatus(state.copyFrom(memory), "NOT_FOUND", 404);
    await rejectsWithStatus(state.copyTo(memory), "NOT_FOUND", 404);
    await rejectsWithStatus(
      compilation.execution().setInput(0, x).setInput(1, [0, 0, 0, 0])
        .setOutputFromBuffer(0, state).compute(),
      "NOT_FOUND",
      404,
    );
    await rejectsWithStatus(state.free(), "NOT_FOUND", 404);
  });
});

Deno.test("roles outside the model and a buffer of another client fail, locally or as NOT_FOUND", async () => {
  const apiKeys = new Map([["key-a", "alice"], ["key-b", "bob"]]);
  await withTestServer({ apiKeys }, async (server) => {
    let requests = 0;
    const alice = new NnClient({
      baseUrl: server.url,
      apiKey: "key-a",
      fetch: (input, init) => {
        requests++;
        return fetch(input, init);
      },
    });
    const compilation = await rnnCompilation(alice);
    requests = 0;
    await rejects(compilation.allocateBuffer({ roles: [] }), RangeError);
    await rejects(compilation.allocateBuffer({ roles: [{ io: "input", index: 2 }] }), /no input 2/);
    await rejects(compilation.allocateBuffer({ roles: [{ io: "output", index: -1 }] }), RangeError);
    strictEqual(requests, 0, "nothing was sent");
    const state = await compilation.allocateBuffer({ roles: [{ io: "output", index: 0 }] });
    throws(() => compilation.execution().setInputFromBuffer(2, state), RangeError);
    deepStrictEqual(
      compilation.execution().setInput(0, [1, 2, 3]).setInput(1, [0, 0, 0, 0])
        .setOutputFromBuffer(0, state, { dimensions: [1, UNITS] }).toJSON().outputs,
      [{ buffer: state.token, dimensions: [1, UNITS] }, {}],
    );

    // The service decides what dimensions and types fit the roles.
    const badDimensions = await rejectsWithStatus(
      compilation.allocateBuffer({ roles: [{ io: "output", index: 0 }], dimensions: [2, UNITS] }),
      "INVALID_ARGUMENT",
      400,
    );
    ok(/dimension 0/.test(badDimensions.message), badDimensions.message);

    const bob = new NnClient({ baseUrl: server.url, apiKey: "key-b" });
    const bobsCompilation = await rnnCompilation(bob);
    await rejectsWithStatus(
      bobsCompilation.execution().setInput(0, [1, 2, 3]).setInput(1, [0, 0, 0, 0])
        .setOutputFromBuffer(0, state).compute(),
      "NOT_FOUND",
      404,
    );
    // Deleting the compilation frees its buffers.
    await compilation.delete();
    await rejectsWithStatus(state.free(), "NOT_FOUND", 404);
  });
});
